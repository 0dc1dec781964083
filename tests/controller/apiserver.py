"""A minimal Kubernetes API server on 127.0.0.1, serving a `MemoryCluster` to the real client.

A stand-in, kept only for faults the real API server cannot be made to show on demand: injected
409/429/5xx answers on chosen calls, connection resets mid-stream, one client cut off from some
paths while others are served, and a solver held longer than a lease. Everything the real
components enforce or do (immutability of pod specs, gates only removed, webhooks over TLS, RBAC,
field validation, watches answered 410 after compaction, JobSet, Kueue and the scheduler acting)
is tested on the real control plane in tests/cluster/.

Why not kmock's KubernetesEmulator: it ignores label selectors, sets no resourceVersion, uid or
creationTimestamp (so no 409 on stale writes and no watch resumption), merges patches without
`null`-deletes, and serves from an asyncio loop that the synchronous official client would need a
second thread and loop for. The controller's correctness rests on exactly those behaviors, so the
tests serve the same store the in-memory adapter uses (`MemoryCluster`: resourceVersion
preconditions, 409s, label selectors, JSON merge patch, gated-pod update rules, watch history with
410) over plain HTTP with `http.server`.

Paths served (all the adapter and the client's leader election use):

    /api/v1/nodes[/{name}]                                   list, watch, get, patch
    /api/v1/pods, /api/v1/namespaces/{ns}/pods[/{name}]      list, watch, get, patch
    /api/v1/namespaces/{ns}/events                           create, list
    /api/v1/namespaces/{ns}/configmaps[/{name}]              list, watch, get, patch, create
    /apis/jobset.x-k8s.io/v1alpha2[/namespaces/{ns}]/jobsets[/{name}]   list, watch, get, patch
    /apis/scheduling.k8s.io/v1/priorityclasses               list
    /apis/kueue.x-k8s.io/v1beta1/topologies                  list (v1beta2 answers 404: an
                                                             older Kueue, one version served)
    /apis/kueue.x-k8s.io/v1beta1[/namespaces/{ns}]/workloads[/{name}[/status]]
                                                             list, watch, get, patch (status)
    /apis/kueue.x-k8s.io/v1beta1/admissionchecks[/{name}[/status]]
                                                             list, watch, get, patch (status)
    /apis/kueue.x-k8s.io/v1beta1/clusterqueues, resourceflavors   list, watch
    /apis/coordination.k8s.io/v1/namespaces/{ns}/leases[/{name}]        get, create, replace

Lists and watches also take the one field selector clients use, `metadata.name=<name>`.

Faults are injected through `MemoryCluster.inject(verb, kind, status)`; `ApiServer.reset` drops
connections without an answer (a connection reset), and `ApiServer.partition` answers 503 to one
client (told apart by its User-Agent) on some paths, e.g. a leader cut off from its Lease.
`ApiServer(authorize=...)` puts an authorizer in front of every request (403 when it says no),
given the request's attributes the way the API server's RBAC sees them (`Request`); the only
authorizer used is the real API server's own, asked by SubjectAccessReview
(tests/cluster/access.py), so the stand-in serves the faults and RBAC itself decides.
"""

from __future__ import annotations

import json
import re
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import yaml

from placer.controller.act.memory_adapter import MemoryCluster
from placer.controller.adapter import Kind
from placer.model.errors import ClusterError, InputError

__all__ = ["ApiServer", "Request", "kubeconfig"]


@dataclass(frozen=True)
class Request:
    """A request's authorization attributes, as the API server derives them: the verb (`get`,
    `list`, `watch`, `create`, `update`, `patch`), the resource (a subresource as
    `workloads/status`), its namespace, the object's name, which for a list or a watch is the one
    its `metadata.name` field selector names, and the API group (`""` for the core group)."""

    verb: str
    resource: str
    namespace: str | None
    name: str | None
    group: str = ""


