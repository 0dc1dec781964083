"""The extender's only contact with the Kubernetes API: watch JobSets, Nodes and the controller's
placement ledger (its reservations), create Bindings.

This is the one module of the extender importing the official `kubernetes` client (the layering rule
in style.md); everything it reads is handed to the pure converters in `sources` and stored in the
`ExtenderStore`. Third-party errors become `ClusterError` here and nowhere else.

Watch loop, per resource: list (replace everything the store knows of that kind), then watch from
the list's resourceVersion; any end of the stream, an expired resourceVersion (410) or an error
leads to a fresh list after a short pause. The store turns ready once every first list is in.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any, cast

from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException

from placer.controller.decide.ledger import LEDGER_NAME
from placer.model.errors import ClusterError, InputError
from placer.model.kubeconfig import config_error
from plugins.extender.sources import jobset_entries, ledger_reservations, node_labels
from plugins.extender.state import ExtenderStore

__all__ = ["JOBSETS", "KubeBinder", "KubeWatcher", "api_client"]

log = logging.getLogger(__name__)

JOBSETS = ("jobset.x-k8s.io", "v1alpha2", "jobsets")
"""(group, version, plural) of the JobSet API."""
_TEMPORARY = frozenset({408, 429, 500, 502, 503, 504})


def api_client(kubeconfig: str | None = None) -> client.ApiClient:
    """A client from `kubeconfig`, else the in-cluster service account, else ~/.kube/config."""
    try:
        if kubeconfig:
            return cast(client.ApiClient, config.new_client_from_config(config_file=kubeconfig))  # type: ignore[no-untyped-call]
        try:
            config.load_incluster_config()  # type: ignore[no-untyped-call]
            return client.ApiClient()
        except ConfigException:
            return cast(client.ApiClient, config.new_client_from_config())  # type: ignore[no-untyped-call]
    except (ConfigException, OSError, ValueError, TypeError) as e:
        raise InputError(
            config_error(kubeconfig, e),
            source=kubeconfig or "",
            field="--kubeconfig",
            code="kubeconfig",
        ) from e


def _api_error(action: str, e: Exception) -> ClusterError:
    if isinstance(e, ApiException):
        message = e.reason or ""
        with contextlib.suppress(ValueError, AttributeError):
            message = json.loads(e.body or "{}").get("message") or message
        return ClusterError(
            f"{action}: HTTP {e.status}: {message}",
            status=e.status,
            temporary=e.status in _TEMPORARY,
        )
    return ClusterError(f"{action}: {type(e).__name__}: {e}", temporary=True)


class KubeBinder:
    """Creates `pods/binding`, as the scheduler's default binder would (target Node, pod UID as a
    precondition), within `timeout_s` so the scheduler's own 5 s deadline is never the one hit."""

    def __init__(self, api: client.ApiClient, *, timeout_s: float = 3.0) -> None:
        self._core = client.CoreV1Api(api)
        self._timeout_s = timeout_s

    def bind(self, namespace: str, name: str, uid: str, node: str) -> None:
        body = client.V1Binding(
            metadata=client.V1ObjectMeta(name=name, namespace=namespace, uid=uid or None),
            target=client.V1ObjectReference(kind="Node", api_version="v1", name=node),
        )
        try:
            # The API answers a Status, not a Binding: read it raw instead of deserializing.
            self._core.create_namespaced_pod_binding(
                name, namespace, body, _preload_content=False, _request_timeout=self._timeout_s
            )
        except Exception as e:  # every client failure becomes a ClusterError (one error root)
            raise _api_error(f"binding {namespace}/{name} to {node}", e) from e


