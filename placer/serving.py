"""HTTP serving plumbing for placer's servers (the scheduler extender, the admission webhook).

Both face a client they do not control (kube-scheduler, the API server) and anyone else who can
reach the port, so both need the same guards. They live here once, on aiohttp:

- **Body limit** (`ServingLimits.max_body_bytes`): a declared `Content-Length` over it is refused
  with 413 before a byte is read; a chunked or compressed body is cut off at the limit (aiohttp's
  `client_max_size`, checked on the decoded bytes), also 413.
- **Bounded in-flight work**: at most `max_in_flight` requests, holding at most
  `max_in_flight_bytes` of bodies together (a chunked or compressed body counts as the full limit),
  are admitted at once; the next gets 503 at once instead of queueing. Probe paths (`exempt`) are
  never counted, so `/healthz` answers whatever the load. With these two bounds the memory a burst
  can pin is at most `max_in_flight_bytes` times what the handler builds per body byte.
- **Bounded connections**: past `max_connections` open connections a new one gets a 503 and is
  closed (the count can overshoot by one accept batch, at most the listen backlog). A connection
  must send a complete request head within `idle_timeout_s` of opening or of its last answer
  (aiohttp's keep-alive timer), and a body within `body_timeout_s` (else 408).
- **JSON errors for every status the application answers**: router misses (404, 405), limits
  (411, 413, 408, 503) and handler exceptions (500) all go through one middleware that asks the
  caller's `error_body(status, message)` for the payload; so do aiohttp's own refusals of
  requests that are not valid HTTP, which come before any middleware (a JSON 400).
- **Graceful stop**: `HttpServer.stop()` closes the listening socket, lets admitted requests
  finish, bodies still arriving included (up to `shutdown_timeout_s`), closes idle keep-alive
  connections, and returns;
  `serve_until_signalled()` does that on SIGTERM or SIGINT, for a clean exit 0.
- **TLS**: `server_ssl_context(cert, key)`.

The server runs its event loop in a thread of its own, so a synchronous caller (the CLI, the
controller embedding the extender, tests) just calls `start()` and `stop()`. Handlers that compute
rather than wait run in a small thread pool (`run_blocking`), so the loop keeps answering probes
while a large request is decided. This module knows no placer types: it is plumbing.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import logging
import signal
import socket
import ssl
import threading
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass
from http import HTTPStatus
from pathlib import Path
from typing import Any, TypeVar

from aiohttp import web
from aiohttp.web_protocol import RequestHandler
from aiohttp.web_request import BaseRequest

__all__ = [
    "ErrorBody",
    "HttpServer",
    "ServingLimits",
    "json_error_body",
    "make_application",
    "run_blocking",
    "server_ssl_context",
]

log = logging.getLogger(__name__)

T = TypeVar("T")

ErrorBody = Callable[[int, str], bytes]
"""(HTTP status, one-line message) -> the JSON body a client of this server understands."""

MIB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class ServingLimits:
    """What one server process may be made to hold. Defaults suit a 2 GiB container whose handler
    builds at most about 25 bytes per body byte: 32 MiB in flight, under 1 GiB at worst."""

    max_body_bytes: int = 8 * MIB
    max_in_flight: int = 32
    """Requests admitted at once (probes not counted)."""
    max_in_flight_bytes: int = 32 * MIB
    """Body bytes of the admitted requests together."""
    max_connections: int = 1024
    body_timeout_s: float = 10.0
    idle_timeout_s: float = 60.0
    """A connection must send a request head this soon after opening or after its last answer."""
    shutdown_timeout_s: float = 20.0
    workers: int = 4
    """Threads for `run_blocking` (computation off the event loop)."""

    def __post_init__(self) -> None:
        for name in ("max_body_bytes", "max_in_flight", "max_connections", "workers"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        if self.max_in_flight_bytes < self.max_body_bytes:
            raise ValueError("max_in_flight_bytes must be at least max_body_bytes")


def json_error_body(status: int, message: str) -> bytes:
    """A plain `{"error": ..., "status": ...}` body, for servers without a wire format of their
    own."""
    return json.dumps({"error": message, "status": status}, separators=(",", ":")).encode()


def server_ssl_context(cert_file: str | Path, key_file: str | Path) -> ssl.SSLContext:
    """A server-side TLS context (TLS 1.2 or newer) from PEM certificate chain and key files."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(str(cert_file), str(key_file))
    return context


_LIMITS = web.AppKey("placer_serving_limits", ServingLimits)
_POOL = web.AppKey("placer_serving_pool", concurrent.futures.ThreadPoolExecutor)