_ROUTES: list[tuple[re.Pattern[str], Kind]] = [
    (re.compile(r"^/api/v1/nodes(?:/(?P<name>[^/]+))?$"), "nodes"),
    (re.compile(r"^/api/v1/pods$"), "pods"),
    (re.compile(r"^/api/v1/namespaces/(?P<ns>[^/]+)/pods(?:/(?P<name>[^/]+))?$"), "pods"),
    (re.compile(r"^/api/v1/events$"), "events"),
    (re.compile(r"^/api/v1/configmaps$"), "configmaps"),
    (
        re.compile(r"^/api/v1/namespaces/(?P<ns>[^/]+)/configmaps(?:/(?P<name>[^/]+))?$"),
        "configmaps",
    ),
    (re.compile(r"^/api/v1/namespaces/(?P<ns>[^/]+)/events(?:/(?P<name>[^/]+))?$"), "events"),
    (re.compile(r"^/apis/jobset\.x-k8s\.io/v1alpha2/jobsets$"), "jobsets"),
    (
        re.compile(
            r"^/apis/jobset\.x-k8s\.io/v1alpha2/namespaces/(?P<ns>[^/]+)/jobsets"
            r"(?:/(?P<name>[^/]+))?$"
        ),
        "jobsets",
    ),
    (
        re.compile(r"^/apis/scheduling\.k8s\.io/v1/priorityclasses(?:/(?P<name>[^/]+))?$"),
        "priorityclasses",
    ),
    (re.compile(r"^/apis/kueue\.x-k8s\.io/v1beta1/topologies$"), "topologies"),
    (re.compile(r"^/apis/kueue\.x-k8s\.io/v1beta1/workloads$"), "workloads"),
    (
        re.compile(
            r"^/apis/kueue\.x-k8s\.io/v1beta1/namespaces/(?P<ns>[^/]+)/workloads"
            r"(?:/(?P<name>[^/]+)(?:/status)?)?$"
        ),
        "workloads",
    ),
    (
        re.compile(
            r"^/apis/kueue\.x-k8s\.io/v1beta1/admissionchecks(?:/(?P<name>[^/]+)(?:/status)?)?$"
        ),
        "admissionchecks",
    ),
    (re.compile(r"^/apis/kueue\.x-k8s\.io/v1beta1/clusterqueues$"), "clusterqueues"),
    (re.compile(r"^/apis/kueue\.x-k8s\.io/v1beta1/resourceflavors$"), "resourceflavors"),
    (
        re.compile(
            r"^/apis/coordination\.k8s\.io/v1/namespaces/(?P<ns>[^/]+)/leases"
            r"(?:/(?P<name>[^/]+))?$"
        ),
        "leases",
    ),
]

_LIST_KIND = {
    "nodes": "NodeList",
    "pods": "PodList",
    "events": "EventList",
    "jobsets": "JobSetList",
    "priorityclasses": "PriorityClassList",
    "topologies": "TopologyList",
    "workloads": "WorkloadList",
    "admissionchecks": "AdmissionCheckList",
    "clusterqueues": "ClusterQueueList",
    "resourceflavors": "ResourceFlavorList",
    "leases": "LeaseList",
    "configmaps": "ConfigMapList",
}


