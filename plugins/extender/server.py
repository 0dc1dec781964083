"""The HTTP face of the extender: routes kube-scheduler's POSTs to the pure decisions and back.

`ExtenderApp.handle(method, path, body)` does everything but sockets (decode, decide, encode, map
errors to status codes), so the routing rules read in one place; `ExtenderServer` puts it on a
standard-library `ThreadingHTTPServer` with HTTP/1.1 keep-alive, which is what the scheduler's Go
client reuses. Nothing here may raise into the socket layer: a bad payload is a 400 with the
reason in `Error`, a bug is a 500 with the reason in `Error`, never a dropped connection.

Routes (the last path segment counts, so any `urlPrefix` path works):

    POST .../filter      ExtenderArgs -> ExtenderFilterResult
    POST .../prioritize  ExtenderArgs -> HostPriorityList
    POST .../bind        ExtenderBindingArgs -> ExtenderBindingResult (only with a binder)
    GET  /healthz        200 while the process serves (liveness)
    GET  /readyz         200 once the plan state is synced, else 503 (readiness)

Time budget: the scheduler gives up after `httpTimeout` (5 s by default). Reads of a request are
bounded by the socket timeout (`io_timeout_s`), bodies by `max_body_bytes`, and every decision is a
linear pass over the candidate nodes (benchmarks/RESULTS-extender.md); requests slower than
`budget_s` are logged as warnings so a drift shows before the scheduler times out.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Protocol

from placer.model.errors import ClusterError, InputError
from plugins.extender.decide import filter_nodes, prioritize
from plugins.extender.pods import pod_info
from plugins.extender.state import ExtenderStore
from plugins.extender.wire import (
    decode_args,
    decode_binding,
    encode_bind_result,
    encode_error,
    encode_filter,
    encode_priorities,
)

__all__ = ["Binder", "ExtenderApp", "ExtenderServer", "Response"]

log = logging.getLogger(__name__)

JSON = "application/json"
Response = tuple[int, bytes, str]
"""(HTTP status, body, content type)."""


class Binder(Protocol):
    """Creates the pod's Binding; raises `ClusterError` when the API refuses."""

    def bind(self, namespace: str, name: str, uid: str, node: str) -> None: ...


class ExtenderApp:
    """Request handling without sockets: one call per request, safe to call from many threads."""

    def __init__(
        self,
        store: ExtenderStore,
        binder: Binder | None = None,
        *,
        learn_labels: bool = True,
        budget_s: float = 1.0,
    ) -> None:
        self.store = store
        self.binder = binder
        self.learn_labels = learn_labels
        """Record node labels seen in full NodeList requests (useful without a Node watch)."""
        self.budget_s = budget_s

    def handle(self, method: str, path: str, body: bytes) -> Response:
        started = time.perf_counter()
        verb = path.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]
        try:
            response = self._route(method, verb, body)
        except Exception as e:  # the last line of defence: answer, log, keep serving
            log.exception("%s %s failed", method, path)
            response = (500, encode_error(f"internal error: {type(e).__name__}: {e}"), JSON)
        elapsed = time.perf_counter() - started
        if elapsed > self.budget_s:
            log.warning("%s %s took %.3f s (budget %.3f s)", method, path, elapsed, self.budget_s)
        return response

    def _route(self, method: str, verb: str, body: bytes) -> Response:
        if method == "GET" and verb == "healthz":
            return 200, self._status(), JSON
        if method == "GET" and verb == "readyz":
            return (200 if self.store.synced else 503), self._status(), JSON
        if verb not in ("filter", "prioritize", "bind"):
            return 404, encode_error(f"no such verb {verb!r}: filter, prioritize, bind"), JSON
        if method != "POST":
            return 405, encode_error(f"{verb} takes POST, not {method}"), JSON
        if verb == "bind":
            return self._bind(body)
        try:
            args = decode_args(body)
        except InputError as e:
            return 400, encode_error(str(e)), JSON
        view = self.store.view()
        if not view.synced:
            return 503, encode_error("placer extender: plan state not synced yet"), JSON
        labels = args.labels
        if labels is not None and self.learn_labels:
            self.store.learn_nodes(labels)
        pod = pod_info(args.pod)
        if verb == "filter":
            result = filter_nodes(view, pod, args.names, labels)
            if result.unresolvable:
                log.debug(
                    "%s: %d of %d nodes refused", pod.ref, len(result.unresolvable), len(args.names)
                )
            return 200, encode_filter(args, result), JSON
        return 200, encode_priorities(prioritize(view, pod, args.names, labels)), JSON

    def _bind(self, body: bytes) -> Response:
        if self.binder is None:
            return 404, encode_bind_result("binding is off: start the extender with --bind"), JSON
        try:
            args = decode_binding(body)
        except InputError as e:
            return 400, encode_bind_result(str(e)), JSON
        try:
            self.binder.bind(args.pod_namespace, args.pod_name, args.pod_uid, args.node)
        except ClusterError as e:
            log.warning("bind %s/%s to %s: %s", args.pod_namespace, args.pod_name, args.node, e)
            return 200, encode_bind_result(str(e)), JSON
        log.info("bound %s/%s to %s", args.pod_namespace, args.pod_name, args.node)
        return 200, encode_bind_result(), JSON

    def _status(self) -> bytes:
        view = self.store.view()
        return json.dumps(
            {
                "synced": view.synced,
                "jobs": len(view.jobs),
                "reservedNodes": view.reserved_nodes,
                "knownNodes": self.store.known_nodes(),
                "binder": self.binder is not None,
            },
            sort_keys=True,
        ).encode()


