"""The guarded aiohttp application: limits, admission of requests, JSON errors, worker threads.

See the package docstring (`placer.serving`) for what each guard does and why; `server.py` puts
the application on a socket.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any, TypeVar

from aiohttp import web
from aiohttp.web_protocol import RequestPayloadError

__all__ = [
    "ADMISSION_KEY",
    "LIMITS_KEY",
    "ErrorBody",
    "ServingLimits",
    "json_error_body",
    "make_application",
    "run_blocking",
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


LIMITS_KEY = web.AppKey("placer_serving_limits", ServingLimits)
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


ADMISSION_KEY = web.AppKey("placer_serving_admission", _Admission)


def _one_line(e: BaseException) -> str:
    """An exception's text in one short line (aiohttp's carry a status and a newline)."""
    text = " ".join(str(e).split())
    text = text.removeprefix("400, message: ")
    return text[:200] or type(e).__name__


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
    already read (`await request.read()` returns it at once) and within the limits. Handlers of
    `exempt` paths (probes) are not admitted and must not read a body: it would not be counted."""
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
            except RequestPayloadError as e:  # a compressed body that does not decompress
                encoding = request.headers.get("Content-Encoding", "")
                # Nothing more of this body can be read, nor the next request found after it:
                # answer, then close the connection (the body marked read, so aiohttp does
                # not try to drain it and log the decoder's failure as its own).
                request.content.feed_eof()
                refused = answer(
                    400,
                    f"body cannot be decoded (Content-Encoding {encoding!r}): {_one_line(e)}",
                )
                refused.force_close()
                return refused
            return await handler(request)
        finally:
            admission.release(hold)

    app = web.Application(client_max_size=limits.max_body_bytes, middlewares=[json_errors, admit])
    app[LIMITS_KEY] = limits
    app[ADMISSION_KEY] = admission
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
