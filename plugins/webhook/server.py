"""`placer webhook`'s servers: the admission endpoint over HTTPS, probes and metrics over plain
HTTP on a second port, both on placer's shared serving plumbing (`placer.serving`, aiohttp).

    HTTPS  POST /mutate-pods   AdmissionReview v1 in, AdmissionReview v1 out (admission.py)
    HTTP   GET  /healthz       200 while the process serves (liveness)
    HTTP   GET  /readyz        200 while the HTTPS listener serves, 503 once it stops
    HTTP   GET  /metrics       Prometheus text: admissions by outcome, answer latency

Probes and metrics stay off the TLS port so the kubelet and Prometheus need no certificate.
`placer.serving` brings the body limit, bounded in-flight work and connections, the drain on
SIGTERM; every refusal it makes on the HTTPS port (413, 408, 503, 404, ...) is written as an
AdmissionReview error, so the API server always reads an answer it understands. The serving
certificate is checked for renewal every `reload_interval_s` (tls.py). Called by
placer/commands/webhook.py and the tests.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram
from prometheus_client.exposition import generate_latest

from placer.model.errors import InputError
from placer.serving import HttpServer, ServingLimits, json_error_body, make_application
from plugins.webhook.admission import MalformedReview, answer_review, error_review
from plugins.webhook.tls import ServingCertificate

__all__ = ["MUTATE_PATH", "WebhookMetrics", "WebhookOptions", "WebhookServer", "serve"]

log = logging.getLogger(__name__)

MUTATE_PATH = "/mutate-pods"
JSON = "application/json"
PROBE_PATHS = ("/healthz", "/readyz", "/metrics")


def _default_limits() -> ServingLimits:
    # A pod is at most ~1.5 MiB in etcd; its review (plus escaping) stays well below 8 MiB.
    # Answers take about a millisecond: 32 at once is plenty (the next gets a 503 and a retry).
    return ServingLimits(max_body_bytes=8 * 1024 * 1024, shutdown_timeout_s=10.0)


@dataclass(frozen=True)
class WebhookOptions:
    cert_file: Path
    key_file: Path
    host: str = "0.0.0.0"
    port: int = 9443
    metrics_host: str = "0.0.0.0"
    metrics_port: int | None = 8080
    """None: no probe/metrics listener (0 binds a free port, like `port`)."""
    reload_interval_s: float = 60.0
    """How often the certificate files are checked for renewal; 0: never."""
    limits: ServingLimits = field(default_factory=_default_limits)


class WebhookMetrics:
    """The webhook's Prometheus metrics, in their own registry (tests make several servers)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.admissions = Counter(
            "placer_webhook_admissions",
            "Admission reviews answered, by outcome (gated, already-gated, skipped..., malformed)",
            ["outcome"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "placer_webhook_admission_seconds",
            "Time to decide and answer one admission review (body already read)",
            buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0),
            registry=self.registry,
        )


def _review_error_body(status: int, message: str) -> bytes:
    """`placer.serving`'s error answers, as AdmissionReviews refusing the request."""
    return error_review(message, code=status)