class KubeWatcher:
    """Keeps an `ExtenderStore` in step with the JobSets' assignments and the Nodes' labels."""

    def __init__(
        self,
        store: ExtenderStore,
        api: client.ApiClient,
        *,
        watch_timeout_s: int = 300,
        retry_s: float = 2.0,
        request_timeout_s: float = 60.0,
        ledger_namespace: str | None = None,
    ) -> None:
        self.store = store
        self._custom = client.CustomObjectsApi(api)
        self._core = client.CoreV1Api(api)
        self._watch_timeout_s = watch_timeout_s
        self._retry_s = retry_s
        self._request_timeout_s = request_timeout_s
        self._stop = threading.Event()
        self._ledger_namespace = ledger_namespace
        """Where the controller's placement ledger lives: its reservations are watched too."""
        self._listed = {"jobsets": threading.Event(), "nodes": threading.Event()}
        if ledger_namespace:
            self._listed["ledger"] = threading.Event()
        self._watches: list[watch.Watch] = []
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
        for w in list(self._watches):
            w.stop()  # type: ignore[no-untyped-call]
        for t in self._threads:
            t.join(timeout=5)

    def wait_synced(self, timeout_s: float) -> bool:
        return all(e.wait(timeout_s) for e in self._listed.values())

    def _loop(self, kind: str, run: Callable[[], None]) -> None:
        while not self._stop.is_set():
            try:
                run()
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

    def _stream(
        self, func: Callable[..., Any], *args: Any, rv: str, **extra: Any
    ) -> Iterator[dict[str, Any]]:
        w = watch.Watch()  # type: ignore[no-untyped-call]
        self._watches.append(w)
        try:
            kwargs: dict[str, Any] = {"timeout_seconds": self._watch_timeout_s, **extra}
            if rv:
                kwargs["resource_version"] = rv
            for event in w.stream(func, *args, **kwargs):  # type: ignore[no-untyped-call]
                if self._stop.is_set():
                    return
                if event.get("type") == "ERROR":
                    obj = event.get("raw_object") or event.get("object") or {}
                    code = obj.get("code") if isinstance(obj, dict) else None
                    log.info("watch ended with an error event (code %s); relisting", code)
                    return
                yield event
        finally:
            w.stop()  # type: ignore[no-untyped-call]
            self._watches.remove(w)

    def _jobsets_once(self) -> None:
        doc: dict[str, Any] = self._custom.list_cluster_custom_object(  # type: ignore[assignment]
            *JOBSETS, _request_timeout=self._request_timeout_s
        )
        entries = []
        for obj in doc.get("items") or []:
            entries.extend(jobset_entries(obj)[1])
        self.store.replace_plan(entries)
        self._listed_kind("jobsets")
        rv = str((doc.get("metadata") or {}).get("resourceVersion") or "")
        for event in self._stream(self._custom.list_cluster_custom_object, *JOBSETS, rv=rv):
            obj = event.get("raw_object") or event.get("object")
            if not isinstance(obj, dict) or event.get("type") == "BOOKMARK":
                continue
            key, rows = jobset_entries(obj)
            self.store.set_jobset(key, [] if event.get("type") == "DELETED" else rows)

    def _nodes_once(self) -> None:
        response = self._core.list_node(
            _preload_content=False, _request_timeout=self._request_timeout_s
        )
        doc = json.loads(response.data)  # type: ignore[attr-defined]  # raw urllib3 response
        labels = dict(node_labels(obj) for obj in doc.get("items") or [])
        self.store.replace_nodes(labels)
        self._listed_kind("nodes")
        rv = str((doc.get("metadata") or {}).get("resourceVersion") or "")
        for event in self._stream(self._core.list_node, rv=rv):
            obj = event.get("raw_object")
            if not isinstance(obj, dict) or event.get("type") == "BOOKMARK":
                continue
            name, node_label_map = node_labels(obj)
            if event.get("type") == "DELETED":
                self.store.remove_node(name)
            else:
                self.store.set_node(name, node_label_map)

    def _ledger_once(self) -> None:
        """The placement ledger ConfigMap: its reservations, kept current.

        Listed and watched by name (a `metadata.name` field selector), not by label: RBAC can
        then limit list and watch to that one object (a Role rule with `resourceNames:
        [placer-ledger]` authorizes a list or watch only when it selects that name), so the
        extender needs no access to any other ConfigMap of the namespace."""
        namespace = str(self._ledger_namespace)
        selector = f"metadata.name={LEDGER_NAME}"
        try:
            response = self._core.list_namespaced_config_map(
                namespace,
                field_selector=selector,
                _preload_content=False,
                _request_timeout=self._request_timeout_s,
            )
        except ApiException as e:
            if e.status != 403:
                raise
            raise ClusterError(
                f"listing the placement ledger {namespace}/{LEDGER_NAME} is forbidden: grant "
                "list and watch on it (Role placer-extender-ledger in "
                "deploy/scheduler/extender.yaml), or give the controller's namespace with "
                "--ledger-namespace; not ready until then",
                status=403,
            ) from e
        doc = json.loads(response.data)  # type: ignore[attr-defined]  # raw urllib3 response
        ledger = next((o for o in doc.get("items") or [] if _name(o) == LEDGER_NAME), None)
        self.store.replace_reservations(ledger_reservations(ledger))
        self._listed_kind("ledger")
        rv = str((doc.get("metadata") or {}).get("resourceVersion") or "")
        for event in self._stream(
            self._core.list_namespaced_config_map, namespace, rv=rv, field_selector=selector
        ):
            obj = event.get("raw_object")
            if not isinstance(obj, dict) or event.get("type") == "BOOKMARK":
                continue
            if _name(obj) != LEDGER_NAME:
                continue
            deleted = event.get("type") == "DELETED"
            self.store.replace_reservations([] if deleted else ledger_reservations(obj))


def _name(obj: Any) -> str:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    return str((meta or {}).get("name") or "")
