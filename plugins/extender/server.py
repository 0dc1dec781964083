"""The HTTP face of the extender: routes kube-scheduler's POSTs to the pure decisions and back.

`ExtenderApp.handle(method, path, body)` does everything but sockets (decode, decide, encode, map
errors to status codes), so the routing rules read in one place; `ExtenderServer` puts it on
aiohttp through `placer.serving`, which adds the guards every placer server shares (body limit,
bounded in-flight requests and connections, graceful drain on SIGTERM) and HTTP/1.1 keep-alive,
which the scheduler's Go client reuses. Every answer is JSON in the extender's own shape: a bad
payload is a 400, a refused one 411/413/503, a wrong method 405, a bug 500, each with the reason
in `Error`; never a dropped connection or an HTML page.

Routes (the last path segment counts, so any `urlPrefix` path works):

    POST .../filter      ExtenderArgs -> ExtenderFilterResult
    POST .../prioritize  ExtenderArgs -> HostPriorityList
    POST .../bind        ExtenderBindingArgs -> ExtenderBindingResult (only with a binder)
    GET  /healthz        200 while the process serves (liveness)
    GET  /readyz         200 once the plan state is synced, else 503 (readiness)

Time budget: the scheduler gives up after `httpTimeout` (5 s by default). Reads of a body are
bounded by `ServingLimits.body_timeout_s`, bodies by `max_body_bytes`, and every decision is a
linear pass over the candidate nodes (benchmarks/RESULTS-extender.md); requests slower than
`budget_s` are logged as warnings so a drift shows before the scheduler times out.
"""

from __future__ import annotations

import json
import logging
import ssl
import time
from typing import Protocol

from aiohttp import web

from placer.model.errors import ClusterError, InputError
from placer.model.messages import echo
from placer.serving import HttpServer, ServingLimits, make_application, run_blocking
from plugins.extender.decide import filter_nodes, prioritize
from plugins.extender.pods import pod_info
from plugins.extender.store import ExtenderStore
from plugins.extender.wire import (
    decode_args,
    decode_binding,
    encode_bind_result,
    encode_error,
    encode_filter,
    encode_priorities,
)

__all__ = ["INLINE_BODY_BYTES", "PROBES", "Binder", "ExtenderApp", "ExtenderServer", "Response"]

log = logging.getLogger(__name__)

JSON = "application/json"
Response = tuple[int, bytes, str]
"""(HTTP status, body, content type)."""
PROBES = ("healthz", "readyz")
"""Paths answered whatever the load: never counted against the in-flight limits."""


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
        if verb in PROBES and method not in ("GET", "HEAD"):
            return 405, encode_error(f"{verb} takes GET, not {method}"), JSON
        if verb == "healthz":
            return 200, self._status(), JSON
        if verb == "readyz":
            return (200 if self.store.synced else 503), self._status(), JSON
        if verb not in ("filter", "prioritize", "bind"):
            return 404, encode_error(f"no such verb {echo(verb)}: filter, prioritize, bind"), JSON
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
            log.warning("%s", e)  # the error names the pod and the node
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


_EXTENDER = web.AppKey("placer_extender_app", ExtenderApp)


INLINE_BODY_BYTES = 64 * 1024
"""Bodies up to this size (about 2,000 node names) are decided on the event loop: under about
2 ms each, less than handing them to a thread costs (benchmarks/RESULTS-extender.md), and even a
full in-flight queue of them delays a probe by well under 100 ms. Larger ones go to the worker
threads, so a probe never waits for them."""


async def _answer(request: web.Request) -> web.Response:
    """Every route: the app decides; probes and small requests on the event loop, large ones in
    the worker threads."""
    app: ExtenderApp = request.app[_EXTENDER]
    if request.path.rstrip("/").rsplit("/", 1)[-1] in PROBES:
        # never read a probe's body: probes are not admitted, so their bodies are not counted
        return _response(*app.handle(request.method, request.path, b""))
    body = await request.read()
    if len(body) <= INLINE_BODY_BYTES:
        status, payload, content_type = app.handle(request.method, request.path, body)
    else:
        status, payload, content_type = await run_blocking(
            request, app.handle, request.method, request.path, body
        )
    return _response(status, payload, content_type)


def _response(status: int, payload: bytes, content_type: str) -> web.Response:
    return web.Response(status=status, body=payload, content_type=content_type)


def _error_body(status: int, message: str) -> bytes:
    return encode_error(message)


class ExtenderServer:
    """The extender on a TCP port, on aiohttp with the guards of `placer.serving` (body limit,
    bounded in-flight work and connections, JSON errors, graceful drain). `start()` serves from a
    background thread (tests, the controller's `--extender-port`); `serve_until_signalled()`
    serves until SIGTERM or SIGINT, then drains (the CLI)."""

    def __init__(
        self,
        app: ExtenderApp,
        host: str = "127.0.0.1",
        port: int = 8888,
        *,
        limits: ServingLimits | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.app = app
        self.limits = limits or ServingLimits()
        web_app = make_application(
            [web.route("*", "/{path:.*}", _answer)],
            limits=self.limits,
            error_body=_error_body,
            exempt=tuple(f"/{p}" for p in PROBES),
        )
        web_app[_EXTENDER] = app
        self._http = HttpServer(
            web_app,
            host,
            port,
            limits=self.limits,
            ssl_context=ssl_context,
            error_body=_error_body,
            name="placer-extender",
        )

    @property
    def port(self) -> int:
        return self._http.port

    @property
    def url(self) -> str:
        return self._http.url

    @property
    def listening(self) -> str:
        """Where it listens, as bound (for logs: `url` is where a local client connects)."""
        return self._http.listening

    def start(self) -> ExtenderServer:
        self._http.start()
        return self

    def serve_until_signalled(self) -> int:
        """Serve until SIGTERM/SIGINT, then stop accepting, finish in-flight requests, return."""
        return self._http.serve_until_signalled()

    def shutdown(self) -> None:
        """Drain and stop: in-flight requests are answered, then the port closes."""
        self._http.stop()

    def __enter__(self) -> ExtenderServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
