"""`ClusterAdapter` over the official `kubernetes` client, through placer's Kubernetes boundary.

Client setup, error conversion, paged lists and watches are `placer.model.kube.client`'s, shared
with the live snapshot loader and the extender: objects travel as raw JSON, never as client model
objects, so fields this client version does not know survive and the decision code sees exactly
what kubectl would show; every client or transport failure becomes a `ClusterError` (temporary
for 408, 429, 5xx and connection problems), and a 410 a `ResourceExpired` so the cache relists.
Writes are JSON merge patches carrying `metadata.resourceVersion` (optimistic concurrency) and the
creates of Events and of the placement ledger (a ConfigMap). Leader election uses the client's
`leaderelection` module on a coordination.k8s.io Lease.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any

import urllib3

# The client's leader elector is the one part of the client used outside the boundary: its loop
# is subclassed here (`_StoppableElection`), so it is imported where it is extended.
from kubernetes.leaderelection import electionconfig, leaderelection
from kubernetes.leaderelection.resourcelock.leaselock import LeaseLock

from placer.controller.act.lease import LeaderSettings
from placer.controller.adapter import Kind, Listing, Obj, WatchEvent
from placer.model.errors import ClusterError
from placer.model.kube import client as kube_client
from placer.model.kube.client import ApiClient, KubeApis, converted, read_json
from placer.model.kueue.topology import KUEUE_GROUP, TOPOLOGY_VERSIONS

__all__ = ["JOBSET_GROUP", "JOBSET_PLURAL", "JOBSET_VERSION", "KubeAdapter"]

log = logging.getLogger(__name__)

JOBSET_GROUP = "jobset.x-k8s.io"
JOBSET_VERSION = "v1alpha2"
JOBSET_PLURAL = "jobsets"
MERGE_PATCH = "application/merge-patch+json"
KUEUE_KINDS = frozenset(
    {"topologies", "workloads", "admissionchecks", "clusterqueues", "resourceflavors"}
)
"""Kueue's kinds (plural = kind name), served as v1beta2, v1beta1 or both: read in the newest
the cluster serves (found by the first list), written (Workload and AdmissionCheck status only)
in the same."""


class KubeAdapter:
    """The real cluster. Build with `KubeAdapter.from_config(kubeconfig)` or from an ApiClient."""

    def __init__(self, api_client: ApiClient, *, request_timeout_s: float = 30.0) -> None:
        self.api_client = api_client
        apis = KubeApis(api_client)
        self.core = apis.core
        self.custom = apis.custom
        self.scheduling = apis.scheduling
        self.coordination = apis.coordination
        self.timeout = request_timeout_s
        self.kueue_versions: dict[str, str] = {}
        """Kueue kind -> the API version its first list found served."""

    @classmethod
    def from_config(cls, kubeconfig: str | None = None) -> KubeAdapter:
        """Explicit kubeconfig; else in-cluster service account; else the default kubeconfig."""
        return cls(kube_client.api_client(kubeconfig))

    # --- dispatch ------------------------------------------------------------------------------

    def _kueue_version(self, kind: str) -> str:
        return self.kueue_versions.get(kind, TOPOLOGY_VERSIONS[0])

    def _lister(
        self, kind: Kind, namespace: str | None, version: str | None = None
    ) -> Callable[..., Any]:
        """The client's list call for `kind` (Kueue's kinds in API `version`, else the one found
        served), in `namespace` or all namespaces, taking the list and watch arguments as
        keywords."""
        fn: Callable[..., Any]
        args: tuple[str, ...] = ()
        if kind in KUEUE_KINDS:
            version = version or self._kueue_version(kind)
            fn, args = (
                (self.custom.list_namespaced_custom_object, (KUEUE_GROUP, version, namespace, kind))
                if namespace
                else (self.custom.list_cluster_custom_object, (KUEUE_GROUP, version, kind))
            )
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

        def call(**kwargs: Any) -> Any:
            return fn(*args, **kwargs)

        return call

    # --- ClusterAdapter ------------------------------------------------------------------------

    def list(
        self, kind: Kind, *, namespace: str | None = None, label_selector: str = ""
    ) -> Listing:
        if kind not in KUEUE_KINDS or kind in self.kueue_versions:
            return self._list_pages(kind, self._lister(kind, namespace), label_selector)
        # Kueue serves its kinds in one or two versions: the newest one the cluster knows
        for version in TOPOLOGY_VERSIONS[:-1]:
            try:
                found = self._list_pages(
                    kind, self._lister(kind, namespace, version), label_selector
                )
            except ClusterError as e:
                if e.status != 404:
                    raise
                continue
            self.kueue_versions[kind] = version
            return found
        oldest = TOPOLOGY_VERSIONS[-1]
        found = self._list_pages(kind, self._lister(kind, namespace, oldest), label_selector)
        self.kueue_versions[kind] = oldest
        return found

    def _list_pages(self, kind: Kind, call: Callable[..., Any], label_selector: str) -> Listing:
        items, version = kube_client.list_all(
            call,
            f"listing {kind}",
            request_timeout_s=self.timeout,
            label_selector=label_selector or None,
        )
        return Listing(items=items, resource_version=version)

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
        selector: dict[str, Any] = {"label_selector": label_selector} if label_selector else {}
        for kind_of_change, obj in kube_client.watch_events(
            self._lister(kind, namespace),
            f"watching {kind}",
            resource_version=resource_version,
            timeout_s=timeout_s,
            on_connected=on_connected,
            **selector,
        ):
            yield WatchEvent(type=kind_of_change, object=obj)

    def get(self, kind: Kind, name: str, *, namespace: str | None = None) -> Obj:
        opts: dict[str, Any] = {"_preload_content": False, "_request_timeout": self.timeout}
        ns = namespace or "default"
        what = f"reading {kind} {name}"
        with converted(what):
            if kind == "nodes":
                return read_json(self.core.read_node(name, **opts), what)
            if kind == "configmaps":
                return read_json(self.core.read_namespaced_config_map(name, ns, **opts), what)
            if kind == "leases":
                return read_json(self.coordination.read_namespaced_lease(name, ns, **opts), what)
            if kind == "pods":
                return read_json(
                    self.core.read_namespaced_pod(name, namespace or "default", **opts), what
                )
            if kind == "workloads":
                version = self._kueue_version(kind)
                return read_json(
                    self.custom.get_namespaced_custom_object(
                        KUEUE_GROUP, version, ns, kind, name, **opts
                    ),
                    what,
                )
            if kind == "admissionchecks":
                version = self._kueue_version(kind)
                return read_json(
                    self.custom.get_cluster_custom_object(KUEUE_GROUP, version, kind, name, **opts),
                    what,
                )
            if kind == "jobsets":
                return read_json(
                    self.custom.get_namespaced_custom_object(
                        JOBSET_GROUP,
                        JOBSET_VERSION,
                        namespace or "default",
                        JOBSET_PLURAL,
                        name,
                        **opts,
                    ),
                    what,
                )
        raise ClusterError(f"reading {kind} is not supported")

    def patch(self, kind: Kind, name: str, patch: Obj, *, namespace: str | None = None) -> Obj:
        opts: dict[str, Any] = {
            "_preload_content": False,
            "_request_timeout": self.timeout,
            "_content_type": MERGE_PATCH,
        }
        what = f"patching {kind} {name}"
        with converted(what):
            if kind == "nodes":
                return read_json(self.core.patch_node(name, patch, **opts), what)
            if kind == "configmaps":
                return read_json(
                    self.core.patch_namespaced_config_map(
                        name, namespace or "default", patch, **opts
                    ),
                    what,
                )
            if kind == "pods":
                return read_json(
                    self.core.patch_namespaced_pod(name, namespace or "default", patch, **opts),
                    what,
                )
            if kind == "workloads":  # only their status: placer's admission check entry
                return read_json(
                    self.custom.patch_namespaced_custom_object_status(
                        KUEUE_GROUP,
                        self._kueue_version(kind),
                        namespace or "default",
                        kind,
                        name,
                        patch,
                        **opts,
                    ),
                    what,
                )
            if kind == "admissionchecks":  # only their status: the Active condition
                return read_json(
                    self.custom.patch_cluster_custom_object_status(
                        KUEUE_GROUP, self._kueue_version(kind), kind, name, patch, **opts
                    ),
                    what,
                )
            if kind == "jobsets":
                return read_json(
                    self.custom.patch_namespaced_custom_object(
                        JOBSET_GROUP,
                        JOBSET_VERSION,
                        namespace or "default",
                        JOBSET_PLURAL,
                        name,
                        patch,
                        **opts,
                    ),
                    what,
                )
        raise ClusterError(f"patching {kind} is not supported")

    def create(self, kind: Kind, obj: Obj) -> Obj:
        creators = {
            "events": self.core.create_namespaced_event,
            "configmaps": self.core.create_namespaced_config_map,
        }
        if kind not in creators:
            raise ClusterError(f"creating {kind} is not supported")
        namespace = str((obj.get("metadata") or {}).get("namespace") or "default")
        what = f"creating {kind}"
        with converted(what):
            response = creators[kind](
                namespace, obj, _preload_content=False, _request_timeout=self.timeout
            )
            return read_json(response, what)

    def lead(
        self,
        settings: LeaderSettings,
        *,
        on_started: Callable[[], None],
        on_stopped: Callable[[], None],
        stop: threading.Event,
    ) -> None:
        # the client's leader election is unannotated (here and below)
        lock: Any = LeaseLock(settings.lease, settings.namespace, settings.identity)  # type: ignore[no-untyped-call]
        # The lock builds its API object from the process-wide default configuration; give it
        # ours, so a kubeconfig passed on the command line is the one that is used.
        lock.api_instance = self.coordination
        cfg = electionconfig.Config(  # type: ignore[no-untyped-call]  # unannotated in the client
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
        super().__init__(config)  # type: ignore[no-untyped-call]  # unannotated in the client
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
            # unannotated in the client
            return bool(super().try_acquire_or_renew())  # type: ignore[no-untyped-call]
        except (urllib3.exceptions.HTTPError, OSError) as error:
            log.warning("lease %s: API server unreachable (%s); retrying", self._name, error)
            return False
