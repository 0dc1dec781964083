"""The socket side: an application on a TCP port (TLS optional) with a connection cap, JSON
answers for invalid HTTP, a graceful drain, served from a thread with its own event loop.

See the package docstring (`placer.serving`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
import ssl
import threading
from collections.abc import Collection
from http import HTTPStatus
from pathlib import Path

from aiohttp import web
from aiohttp.web_protocol import RequestHandler
from aiohttp.web_request import BaseRequest

from placer.model.errors import InputError
from placer.model.read.files import check_input_file
from placer.serving.app import (
    ADMISSION_KEY,
    LIMITS_KEY,
    ErrorBody,
    ServingLimits,
    json_error_body,
)

__all__ = ["MAX_PEM_BYTES", "HttpServer", "server_ssl_context"]

log = logging.getLogger(__name__)


MAX_PEM_BYTES = 1 << 20
"""A certificate chain or key file is a few KB; a bigger one is not what was meant."""


def server_ssl_context(
    cert_file: str | Path,
    key_file: str | Path,
    *,
    cert_field: str = "--tls-cert-file",
    key_field: str = "--tls-key-file",
) -> ssl.SSLContext:
    """A server-side TLS context (TLS 1.2 or newer) from PEM certificate chain and key files.

    Both files are checked first (`placer.model.read.files`: regular files of at most
    `MAX_PEM_BYTES`, so a FIFO put in a certificate's place cannot block the caller); any problem
    is one InputError naming the flag."""
    check_input_file(cert_file, field=cert_field, limit=MAX_PEM_BYTES)
    check_input_file(key_file, field=key_field, limit=MAX_PEM_BYTES)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(str(cert_file), str(key_file))
    except (ssl.SSLError, OSError) as e:
        raise InputError(
            f"{cert_file} and {key_file} are not a PEM certificate and its private key "
            f"({type(e).__name__}: {e})",
            field=f"{cert_field}/{key_field}",
            code="tls",
        ) from None
    return context


class _Refusal(asyncio.Protocol):
    """What a connection past `max_connections` gets: a 503 and a close."""

    def __init__(self, payload: bytes) -> None:
        self.payload = payload

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.WriteTransport)
        transport.write(self.payload)
        transport.close()


class _JsonErrorHandler(RequestHandler):
    """aiohttp's connection handler, with its own error answers (a request that is not valid HTTP,
    a header too long: refused before any middleware runs) in the server's JSON shape too."""

    error_body: ErrorBody = staticmethod(json_error_body)

    def handle_error(
        self,
        request: BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        if status >= 500:
            log.error("error handling a request from %s", request.remote, exc_info=exc)
        else:  # a client's mistake, logged quietly: anyone can send these
            log.debug("refused a request from %s: %s", request.remote, message)
        if request.writer.output_size > 0:
            raise ConnectionError("the answer has started; no error answer can follow")
        text = message if status < 500 and message else HTTPStatus(status).phrase
        answer = web.Response(
            status=status,
            body=type(self).error_body(status, " ".join(text.split())),
            content_type="application/json",
        )
        answer.force_close()
        return answer


def _handler_class(error_body: ErrorBody) -> type[_JsonErrorHandler]:
    return type("JsonErrorHandler", (_JsonErrorHandler,), {"error_body": staticmethod(error_body)})


class _CappedSite(web.BaseSite):
    """aiohttp's socket site with a connection cap in front of its protocol factory (as
    `web.SockSite` does, plus the cap: aiohttp has no connection limit of its own)."""

    __slots__ = ("_cap", "_handler", "_refusal", "_sock")

    def __init__(
        self,
        runner: web.BaseRunner,
        sock: socket.socket,
        *,
        ssl_context: ssl.SSLContext | None,
        max_connections: int,
        error_body: ErrorBody,
    ) -> None:
        super().__init__(runner, ssl_context=ssl_context, backlog=128)
        self._sock = sock
        self._cap = max_connections
        self._refusal = _refusal_bytes(error_body)
        self._handler = _handler_class(error_body)

    @property
    def name(self) -> str:
        host, port = self._sock.getsockname()[:2]
        return f"{'https' if self._ssl_context else 'http'}://{host}:{port}"

    async def start(self) -> None:
        await super().start()
        server = self._runner.server
        assert server is not None
        cap, refusal, handler = self._cap, self._refusal, self._handler
        loop = asyncio.get_running_loop()
        # `Server.__call__` builds aiohttp's own handler from the runner's settings (`_kwargs`,
        # the only private name used); the same settings build ours.
        settings = server._kwargs

        def protocol() -> asyncio.BaseProtocol:
            if len(server.connections) >= cap:
                return _Refusal(refusal)
            return handler(server, loop=loop, **settings)

        self._server = await loop.create_server(
            protocol, sock=self._sock, ssl=self._ssl_context, backlog=self._backlog
        )


def _refusal_bytes(error_body: ErrorBody) -> bytes:
    body = error_body(503, "too many connections; retry")
    head = (
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n"
    )
    return head.encode() + body


class HttpServer:
    """An application on a TCP port, served from a thread with its own event loop.

    The port is bound in the constructor (so `port=0` has its number at once and a busy port
    fails here, as an `OSError`); serving starts with `start()`."""

    def __init__(
        self,
        app: web.Application,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        limits: ServingLimits | None = None,
        ssl_context: ssl.SSLContext | None = None,
        error_body: ErrorBody = json_error_body,
        name: str = "placer-http",
    ) -> None:
        self.app = app
        self.limits = limits or app.get(LIMITS_KEY) or ServingLimits()
        self.ssl_context = ssl_context
        self._error_body = error_body
        self._name = name
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._sock = socket.create_server((host, port), family=family, backlog=128)
        self._sock.setblocking(False)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._failure: BaseException | None = None

    @property
    def port(self) -> int:
        return int(self._sock.getsockname()[1])

    @property
    def url(self) -> str:
        host = str(self._sock.getsockname()[0])
        if host in ("0.0.0.0", "::", ""):
            host = "127.0.0.1"
        elif ":" in host:
            host = f"[{host}]"
        return f"{'https' if self.ssl_context else 'http'}://{host}:{self.port}"

    @property
    def listening(self) -> str:
        """Where it listens, as bound (`http://0.0.0.0:8888` when on every address): for logs."""
        host = str(self._sock.getsockname()[0])
        shown = f"[{host}]" if ":" in host else host
        return f"{'https' if self.ssl_context else 'http'}://{shown}:{self.port}"

    def start(self) -> HttpServer:
        """Serve from a background thread; returns once the server accepts connections."""
        self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._failure is not None:
            raise self._failure
        return self

    def _run(self) -> None:
        # asyncio.Runner cancels whatever is still pending (connections that never sent a
        # request) before closing the loop, as asyncio.run does.
        with asyncio.Runner() as runner:
            self._loop = runner.get_loop()
            try:
                runner.run(self._serve())
            except BaseException as e:  # reported to start() if it happens before serving
                self._failure = e
                log.exception("%s stopped with an error", self._name)
            finally:
                self._ready.set()

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        runner = web.AppRunner(
            self.app,
            access_log=None,
            keepalive_timeout=self.limits.idle_timeout_s,
            shutdown_timeout=self.limits.shutdown_timeout_s,
        )
        await runner.setup()
        try:
            site = _CappedSite(
                runner,
                self._sock,
                ssl_context=self.ssl_context,
                max_connections=self.limits.max_connections,
                error_body=self._error_body,
            )
            await site.start()
            self._ready.set()
            await self._stop.wait()
            # Drain: stop accepting, then wait for the admitted requests, bodies still arriving
            # included (aiohttp's own shutdown stops reading from every connection at once, so
            # a body half received would never complete), then close what is left.
            await site.stop()
            admission = self.app.get(ADMISSION_KEY)
            if admission is not None and not await admission.drained(
                self.limits.shutdown_timeout_s
            ):
                log.warning("%s: requests still in flight after the drain timeout", self._name)
        finally:
            await runner.cleanup()

    def stop(self) -> None:
        """Drain and stop (idempotent); returns when the serving thread has ended."""
        thread, loop, stop = self._thread, self._loop, self._stop
        if thread is not None and loop is not None and stop is not None:
            with contextlib.suppress(RuntimeError):  # the loop already ended
                loop.call_soon_threadsafe(stop.set)
            thread.join(timeout=self.limits.shutdown_timeout_s + 5)
        self._thread = None
        self._sock.close()

    def serve_until_signalled(
        self, signals: Collection[int] = (signal.SIGTERM, signal.SIGINT)
    ) -> int:
        """Serve until one of `signals` arrives, then drain and return the signal number. Call
        from the main thread (it installs the signal handlers, and restores the old ones)."""
        got: list[int] = []
        wake = threading.Event()

        def handler(signum: int, _frame: object) -> None:
            got.append(signum)
            wake.set()

        previous = {s: signal.signal(s, handler) for s in signals}
        try:
            if self._thread is None:
                self.start()
            while not wake.wait(0.5):
                if self._thread is not None and not self._thread.is_alive():
                    break  # the loop died: nothing left to serve
            log.info("%s: draining after signal %s", self._name, got[0] if got else "none")
        finally:
            self.stop()
            for s, old in previous.items():
                signal.signal(s, old)
        return got[0] if got else 0

    def __enter__(self) -> HttpServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