class _Admission:
    """Counts admitted requests and their body bytes; refuses, never queues."""

    def __init__(self, limits: ServingLimits) -> None:
        self.limits = limits
        self.requests = 0
        self.bytes = 0

    def reserve(self, request: web.Request) -> int:
        """Bytes to hold for this request's body, or raise the 4xx/5xx that refuses it."""
        limits = self.limits
        declared = request.content_length
        encoded = "Content-Encoding" in request.headers
        if declared is None and not request.headers.get("Transfer-Encoding"):
            if request.method in ("POST", "PUT", "PATCH"):
                raise web.HTTPLengthRequired(text="Content-Length required")
            declared = 0
        if declared is not None and declared > limits.max_body_bytes:
            raise web.HTTPRequestEntityTooLarge(
                max_size=limits.max_body_bytes,
                actual_size=declared,
                text=f"body of {declared} bytes is over the limit of {limits.max_body_bytes}",
            )
        # Unknown or compressed lengths may grow to the limit once decoded: hold all of it.
        hold = limits.max_body_bytes if declared is None or encoded else declared
        if self.requests >= limits.max_in_flight or self.bytes + hold > limits.max_in_flight_bytes:
            raise web.HTTPServiceUnavailable(
                text=f"busy: {self.requests} requests in flight; retry",
                headers={"Retry-After": "1"},
            )
        self.requests += 1
        self.bytes += hold
        return hold

    def release(self, hold: int) -> None:
        self.requests -= 1
        self.bytes -= hold

    async def drained(self, timeout_s: float) -> bool:
        """Wait until no admitted request is left (bodies still arriving included)."""
        deadline = asyncio.get_running_loop().time() + timeout_s
        while self.requests and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.02)
        return not self.requests


_ADMISSION = web.AppKey("placer_serving_admission", _Admission)


def _message(e: web.HTTPException) -> str:
    text = e.text or ""
    if text.startswith(f"{e.status}: "):  # aiohttp's default text repeats the status
        text = text.split(": ", 1)[1]
    if e.status == HTTPStatus.METHOD_NOT_ALLOWED and isinstance(e, web.HTTPMethodNotAllowed):
        return f"method {e.method} not allowed; use {', '.join(sorted(e.allowed_methods))}"
    if e.status == HTTPStatus.REQUEST_ENTITY_TOO_LARGE and "Maximum request body size" in text:
        return "body over the size limit"
    return text.strip() or HTTPStatus(e.status).phrase


def make_application(
    routes: Collection[web.RouteDef],
    *,
    limits: ServingLimits,
    error_body: ErrorBody = json_error_body,
    exempt: Collection[str] = ("/healthz", "/readyz"),
) -> web.Application:
    """An aiohttp application with the guards above around `routes`. Handlers find the body
    already read (`await request.read()` returns it at once) and within the limits."""
    admission = _Admission(limits)
    exempt_paths = frozenset(exempt)

    def answer(status: int, message: str, headers: dict[str, str] | None = None) -> web.Response:
        return web.Response(
            status=status,
            body=error_body(status, message),
            content_type="application/json",
            headers=headers,
        )

    @web.middleware
    async def json_errors(
        request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        try:
            return await handler(request)
        except web.HTTPException as e:
            if e.status < 400:
                raise
            extra = {k: v for k, v in e.headers.items() if k in ("Allow", "Retry-After")}
            return answer(e.status, _message(e), extra)
        except asyncio.CancelledError:
            raise
        except ConnectionError as e:  # the client left mid-request: routine, nobody to answer
            log.debug("%s %s: %s", request.method, request.path, e)
            return answer(400, f"connection lost: {e}")
        except Exception as e:  # the last line of defence: answer, log, keep serving
            log.exception("%s %s failed", request.method, request.path)
            return answer(500, f"internal error: {type(e).__name__}: {e}")

    @web.middleware
    async def admit(
        request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        if request.path in exempt_paths:
            return await handler(request)
        hold = admission.reserve(request)
        try:
            try:
                async with asyncio.timeout(limits.body_timeout_s):
                    await request.read()
            except TimeoutError:
                raise web.HTTPRequestTimeout(
                    text=f"body not received within {limits.body_timeout_s:g} s"
                ) from None
            return await handler(request)
        finally:
            admission.release(hold)

    app = web.Application(client_max_size=limits.max_body_bytes, middlewares=[json_errors, admit])
    app[_LIMITS] = limits
    app[_ADMISSION] = admission
    app.add_routes(routes)

    async def pool_context(app: web.Application) -> Any:
        pool = concurrent.futures.ThreadPoolExecutor(limits.workers, "placer-serving")
        app[_POOL] = pool
        yield
        pool.shutdown(wait=False, cancel_futures=True)

    app.cleanup_ctx.append(pool_context)
    return app


async def run_blocking(request: web.Request, fn: Callable[..., T], *args: Any) -> T:
    """Run a computing function in the application's worker threads, off the event loop."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(request.app[_POOL], fn, *args)


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
        self.limits = limits or app.get(_LIMITS) or ServingLimits()
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
            admission = self.app.get(_ADMISSION)
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
