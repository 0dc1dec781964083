"""`placer webhook`'s servers, on aiohttp: the admission endpoint over HTTPS, probes and metrics
over plain HTTP on a second port.

    HTTPS  POST /mutate-pods   AdmissionReview v1 in, AdmissionReview v1 out (admission.py)
    HTTP   GET  /healthz       200 while the process serves (liveness)
    HTTP   GET  /readyz        200 once the HTTPS listener is up, 503 while shutting down
    HTTP   GET  /metrics       Prometheus text: admissions by outcome, answer latency

Probes and metrics stay off the TLS port so the kubelet and Prometheus need no certificate. The
request body is capped (`max_body_bytes`; aiohttp's client_max_size): a larger one is answered 413
with an AdmissionReview error. SIGTERM stops accepting, lets answers in flight finish (up to
`shutdown_timeout_s`), then exits. Called by placer/commands/webhook.py and the tests.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram
from prometheus_client.exposition import generate_latest

from placer.model.errors import InputError
from plugins.webhook.admission import MalformedReview, answer_review, error_review
from plugins.webhook.tls import ServingCertificate

__all__ = ["MUTATE_PATH", "WebhookMetrics", "WebhookOptions", "WebhookServer", "serve"]

log = logging.getLogger(__name__)

MUTATE_PATH = "/mutate-pods"
JSON = "application/json"


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
    max_body_bytes: int = 8 * 1024 * 1024
    """A pod is at most ~1.5 MiB in etcd; its review (plus escaping) stays well below this."""
    shutdown_timeout_s: float = 10.0


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
            "Time to read, decide and answer one admission review",
            buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0),
            registry=self.registry,
        )


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    return socket.create_server((host, port), family=family, reuse_port=False)


class WebhookServer:
    """Both listeners; `start()` binds them (port 0 picks a free one), `stop()` drains them."""

    def __init__(self, options: WebhookOptions, metrics: WebhookMetrics | None = None) -> None:
        self.options = options
        self.metrics = metrics or WebhookMetrics()
        self.certificate = ServingCertificate(options.cert_file, options.key_file)
        self.ready = False
        self.port = 0
        self.metrics_port = 0
        self._runners: list[web.AppRunner] = []
        self._reloader: asyncio.Task[None] | None = None

    async def _mutate(self, request: web.Request) -> web.Response:
        started = time.perf_counter()
        status = 200
        try:
            body = await request.read()
            payload, answer = answer_review(body)
            outcome: str = answer.outcome
        except web.HTTPRequestEntityTooLarge:
            status, outcome = 413, "malformed"
            payload = error_review(
                f"request body over {self.options.max_body_bytes} bytes", code=413
            )
        except MalformedReview as e:
            status, outcome = 400, "malformed"
            payload = error_review(str(e), uid=e.uid)
        except Exception:  # never a crash: the API server gets an answer and a log line says why
            log.exception("admission review failed")
            status, outcome = 500, "error"
            payload = error_review("internal error", code=500)
        self.metrics.admissions.labels(outcome=outcome).inc()
        self.metrics.latency.observe(time.perf_counter() - started)
        log.debug("admission: %s (HTTP %d)", outcome, status)
        return web.Response(body=payload, status=status, content_type=JSON)

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

    def webhook_app(self) -> web.Application:
        app = web.Application(client_max_size=self.options.max_body_bytes)
        app.router.add_post(MUTATE_PATH, self._mutate)
        return app

    def probe_app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        app.router.add_get("/metrics", self._metrics)
        return app

    async def _site(self, app: web.Application, host: str, port: int, *, tls: bool) -> int:
        runner = web.AppRunner(
            app, shutdown_timeout=self.options.shutdown_timeout_s, access_log=None
        )
        await runner.setup()
        self._runners.append(runner)
        try:
            sock = _listen(host, port)
        except OSError as e:
            await runner.cleanup()
            raise InputError(
                f"cannot listen on {host}:{port}: {e.strerror or e}",
                field="--port" if tls else "--metrics-port",
                code="usage",
            ) from None
        bound = int(sock.getsockname()[1])
        site = web.SockSite(runner, sock, ssl_context=self.certificate.context if tls else None)
        await site.start()
        return bound

    async def _reload_loop(self) -> None:
        while True:
            await asyncio.sleep(self.options.reload_interval_s)
            self.certificate.reload_if_changed()

    async def start(self) -> None:
        opts = self.options
        self.port = await self._site(self.webhook_app(), opts.host, opts.port, tls=True)
        if opts.metrics_port is not None:
            self.metrics_port = await self._site(
                self.probe_app(), opts.metrics_host, opts.metrics_port, tls=False
            )
        if opts.reload_interval_s > 0:
            self._reloader = asyncio.create_task(self._reload_loop())
        self.ready = True

    async def stop(self) -> None:
        """Not ready, stop accepting, finish the answers in flight, close."""
        self.ready = False
        if self._reloader is not None:
            self._reloader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reloader
        for runner in reversed(self._runners):
            await runner.cleanup()
        self._runners.clear()


async def _serve_until_signal(server: WebhookServer, announce: Callable[[str], None]) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await server.start()
    opts = server.options
    line = f"placer webhook: serving https://{opts.host}:{server.port}{MUTATE_PATH}"
    if server.metrics_port:
        line += f", probes and /metrics on http://{opts.metrics_host}:{server.metrics_port}"
    announce(line)
    await stop.wait()
    log.info("stopping: draining answers in flight")
    await server.stop()


def serve(options: WebhookOptions, announce: Callable[[str], None]) -> None:
    """Run until SIGTERM or SIGINT. Bad TLS files raise `InputError` before anything listens, a
    port that cannot be bound raises it too."""
    server = WebhookServer(options)
    asyncio.run(_serve_until_signal(server, announce))
