"""The extender's only contact with the Kubernetes API: watch JobSets, Nodes and the controller's
placement ledger (its reservations), create Bindings.

Everything it reads is handed to the pure converters in `sources` and stored in the
`ExtenderStore`. Client setup, paged lists, watches and the conversion of every client failure
into a `ClusterError` are placer's Kubernetes boundary (`placer.model.kube.client`), shared with
the controller and the live snapshot loader; no module of the extender imports the client itself.

Watch loop, per resource: list (replace everything the store knows of that kind), then watch from
the list's resourceVersion; any end of the stream, an expired resourceVersion (410) or an error
leads to a fresh list after a short pause. The store turns ready once every first list is in.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any

from placer.controller.decide.records.ledger import LEDGER_NAME
from placer.model.errors import ClusterError, ResourceExpired
from placer.model.kube.client import (
    ApiClient,
    KubeApis,
    WatchStop,
    converted,
    list_all,
    watch_events,
)
from plugins.extender.sources import jobset_entries, ledger_reservations, node_labels
from plugins.extender.store import ExtenderStore

__all__ = ["JOBSETS", "KubeBinder", "KubeWatcher"]

log = logging.getLogger(__name__)

JOBSETS = ("jobset.x-k8s.io", "v1alpha2", "jobsets")
"""(group, version, plural) of the JobSet API."""


class KubeBinder:
    """Creates `pods/binding`, as the scheduler's default binder would (target Node, pod UID as a
    precondition), within `timeout_s` so the scheduler's own 5 s deadline is never the one hit."""

    def __init__(self, api: ApiClient, *, timeout_s: float = 3.0) -> None:
        self._core = KubeApis(api).core
        self._timeout_s = timeout_s

    def bind(self, namespace: str, name: str, uid: str, node: str) -> None:
        metadata = {"name": name, "namespace": namespace, **({"uid": uid} if uid else {})}
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": metadata,
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        with converted(f"binding {namespace}/{name} to {node}"):
            # The API answers a Status, not a Binding: read it raw instead of deserializing.
            self._core.create_namespaced_pod_binding(
                name, namespace, body, _preload_content=False, _request_timeout=self._timeout_s
            )


class KubeWatcher:
    """Keeps an `ExtenderStore` in step with the JobSets' assignments and the Nodes' labels."""

    def __init__(
        self,
        store: ExtenderStore,
        api: ApiClient,
        *,
        watch_timeout_s: int = 300,
        retry_s: float = 2.0,
        request_timeout_s: float = 60.0,
        ledger_namespace: str | None = None,
    ) -> None:
        self.store = store
        apis = KubeApis(api)
        self._custom = apis.custom
        self._core = apis.core
        self._watch_timeout_s = watch_timeout_s
        self._retry_s = retry_s
        self._request_timeout_s = request_timeout_s
        self._stop = WatchStop()
        self._ledger_namespace = ledger_namespace
        """Where the controller's placement ledger lives: its reservations are watched too."""
        self._listed = {"jobsets": threading.Event(), "nodes": threading.Event()}
        if ledger_namespace:
            self._listed["ledger"] = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> KubeWatcher:
        streams = [("jobsets", self._jobsets_once), ("nodes", self._nodes_once)]
        if self._ledger_namespace:
            streams.append(("ledger", self._ledger_once))
        for kind, run in streams:
            t = threading.Thread(
                target=self._loop, args=(kind, run), name=f"placer-watch-{kind}", daemon=True
            )
            t.start()
            self._threads.append(t)
        return self

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout=5)

    def wait_synced(self, timeout_s: float) -> bool:
        return all(e.wait(timeout_s) for e in self._listed.values())

    def _loop(self, kind: str, run: Callable[[], None]) -> None:
        while not self._stop.is_set():
            try:
                run()
            except ResourceExpired:
                log.info("%s watch expired; relisting in %.0f s", kind, self._retry_s)
                self._stop.wait(self._retry_s)
            except Exception as e:  # keep watching whatever happens; the state stays as it was
                log.warning("%s watch: %s; relisting in %.0f s", kind, e, self._retry_s)
                self._stop.wait(self._retry_s)

    def _listed_kind(self, kind: str) -> None:
        self._listed[kind].set()
        if all(e.is_set() for e in self._listed.values()) and not self.store.synced:
            log.info(
                "extender state synced: %d JobSets, %d nodes",
                len(self.store.jobsets()),
                self.store.known_nodes(),
            )
            self.store.set_synced(True)

    def _list(self, call: Callable[..., Any], what: str, **params: Any) -> tuple[list[Any], str]:
        return list_all(
            call, f"listing {what}", request_timeout_s=self._request_timeout_s, **params
        )

    def _watch(
        self, call: Callable[..., Any], what: str, rv: str, **params: Any
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        """Changes after `rv`, bookmarks left out, until the server's timeout or `stop`."""
        for kind, obj in watch_events(
            call,
            f"watching {what}",
            resource_version=rv,
            timeout_s=self._watch_timeout_s,
            stop=self._stop,
            **params,
        ):
            if kind != "BOOKMARK":
                yield kind, obj

    def _jobsets_once(self) -> None:
        api = dict(zip(("group", "version", "plural"), JOBSETS, strict=True))
        items, rv = self._list(self._custom.list_cluster_custom_object, "jobsets", **api)
        entries = []
        for obj in items:
            entries.extend(jobset_entries(obj)[1])
        self.store.replace_plan(entries)
        self._listed_kind("jobsets")
        for kind, obj in self._watch(self._custom.list_cluster_custom_object, "jobsets", rv, **api):
            key, rows = jobset_entries(obj)
            self.store.set_jobset(key, [] if kind == "DELETED" else rows)

    def _nodes_once(self) -> None:
        items, rv = self._list(self._core.list_node, "nodes")
        self.store.replace_nodes(dict(node_labels(obj) for obj in items))
        self._listed_kind("nodes")
        for kind, obj in self._watch(self._core.list_node, "nodes", rv):
            name, node_label_map = node_labels(obj)
            if kind == "DELETED":
                self.store.remove_node(name)
            else:
                self.store.set_node(name, node_label_map)

    def _ledger_once(self) -> None:
        """The placement ledger ConfigMap: its reservations, kept current.

        Listed and watched by name (a `metadata.name` field selector), not by label: RBAC can
        then limit list and watch to that one object (a Role rule with `resourceNames:
        [placer-ledger]` authorizes a list or watch only when it selects that name), so the
        extender needs no access to any other ConfigMap of the namespace."""
        call = self._core.list_namespaced_config_map
        where = {
            "namespace": str(self._ledger_namespace),
            "field_selector": f"metadata.name={LEDGER_NAME}",
        }
        try:
            items, rv = self._list(call, "the placement ledger", **where)
        except ClusterError as e:
            if e.status != 403:
                raise
            raise ClusterError(
                f"listing the placement ledger {where['namespace']}/{LEDGER_NAME} is forbidden: "
                "grant list and watch on it (Role placer-extender-ledger in "
                "deploy/scheduler/extender.yaml), or give the controller's namespace with "
                "--ledger-namespace; not ready until then",
                status=403,
            ) from e
        ledger = next((o for o in items if _name(o) == LEDGER_NAME), None)
        self.store.replace_reservations(ledger_reservations(ledger))
        self._listed_kind("ledger")
        for kind, obj in self._watch(call, "the placement ledger", rv, **where):
            if _name(obj) == LEDGER_NAME:
                deleted = kind == "DELETED"
                self.store.replace_reservations([] if deleted else ledger_reservations(obj))


def _name(obj: Any) -> str:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    return str((meta or {}).get("name") or "")
