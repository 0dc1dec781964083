"""`ClusterAdapter` over the official `kubernetes` client: the only controller module importing it.

Objects travel as raw JSON (`_preload_content=False`), never as client model objects, so fields this
client version does not know survive and the decision code sees exactly what kubectl would show.
Writes are JSON merge patches carrying `metadata.resourceVersion` (optimistic concurrency) and the
creates of Events and of the placement ledger (a ConfigMap). Watches use the client's
`watch.Watch` with a server-side timeout; a 410 answer becomes `ClusterError(status=410)` so the
cache relists. Leader election uses the client's `leaderelection` module on a coordination.k8s.io
Lease. Every client or transport failure becomes a `ClusterError` here, marked temporary for 429,
5xx and connection problems.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any

import urllib3
from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException
from kubernetes.leaderelection import electionconfig, leaderelection
from kubernetes.leaderelection.resourcelock.leaselock import LeaseLock

from placer.controller.act.lease import LeaderSettings
from placer.controller.adapter import Kind, Listing, Obj, WatchEvent
from placer.model.errors import ClusterError
from placer.model.kubeconfig import config_error
from placer.model.kueue_topology import KUEUE_GROUP, TOPOLOGY_VERSIONS

__all__ = ["JOBSET_GROUP", "JOBSET_PLURAL", "JOBSET_VERSION", "KubeAdapter"]

log = logging.getLogger(__name__)

JOBSET_GROUP = "jobset.x-k8s.io"
JOBSET_VERSION = "v1alpha2"
JOBSET_PLURAL = "jobsets"
MERGE_PATCH = "application/merge-patch+json"
PAGE_SIZE = 500
_TEMPORARY = frozenset({429, 500, 502, 503, 504})


def _error(e: Exception, what: str) -> ClusterError:
    if isinstance(e, ApiException):
        reason = e.reason or ""
        with contextlib.suppress(ValueError, AttributeError):
            reason = json.loads(e.body or "{}").get("message") or reason
        return ClusterError(
            f"{what}: {e.status} {reason}".strip(),
            status=e.status,
            temporary=e.status in _TEMPORARY,
        )
    return ClusterError(f"{what}: {e}", temporary=True)


def _json(resp: Any) -> Obj:
    data: Obj = json.loads(resp.data)
    return data


class KubeAdapter:
    """The real cluster. Build with `KubeAdapter.from_config(kubeconfig)` or from an ApiClient."""

    def __init__(self, api_client: client.ApiClient, *, request_timeout_s: float = 30.0) -> None:
        self.api_client = api_client
        # Typed as Any: bodies and results are raw JSON here, never the client's model classes.
        self.core: Any = client.CoreV1Api(api_client)
        self.custom: Any = client.CustomObjectsApi(api_client)
        self.scheduling: Any = client.SchedulingV1Api(api_client)
        self.coordination: Any = client.CoordinationV1Api(api_client)
        self.timeout = request_timeout_s

    @classmethod
    def from_config(cls, kubeconfig: str | None = None) -> KubeAdapter:
        """Explicit kubeconfig; else in-cluster service account; else the default kubeconfig."""
        try:
            if kubeconfig:
                return cls(config.new_client_from_config(config_file=kubeconfig))  # type: ignore[no-untyped-call]
            try:
                config.load_incluster_config()  # type: ignore[no-untyped-call]
                return cls(client.ApiClient())
            except ConfigException:
                return cls(config.new_client_from_config())  # type: ignore[no-untyped-call]
        except (ConfigException, OSError) as e:
            raise ClusterError(config_error(kubeconfig, e)) from e

    # --- dispatch ------------------------------------------------------------------------------

    def _lister(
        self, kind: Kind, namespace: str | None, version: str = TOPOLOGY_VERSIONS[0]
    ) -> Callable[..., Any]:
        """A plain function (no return annotation, so `Watch` yields raw JSON) listing `kind`
        (Kueue topologies in API `version`)."""
        fn: Callable[..., Any]
        args: tuple[str, ...] = ()
        if kind == "topologies":
            fn = self.custom.list_cluster_custom_object
            args = (KUEUE_GROUP, version, "topologies")
        elif kind == "nodes":
            fn = self.core.list_node
        elif kind == "pods":
            fn, args = (
                (self.core.list_namespaced_pod, (namespace,))
                if namespace
                else (self.core.list_pod_for_all_namespaces, ())
            )
        elif kind == "jobsets":
            if namespace:
                fn = self.custom.list_namespaced_custom_object
                args = (JOBSET_GROUP, JOBSET_VERSION, namespace, JOBSET_PLURAL)
            else:
                fn = self.custom.list_cluster_custom_object
                args = (JOBSET_GROUP, JOBSET_VERSION, JOBSET_PLURAL)
        elif kind == "priorityclasses":
            fn = self.scheduling.list_priority_class
        elif kind == "configmaps":
            fn, args = (
                (self.core.list_namespaced_config_map, (namespace,))
                if namespace
                else (self.core.list_config_map_for_all_namespaces, ())
            )
        elif kind == "leases":
            fn, args = (
                (self.coordination.list_namespaced_lease, (namespace,))
                if namespace
                else (self.coordination.list_lease_for_all_namespaces, ())
            )
        else:
            fn, args = (
                (self.core.list_namespaced_event, (namespace,))
                if namespace
                else (self.core.list_event_for_all_namespaces, ())
            )

        def call(**kwargs):  # type: ignore[no-untyped-def]  # deliberately unannotated, see above
            return fn(*args, **kwargs)

        return call

    # --- ClusterAdapter ------------------------------------------------------------------------

    def list(
        self, kind: Kind, *, namespace: str | None = None, label_selector: str = ""
    ) -> Listing:
        if kind != "topologies":
            return self._list_pages(kind, self._lister(kind, namespace), label_selector)
        # Kueue serves Topology in one or two versions: the newest one the cluster knows
        for version in TOPOLOGY_VERSIONS[:-1]:
            try:
                return self._list_pages(kind, self._lister(kind, None, version), label_selector)
            except ClusterError as e:
                if e.status != 404:
                    raise
        oldest = self._lister(kind, None, TOPOLOGY_VERSIONS[-1])
        return self._list_pages(kind, oldest, label_selector)

    def _list_pages(self, kind: Kind, call: Callable[..., Any], label_selector: str) -> Listing:
        items: list[Obj] = []
        token: str | None = None
        while True:
            try:
                data = _json(
                    call(
                        label_selector=label_selector or None,
                        limit=PAGE_SIZE,
                        _continue=token,
                        _preload_content=False,
                        _request_timeout=self.timeout,
                    )
                )
            except (ApiException, urllib3.exceptions.HTTPError, OSError) as e:
                raise _error(e, f"listing {kind}") from e
            items.extend(data.get("items") or [])
            meta = data.get("metadata") or {}
            token = meta.get("continue") or None
            if not token:
                return Listing(items=items, resource_version=str(meta.get("resourceVersion") or ""))

    def watch(
        self,
        kind: Kind,
        *,
        resource_version: str,
        namespace: str | None = None,
        label_selector: str = "",
        timeout_s: float = 60.0,
        on_connected: Callable[[], None] | None = None,
    ) -> Iterator[WatchEvent]:
        w: Any = watch.Watch()  # type: ignore[no-untyped-call]
        lister = self._lister(kind, namespace)

        def connect(**kw):  # type: ignore[no-untyped-def]  # unannotated: see `_lister`
            response = lister(**kw)  # returns once the server answered 200 (headers read)
            if on_connected is not None:
                on_connected()
            return response

        kwargs: dict[str, Any] = {
            "timeout_seconds": max(1, int(timeout_s)),
            "allow_watch_bookmarks": True,
        }
        if resource_version:
            kwargs["resource_version"] = resource_version
        if label_selector:
            kwargs["label_selector"] = label_selector
        try:
            for event in w.stream(connect, **kwargs):
                if event.get("type") in ("ADDED", "MODIFIED", "DELETED", "BOOKMARK"):
                    yield WatchEvent(type=event["type"], object=event["raw_object"])
        except (ApiException, urllib3.exceptions.HTTPError, OSError) as e:
            raise _error(e, f"watching {kind}") from e
        finally:
            w.stop()

    def get(self, kind: Kind, name: str, *, namespace: str | None = None) -> Obj:
        opts: dict[str, Any] = {"_preload_content": False, "_request_timeout": self.timeout}
        ns = namespace or "default"
        try:
            if kind == "nodes":
                return _json(self.core.read_node(name, **opts))
            if kind == "configmaps":
                return _json(self.core.read_namespaced_config_map(name, ns, **opts))
            if kind == "leases":
                return _json(self.coordination.read_namespaced_lease(name, ns, **opts))
            if kind == "pods":
                return _json(self.core.read_namespaced_pod(name, namespace or "default", **opts))
            if kind == "jobsets":
                return _json(
                    self.custom.get_namespaced_custom_object(
                        JOBSET_GROUP,
                        JOBSET_VERSION,
                        namespace or "default",
                        JOBSET_PLURAL,
                        name,
                        **opts,
                    )
                )
        except (ApiException, urllib3.exceptions.HTTPError, OSError) as e:
            raise _error(e, f"reading {kind} {name}") from e
        raise ClusterError(f"reading {kind} is not supported")

    def patch(self, kind: Kind, name: str, patch: Obj, *, namespace: str | None = None) -> Obj:
        opts: dict[str, Any] = {
            "_preload_content": False,
            "_request_timeout": self.timeout,
            "_content_type": MERGE_PATCH,
        }
        try:
            if kind == "nodes":
                return _json(self.core.patch_node(name, patch, **opts))
            if kind == "configmaps":
                return _json(
                    self.core.patch_namespaced_config_map(
                        name, namespace or "default", patch, **opts
                    )
                )
            if kind == "pods":
                return _json(
                    self.core.patch_namespaced_pod(name, namespace or "default", patch, **opts)
                )
            if kind == "jobsets":
                return _json(
                    self.custom.patch_namespaced_custom_object(
                        JOBSET_GROUP,
                        JOBSET_VERSION,
                        namespace or "default",
                        JOBSET_PLURAL,
                        name,
                        patch,
                        **opts,
                    )
                )
        except (ApiException, urllib3.exceptions.HTTPError, OSError) as e:
            raise _error(e, f"patching {kind} {name}") from e
        raise ClusterError(f"patching {kind} is not supported")

    def create(self, kind: Kind, obj: Obj) -> Obj:
        creators = {
            "events": self.core.create_namespaced_event,
            "configmaps": self.core.create_namespaced_config_map,
        }
        if kind not in creators:
            raise ClusterError(f"creating {kind} is not supported")
        namespace = str((obj.get("metadata") or {}).get("namespace") or "default")
        try:
            return _json(
                creators[kind](
                    namespace, obj, _preload_content=False, _request_timeout=self.timeout
                )
            )
        except (ApiException, urllib3.exceptions.HTTPError, OSError) as e:
            raise _error(e, f"creating {kind}") from e

    def lead(
        self,
        settings: LeaderSettings,
        *,
        on_started: Callable[[], None],
        on_stopped: Callable[[], None],
        stop: threading.Event,
    ) -> None:
        lock: Any = LeaseLock(settings.lease, settings.namespace, settings.identity)  # type: ignore[no-untyped-call]
        # The lock builds its API object from the process-wide default configuration; give it
        # ours, so a kubeconfig passed on the command line is the one that is used.
        lock.api_instance = self.coordination
        cfg = electionconfig.Config(  # type: ignore[no-untyped-call]
            lock,
            lease_duration=settings.lease_duration_s,
            renew_deadline=settings.renew_deadline_s,
            retry_period=settings.retry_period_s,
            onstarted_leading=on_started,
            onstopped_leading=on_stopped,
        )
        # The client's elector logs every successful renewal (every retry period) at INFO;
        # placer logs the transitions itself (placer.controller.leader).
        logging.getLogger("leaderelection").setLevel(logging.WARNING)
        elector: Any = _StoppableElection(cfg, stop, f"{settings.namespace}/{settings.lease}")
        elector.run()


class _StoppableElection(leaderelection.LeaderElection):
    """The client's elector, except that once `stop` is set it neither acquires nor renews.

    Upstream's loops have no way to be cancelled; refusing to renew ends the leader's loop after
    the renew deadline (then `on_stopped` runs), and a follower's loop only sleeps, with no more
    API calls or logging from a thread that outlives its controller.
    """

    def __init__(self, config: Any, stop: threading.Event, name: str) -> None:
        super().__init__(config)  # type: ignore[no-untyped-call]
        self._stop = stop
        self._name = name

    def try_acquire_or_renew(self) -> bool:
        """One attempt; a transport failure is a failed attempt, not the end of the election.

        The client's lock methods catch only `ApiException`, so a refused connection (an API
        server restarting) escaped its loops and ended leadership at the first failed renewal.
        As in client-go, the leader now keeps retrying every retry period and steps down only
        when the renew deadline passes without a successful renewal (found on the real control
        plane: tests/cluster/test_resilience.py).
        """
        if self._stop.is_set():
            return False
        try:
            return bool(super().try_acquire_or_renew())  # type: ignore[no-untyped-call]
        except (urllib3.exceptions.HTTPError, OSError) as error:
            log.warning("lease %s: API server unreachable (%s); retrying", self._name, error)
            return False
