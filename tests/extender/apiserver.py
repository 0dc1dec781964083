"""An API-server stand-in for the extender tests: kmock's KubernetesEmulator on a loopback port,
run in a background thread so synchronous code (the official client) can talk to it over HTTP.

Kept for the extender's unit tests of bind and watch edge cases (a Binding to an unknown pod or
one already bound, watch streams ending at chosen points), which are quick to provoke here; the
extender in kube-scheduler's real configuration, with the shipped RBAC, is tested on the real
control plane (tests/cluster/test_extender.py).

The emulator stores objects and serves list/watch; the `pods/binding` subresource it does not know
is added as a reaction that behaves like the real one: 404 for an unknown pod, 409 when the pod
already has a node, else the pod gets `spec.nodeName` and the call answers a Success Status.
Objects are created and changed through HTTP too, so watches see every change as events.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import threading
from pathlib import Path
from types import TracebackType
from typing import Any

from kmock import (
    KubernetesEmulator,
    KubernetesError,
    ResourceInfo,
    Server,
    resource,
    subresource,
)

__all__ = ["JOBSETS_PATH", "NODES_PATH", "ApiStandIn"]

JOBSETS_PATH = "/apis/jobset.x-k8s.io/v1alpha2"
NODES_PATH = "/api/v1/nodes"
PODS = resource("", "v1", "pods")


class ApiStandIn:
    def __init__(self) -> None:
        self.url = ""
        self.bindings: list[tuple[str, str, dict[str, Any]]] = []
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, name="api-stand-in", daemon=True)

    def __enter__(self) -> ApiStandIn:
        self._thread.start()
        if not self._ready.wait(15):
            raise RuntimeError("API stand-in did not start")
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)

    def _run(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._loop.run_until_complete(self._main())

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        async with KubernetesEmulator() as k8s, Server(k8s) as server:
            k8s.resources["jobset.x-k8s.io/v1alpha2/jobsets"] = ResourceInfo(namespaced=True)
            k8s.resources["v1/nodes"] = ResourceInfo(namespaced=False)
            k8s.resources["v1/pods"] = ResourceInfo(namespaced=True)
            k8s["post", subresource("binding")] << self._bind
            self._k8s = k8s
            self.url = str(server.url).rstrip("/")
            self._ready.set()
            await self._stop.wait()

    def _bind(self, request: Any) -> dict[str, Any]:
        key = (PODS, request.namespace, request.name)
        if key not in self._k8s.objects or self._k8s.objects[key].deleted:
            raise KubernetesError(
                status=404, reason="NotFound", message=f'pods "{request.name}" not found'
            )
        pod = self._k8s.objects[key]
        if pod.get("spec", {}).get("nodeName"):
            raise KubernetesError(
                status=409,
                reason="Conflict",
                message=f"pod {request.name} is already assigned to node "
                f'"{pod["spec"]["nodeName"]}"',
            )
        node = request.data["target"]["name"]
        pod.patch({"spec": {"nodeName": node}})
        self.bindings.append((request.namespace, request.name, request.data))
        return {"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 201}

    # -- driving it over HTTP ---------------------------------------------------------------------

    def call(self, method: str, path: str, body: object | None = None) -> tuple[int, Any]:
        conn = http.client.HTTPConnection(self.url.removeprefix("http://"), timeout=10)
        try:
            data = None if body is None else json.dumps(body).encode()
            content = "application/merge-patch+json" if method == "PATCH" else "application/json"
            conn.request(method, path, body=data, headers={"Content-Type": content})
            response = conn.getresponse()
            raw = response.read()
            return response.status, json.loads(raw) if raw else None
        finally:
            conn.close()

    def create(self, collection: str, obj: dict[str, Any]) -> None:
        status, answer = self.call("POST", collection, obj)
        assert status < 300, answer

    def pod(self, namespace: str, name: str) -> dict[str, Any]:
        status, answer = self.call("GET", f"/api/v1/namespaces/{namespace}/pods/{name}")
        assert status == 200, answer
        return dict(answer)

    def kubeconfig(self, path: Path) -> Path:
        path.write_text(
            json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [{"name": "stand-in", "cluster": {"server": self.url}}],
                    "users": [{"name": "tester", "user": {"token": "t"}}],
                    "contexts": [
                        {"name": "test", "context": {"cluster": "stand-in", "user": "tester"}}
                    ],
                    "current-context": "test",
                }
            ),
            encoding="utf-8",
        )
        return path