def _status(code: int, message: str) -> dict[str, Any]:
    reason = {
        400: "BadRequest",
        403: "Forbidden",
        404: "NotFound",
        409: "Conflict",
        410: "Expired",
        422: "Invalid",
        415: "UnsupportedMediaType",
        429: "TooManyRequests",
    }.get(code, "InternalError")
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _route(self) -> tuple[Kind, str | None, str | None, dict[str, list[str]]]:
        url = urlparse(self.path)
        for pattern, kind in _ROUTES:
            m = pattern.match(url.path)
            if m:
                groups = m.groupdict()
                return kind, groups.get("ns"), groups.get("name"), parse_qs(url.query)
        raise ClusterError(f"no route for {url.path}", status=404)

    def _send(self, code: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(length) or b"{}")

    def _cut_off(self, method: str, kind: str) -> bool:
        """An injected connection reset, or a partition of this client from this path."""
        agent = self.headers.get("User-Agent", "")
        with self.server.lock:
            if any(a in agent and f in self.path for a, f in self.server.partitions):
                raise ClusterError("partitioned from this client", status=503)
            for fault in self.server.resets:
                if fault[0] == method and fault[1] == kind and fault[2] > 0:
                    fault[2] -= 1
                    break
            else:
                return False
        self.close_connection = True
        self.connection.shutdown(socket.SHUT_RDWR)
        return True

    def _authorize(
        self, method: str, kind: str, ns: str | None, name: str | None, query: Any
    ) -> None:
        watching = query.get("watch", [""])[0] == "true"
        verb = {"PATCH": "patch", "PUT": "update", "POST": "create"}.get(method) or (
            "get" if name is not None else "watch" if watching else "list"
        )
        path = urlparse(self.path).path
        if path.endswith("/status"):
            kind = f"{kind}/status"  # a subresource is its own resource to RBAC
        group = path.split("/")[2] if path.startswith("/apis/") else ""
        request = Request(verb, kind, ns, name if name is not None else _named(query), group)
        if self.server.authorize is not None and not self.server.authorize(request):
            raise ClusterError(f"forbidden: {request}", status=403)

    def _handle(self, method: str) -> None:
        self.server.requests.append((method, self.path))
        try:
            kind, ns, name, query = self._route()
            if self._cut_off(method, kind):
                return
            self._authorize(method, kind, ns, name, query)
            store = self.server.cluster
            if method == "GET" and name is None and query.get("watch", [""])[0] == "true":
                return self._watch(kind, ns, query)
            if method == "GET" and name is None:
                listing = store.list(
                    kind,
                    namespace=ns,
                    label_selector=query.get("labelSelector", [""])[0],
                )
                only = _named(query)
                return self._send(
                    200,
                    {
                        "kind": _LIST_KIND[kind],
                        "apiVersion": "v1",
                        "metadata": {"resourceVersion": listing.resource_version},
                        "items": [i for i in listing.items if only in (None, _name_of(i))],
                    },
                )
            if method == "GET":
                assert name is not None  # a GET without a name is a list, answered above
                return self._send(200, store.get(kind, name, namespace=ns))
            if method == "PATCH":
                ctype = self.headers.get("Content-Type", "")
                if "json-patch" in ctype:
                    raise ClusterError("JSON patch is not supported by this stand-in", status=415)
                if kind in ("workloads", "admissionchecks") and not urlparse(
                    self.path
                ).path.endswith("/status"):
                    raise ClusterError(f"placer writes only the status of {kind}", status=405)
                return self._send(
                    200,
                    store.patch(
                        kind,
                        name or "",
                        self._body(),
                        namespace=ns,
                    ),
                )
            if method == "PUT":
                obj = self._body()
                obj.setdefault("metadata", {}).setdefault("namespace", ns)
                return self._send(200, store.replace(kind, obj))
            if method == "POST":
                obj = self._body()
                if ns:
                    obj.setdefault("metadata", {})["namespace"] = ns
                return self._send(201, store.create(kind, obj))
            raise ClusterError(f"method {method} not allowed", status=405)
        except ClusterError as e:
            self._send(e.status or 500, _status(e.status or 500, str(e)))
        except InputError as e:
            self._send(400, _status(400, str(e)))

    def _watch(self, kind: Kind, ns: str | None, query: dict[str, list[str]]) -> None:
        store = self.server.cluster
        events = store.watch(
            kind,
            resource_version=query.get("resourceVersion", [""])[0],
            namespace=ns,
            label_selector=query.get("labelSelector", [""])[0],
            timeout_s=float(query.get("timeoutSeconds", ["30"])[0]),
        )
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def chunk(obj: Any) -> None:
            data = json.dumps(obj).encode() + b"\n"
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

        only = _named(query)
        try:
            for event in events:
                if self.server.stopping.is_set():
                    break
                if only is not None and _name_of(event.object) != only:
                    continue
                chunk({"type": event.type, "object": event.object})
        except ClusterError as e:
            chunk({"type": "ERROR", "object": _status(e.status or 500, str(e))})
        except (BrokenPipeError, ConnectionResetError):
            return
        try:
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass

    def do_GET(self) -> None:
        self._handle("GET")

    def do_PATCH(self) -> None:
        self._handle("PATCH")

    def do_PUT(self) -> None:
        self._handle("PUT")

    def do_POST(self) -> None:
        self._handle("POST")