class WebhookServer:
    """Both listeners, bound in the constructor (port 0 picks a free one; a busy port or bad TLS
    files raise `InputError` here); `start()` serves them from their threads, `stop()` drains."""

    def __init__(self, options: WebhookOptions, metrics: WebhookMetrics | None = None) -> None:
        self.options = options
        self.metrics = metrics or WebhookMetrics()
        self.certificate = ServingCertificate(options.cert_file, options.key_file)
        self.https = self._bind(self._webhook_app(), options.host, options.port, tls=True)
        self.probes: HttpServer | None = None
        if options.metrics_port is not None:
            try:
                self.probes = self._bind(
                    self._probe_app(), options.metrics_host, options.metrics_port, tls=False
                )
            except InputError:
                self.https.stop()  # closes its socket
                raise
        self.ready = False

    @property
    def port(self) -> int:
        return self.https.port

    @property
    def metrics_port(self) -> int:
        return self.probes.port if self.probes is not None else 0

    def _bind(self, app: web.Application, host: str, port: int, *, tls: bool) -> HttpServer:
        try:
            return HttpServer(
                app,
                host,
                port,
                limits=self.options.limits,
                ssl_context=self.certificate.context if tls else None,
                error_body=_review_error_body if tls else json_error_body,
                name="placer-webhook" if tls else "placer-webhook-probes",
            )
        except OSError as e:
            raise InputError(
                f"cannot listen on {host}:{port}: {e.strerror or e}",
                field="--port" if tls else "--metrics-port",
                code="usage",
            ) from None

    async def _mutate(self, request: web.Request) -> web.Response:
        body = await request.read()  # already read within the limits by placer.serving
        started = time.perf_counter()
        status = 200
        try:
            payload, answer = answer_review(body)
            outcome: str = answer.outcome
        except MalformedReview as e:
            status, outcome = 400, "malformed"
            payload = error_review(str(e), uid=e.uid)
        self.metrics.admissions.labels(outcome=outcome).inc()
        self.metrics.latency.observe(time.perf_counter() - started)
        log.debug("admission: %s (HTTP %d)", outcome, status)
        return web.Response(body=payload, status=status, content_type=JSON)

    async def _reload_certificate(self, _: web.Application) -> AsyncIterator[None]:
        """While the HTTPS application runs: check the certificate files now and then."""

        async def loop() -> None:
            while True:
                await asyncio.sleep(self.options.reload_interval_s)
                # off the event loop: a read that hangs (a FIFO swapped in after the checks, a
                # stuck mount) then stalls this task only, never the answers
                try:
                    await asyncio.to_thread(self.certificate.reload_if_changed)
                except Exception:  # keep checking: the next renewal may load
                    log.exception("checking the serving certificate for renewal failed")

        task = asyncio.create_task(loop()) if self.options.reload_interval_s > 0 else None
        yield
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def _webhook_app(self) -> web.Application:
        app = make_application(
            [web.post(MUTATE_PATH, self._mutate)],
            limits=self.options.limits,
            error_body=_review_error_body,
            exempt=(),
        )
        app.cleanup_ctx.append(self._reload_certificate)
        return app

    async def _healthz(self, _: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def _readyz(self, _: web.Request) -> web.Response:
        if self.ready:
            return web.Response(text="ok\n")
        return web.Response(text="not ready\n", status=503)

    async def _metrics(self, _: web.Request) -> web.Response:
        return web.Response(
            body=generate_latest(self.metrics.registry),
            headers={"Content-Type": CONTENT_TYPE_LATEST},
        )

    def _probe_app(self) -> web.Application:
        return make_application(
            [
                web.get("/healthz", self._healthz),
                web.get("/readyz", self._readyz),
                web.get("/metrics", self._metrics),
            ],
            limits=self.options.limits,
            exempt=PROBE_PATHS,
        )

    def start(self) -> WebhookServer:
        if self.probes is not None:
            self.probes.start()
        self.https.start()
        self.ready = True
        return self

    def stop(self) -> None:
        """Not ready, drain the HTTPS answers in flight, then stop the probes (idempotent)."""
        self.ready = False
        self.https.stop()
        if self.probes is not None:
            self.probes.stop()

    def serve_until_signalled(self) -> None:
        """Serve until SIGTERM or SIGINT, then drain and stop both listeners."""
        try:
            if self.probes is not None:
                self.probes.start()
            self.ready = True
            self.https.serve_until_signalled()
        finally:
            self.stop()

    def __enter__(self) -> WebhookServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def serve(options: WebhookOptions, announce: Callable[[str], None]) -> None:
    """Run until SIGTERM or SIGINT. Bad TLS files or a port that cannot be bound raise
    `InputError` before anything serves."""
    server = WebhookServer(options)
    line = f"placer webhook: serving https://{options.host}:{server.port}{MUTATE_PATH}"
    if server.probes is not None:
        line += f", probes and /metrics on http://{options.metrics_host}:{server.metrics_port}"
    announce(line)
    server.serve_until_signalled()
