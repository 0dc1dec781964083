# placer's image: `placer` as entrypoint, run as a non-root user; one image for every component
# (controller, extender, webhook: the Deployment's args pick the subcommand).
#
#   docker build -t ghcr.io/placer-dev/placer:0.1.0 .
#
# The tag must match `version` in pyproject.toml and the image in deploy/*/ (a test checks both).

ARG PYTHON_IMAGE=python:3.12-slim-bookworm

# Builder: the wheel of this repository plus wheels of every dependency, so the runtime stage
# installs offline from /wheels and carries no build tools or sources.
FROM ${PYTHON_IMAGE} AS builder
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY placer ./placer
COPY plugins ./plugins
COPY benchmarks ./benchmarks
RUN pip wheel --wheel-dir /wheels .

FROM ${PYTHON_IMAGE}
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
RUN --mount=type=bind,from=builder,source=/wheels,target=/wheels \
    pip install --no-index --find-links /wheels placer \
    && groupadd --gid 65532 placer \
    && useradd --uid 65532 --gid 65532 --no-create-home --shell /usr/sbin/nologin placer
# Numeric, so `runAsNonRoot: true` can verify it without reading /etc/passwd.
USER 65532:65532
WORKDIR /tmp
ENTRYPOINT ["placer"]
CMD ["--help"]