class _Handler(BaseHTTPRequestHandler):
    """Socket glue only: read the body, call the app, write the answer."""

    protocol_version = "HTTP/1.1"  # keep-alive: the scheduler's client reuses connections
    disable_nagle_algorithm = True  # headers and body are two writes: no 40 ms delayed-ACK stall
    server: _Server

    def _serve(self) -> None:
        body = b""
        if self.command == "POST":
            length_text = self.headers.get("Content-Length")
            if length_text is None or not length_text.strip().isdigit():
                self._send(411, encode_error("Content-Length required"))
                self.close_connection = True
                return
            length = int(length_text)
            if length > self.server.max_body_bytes:
                self._send(413, encode_error(f"body over {self.server.max_body_bytes} bytes"))
                self.close_connection = True
                return
            try:
                body = self.rfile.read(length)
            except OSError as e:  # includes the socket timeout: give the thread back
                log.debug("reading a request from %s: %s", self.address_string(), e)
                self.close_connection = True
                return
            if len(body) != length:
                self.close_connection = True
                return
        status, payload, content_type = self.server.app.handle(self.command, self.path, body)
        self._send(status, payload, content_type)

    def _send(self, status: int, payload: bytes, content_type: str = JSON) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = _serve
    do_POST = _serve

    def do_PUT(self) -> None:
        self._serve()

    def log_message(self, format: str, *args: object) -> None:
        log.debug("%s " + format, self.address_string(), *args)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(
        self,
        address: tuple[str, int],
        app: ExtenderApp,
        *,
        io_timeout_s: float,
        max_body_bytes: int,
    ) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        handler = type("Handler", (_Handler,), {"timeout": io_timeout_s})
        super().__init__(address, handler)

    def handle_error(self, request: object, client_address: object) -> None:
        """A client that went away mid-answer is routine; log it instead of printing a trace."""
        log.debug("connection from %s ended with an error", client_address, exc_info=True)


class ExtenderServer:
    """The extender on a TCP port; `start()` serves from a background thread (tests, the
    controller's `--extender-port`), `serve_forever()` from the caller's (the CLI)."""

    def __init__(
        self,
        app: ExtenderApp,
        host: str = "127.0.0.1",
        port: int = 8888,
        *,
        io_timeout_s: float = 30.0,
        max_body_bytes: int = 256 * 1024 * 1024,
    ) -> None:
        self.app = app
        self._httpd = _Server(
            (host, port), app, io_timeout_s=io_timeout_s, max_body_bytes=max_body_bytes
        )
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        host = str(self._httpd.server_address[0])
        return f"http://{'127.0.0.1' if host in ('0.0.0.0', '') else host}:{self.port}"

    def serve_forever(self) -> None:
        self._httpd.serve_forever(poll_interval=0.1)

    def start(self) -> ExtenderServer:
        self._thread = threading.Thread(
            target=self.serve_forever, name="placer-extender", daemon=True
        )
        self._thread.start()
        return self

    def shutdown(self) -> None:
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> ExtenderServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