def _named(query: dict[str, list[str]]) -> str | None:
    """The name a `fieldSelector=metadata.name=<name>` selects (None: no field selector)."""
    text = query.get("fieldSelector", [""])[0]
    if not text:
        return None
    field, sep, value = text.partition("=")
    if field != "metadata.name" or not sep:
        raise ClusterError(f"field selector {text!r} is not supported by this stand-in", status=400)
    return value.lstrip("=")


def _name_of(obj: Any) -> str:
    return str(((obj or {}).get("metadata") or {}).get("name") or "")


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self, cluster: MemoryCluster, authorize: Callable[[Request], bool] | None = None
    ) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.cluster = cluster
        self.authorize = authorize
        self.stopping = threading.Event()
        self.requests: list[tuple[str, str]] = []
        self.lock = threading.Lock()
        self.resets: list[list[Any]] = []
        self.partitions: set[tuple[str, str]] = set()


class ApiServer:
    """`with ApiServer(cluster) as api: KubeAdapter(api.client())` - serves until the block ends."""

    def __init__(
        self,
        cluster: MemoryCluster | None = None,
        *,
        authorize: Callable[[Request], bool] | None = None,
    ) -> None:
        self.cluster = cluster or MemoryCluster()
        self._server = _Server(self.cluster, authorize)
        self._thread = threading.Thread(
            target=self._server.serve_forever, daemon=True, kwargs={"poll_interval": 0.05}
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        assert isinstance(host, str)  # an AF_INET server's address
        return f"http://{host}:{port}"

    @property
    def requests(self) -> list[tuple[str, str]]:
        return self._server.requests

    def client(self, agent: str = "") -> Any:
        """An ApiClient for this server; `agent` is added to its User-Agent (see `partition`)."""
        from kubernetes import client

        cfg = client.Configuration()
        cfg.host = self.url
        api = client.ApiClient(cfg)
        if agent:
            api.user_agent = f"{api.user_agent} {agent}"
        return api

    def reset(self, method: str, kind: str, times: int = 1) -> None:
        """Close the next `times` connections of `method` on `kind` without an answer."""
        with self._server.lock:
            self._server.resets.append([method, kind, times])

    def partition(self, agent: str, path_fragment: str, *, on: bool = True) -> None:
        """Answer 503 to every request of the client `agent` whose path holds `path_fragment`."""
        with self._server.lock:
            if on:
                self._server.partitions.add((agent, path_fragment))
            else:
                self._server.partitions.discard((agent, path_fragment))

    def __enter__(self) -> ApiServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.stopping.set()
        self._server.shutdown()
        self._server.server_close()


def kubeconfig(tmp_path: Path, url: str) -> Path:
    """A kubeconfig file at `tmp_path` for the stand-in (or any server) at `url`."""
    path = tmp_path / "kubeconfig"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "test",
                "clusters": [{"name": "test", "cluster": {"server": url}}],
                "users": [{"name": "test", "user": {"token": "t"}}],
                "contexts": [{"name": "test", "context": {"cluster": "test", "user": "test"}}],
            }
        )
    )
    return path
