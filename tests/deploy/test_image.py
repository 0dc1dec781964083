"""The image's build recipe and the entrypoint it runs, without a container builder.

No container builder or base image can be had where these tests run, so the test does what the
Dockerfile's builder and runtime stages do, with this interpreter instead of the base image: copy
exactly the paths the builder stage copies, build the wheel from them, install it into a fresh
virtual environment, and run `placer` from there, away from the source tree. The environment sees
the dependencies already installed for the interpreter running the tests (`fresh_environment`),
whether that is a virtual environment or not: resolving them is pip's job, the test checks that
the wheel carries placer, its plugins, its entry point and its declared needs.
"""

from __future__ import annotations

import os
import shlex
import shutil
import site
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"


def stages() -> list[list[str]]:
    """The Dockerfile's instructions (continuation lines joined, comments dropped) per stage."""
    lines: list[str] = []
    pending = ""
    for raw in DOCKERFILE.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        lines.append(pending + line)
        pending = ""
    result: list[list[str]] = []
    for line in lines:
        if line.startswith("FROM "):
            result.append([])
        if result:
            result[-1].append(line)
    return result


def builder_copies() -> list[tuple[list[str], str]]:
    [builder, _runtime] = stages()
    copies = []
    for line in builder:
        if line.startswith("COPY ") and "--from" not in line:
            *sources, dest = shlex.split(line)[1:]
            copies.append((sources, dest))
    return copies


def test_dockerfile_builds_in_a_stage_and_runs_placer_as_non_root() -> None:
    [builder, runtime] = stages()
    assert builder[0].endswith(" AS builder") and "${PYTHON_IMAGE}" in builder[0]
    assert runtime[0] == "FROM ${PYTHON_IMAGE}"
    arg = next(
        line for line in DOCKERFILE.read_text().splitlines() if line.startswith("ARG PYTHON_IMAGE")
    )
    assert arg.split("=", 1)[1].startswith("python:3.") and "-slim" in arg
    assert any(line.startswith("RUN pip wheel") for line in builder)
    assert any("pip install --no-index --find-links /wheels placer" in line for line in runtime)
    [user] = [line.split()[1] for line in runtime if line.startswith("USER ")]
    uid, gid = (int(part) for part in user.split(":"))
    assert uid == 65532 and gid == 65532  # runAsUser in deploy/*
    assert runtime[-2:] == ['ENTRYPOINT ["placer"]', 'CMD ["--help"]']
    ignored = (ROOT / ".dockerignore").read_text().splitlines()
    for sources, _ in builder_copies():
        for source in sources:
            assert (ROOT / source).exists(), source
            assert f"!{source}" in ignored or f"!{source}/" in ignored, source


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built once from what the builder stage copies (never from the work tree)."""
    src = tmp_path_factory.mktemp("src")
    for sources, dest in builder_copies():
        target = src / dest
        for source in sources:
            path = ROOT / source
            if path.is_dir():
                shutil.copytree(
                    path, src / dest.rstrip("/") if dest != "./" else src / source,
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
                )  # fmt: skip
            else:
                shutil.copy(path, target if dest != "./" else src / source)
    out = tmp_path_factory.mktemp("wheels")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
         "--wheel-dir", str(out), str(src)],
        check=True, capture_output=True, cwd=src,
    )  # fmt: skip
    [built] = out.glob("placer-*.whl")
    return built


def test_wheel_carries_the_packages_entry_point_and_dependencies(wheel: Path) -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert wheel.name.startswith(f"placer-{project['version']}-")
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        meta_dir = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
        metadata = zf.read(f"{meta_dir}/METADATA").decode()
        entry_points = zf.read(f"{meta_dir}/entry_points.txt").decode()
    for module in ("placer/cli.py", "placer/py.typed", "plugins/webhook/server.py",
                   "plugins/extender/server.py", "placer/commands/webhook.py"):  # fmt: skip
        assert module in names, module
    assert not any(n.startswith("tests/") for n in names)
    assert "placer = placer.cli:run" in entry_points
    requires = {line.split(":", 1)[1].strip() for line in metadata.splitlines()
                if line.startswith("Requires-Dist:") and "extra ==" not in line}  # fmt: skip
    assert requires == set(project["dependencies"])


def installed_site_dirs() -> list[str]:
    """Where the distributions this interpreter imports are installed: its site-packages (a
    virtual environment's own, and its base's when it sees those) and the user site if enabled."""
    dirs = [
        *site.getsitepackages(),
        *([site.getusersitepackages()] if site.ENABLE_USER_SITE else []),
    ]
    return [d for d in dict.fromkeys(dirs) if Path(d).is_dir()]


def fresh_environment(venv: Path, env: dict[str, str]) -> Path:
    """An empty virtual environment (its interpreter returned) that sees the distributions this
    interpreter has installed, the dependencies among them.

    `--system-site-packages` would show the base interpreter's only, which may lack them when the
    tests run inside a virtual environment. The directories are listed in a `.pth` file as plain
    paths, so their own `.pth` hooks stay off: an editable placer installed there cannot be
    imported in place of the wheel's."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True, capture_output=True, text=True, env=env,
    ).stdout.strip()  # fmt: skip
    lines = "".join(f"{d}\n" for d in installed_site_dirs())
    (Path(purelib) / "_installed_dependencies.pth").write_text(lines)
    return python


def test_installed_entrypoint_runs_from_a_fresh_environment(wheel: Path, tmp_path: Path) -> None:
    # Without PYTHONPATH, so the work tree is not on the path, neither for pip (a placer.egg-info
    # there, left by an editable install, would count as placer already installed) nor for placer.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    venv = tmp_path / "venv"
    python = fresh_environment(venv, env)
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps",
         "--no-index", "--quiet", str(wheel)],
        check=True, capture_output=True, env=env,
    )  # fmt: skip

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(args, capture_output=True, text=True, env=env, cwd=tmp_path)

    probe = (
        "import placer, plugins.webhook; from placer.cli import build_parser, placer_version; "
        "print(placer.__file__); print(placer_version()); print(build_parser().format_help())"
    )
    where = run(str(python), "-c", probe)
    assert where.returncode == 0, where.stderr
    path, version, top = where.stdout.split("\n", 2)
    assert Path(path).is_relative_to(venv)  # the wheel's copy, not the work tree's
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert version == project["version"]  # what `placer --version` prints in the image
    assert "webhook" in top and "controller" in top
    # The console script the image's ENTRYPOINT runs: usage errors are one line, exit 2.
    missing = run(str(venv / "bin" / "placer"), "webhook")
    assert missing.returncode == 2
    assert "the following arguments are required: --tls-cert-file" in missing.stderr
