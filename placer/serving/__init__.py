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
- **A body that cannot be read is the client's fault**: a compressed body that does not
  decompress (corrupt gzip or deflate) is a JSON 400, never a 500.
- **JSON errors for every status the application answers**: router misses (404, 405), limits
  (411, 413, 408, 503) and handler exceptions (500) all go through one middleware that asks the
  caller's `error_body(status, message)` for the payload; so do aiohttp's own refusals of
  requests that are not valid HTTP, which come before any middleware (a JSON 400).
- **Graceful stop**: `HttpServer.stop()` closes the listening socket, lets admitted requests
  finish, bodies still arriving included (up to `shutdown_timeout_s`), closes idle keep-alive
  connections, and returns; `serve_until_signalled()` does that on SIGTERM or SIGINT, for a
  clean exit 0.
- **TLS**: `server_ssl_context(cert, key)`.

The server runs its event loop in a thread of its own, so a synchronous caller (the CLI, the
controller embedding the extender, tests) just calls `start()` and `stop()`. Handlers that compute
rather than wait run in a small thread pool (`run_blocking`), so the loop keeps answering probes
while a large request is decided. This package knows no placer types: it is plumbing. Modules:
`app` (limits, admission, middlewares, worker threads), `server` (socket, TLS, connection cap,
drain).
"""

from __future__ import annotations

from placer.serving.app import (
    ErrorBody,
    ServingLimits,
    json_error_body,
    make_application,
    run_blocking,
)
from placer.serving.server import HttpServer, server_ssl_context

__all__ = [
    "ErrorBody",
    "HttpServer",
    "ServingLimits",
    "json_error_body",
    "make_application",
    "run_blocking",
    "server_ssl_context",
]
