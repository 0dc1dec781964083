"""The controller's picture of the cluster: listed once, then kept current by watch events.

Relists happen on start, on a 410 Gone (the watch fell behind etcd compaction), on the periodic
resync, and at least every `--replan-interval` while a watch keeps failing (`unhealthy`). JobSets
are listed in every namespace whatever the controller manages, so their records and states are
known to every controller; the placement ledger (a ConfigMap, see ledger.py) is watched too. The
controller's own writes are recorded as soon as the API server answers, so the next cycle sees them
even before their watch events arrive; an older event never overwrites a newer object. `state()`
hands the decision code an immutable view (`ClusterState`), so a cycle decides on one consistent
picture while the watch threads keep updating the cache.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from placer.controller.adapter import ClusterAdapter, Kind, Obj, object_key, resource_version
from placer.controller.decide.observe.state import ClusterState, Key
from placer.model.errors import ClusterError, ResourceExpired
from placer.model.workload import JOBSET_NAME_LABEL

__all__ = ["KUEUE_KINDS", "STOP_POLL_S", "WATCH_MAX_BACKOFF_S", "ClusterCache", "Stream"]

log = logging.getLogger(__name__)

STOP_POLL_S = 0.2
"""How often a waiting controller loop looks at its stop event (SIGTERM acts within this)."""
WATCH_MAX_BACKOFF_S = 30.0
KUEUE_KINDS: tuple[Kind, ...] = ("workloads", "admissionchecks", "clusterqueues", "resourceflavors")
"""Watched only with `--kueue-admission-check`."""


@dataclass(frozen=True)
class Stream:
    """One list+watch: a kind, optionally one namespace and a label selector."""

    kind: Kind
    namespace: str | None = None
    label_selector: str = ""

    def covers(self, namespace: str) -> bool:
        return self.namespace is None or self.namespace == namespace


def _rv_int(obj: Obj) -> int | None:
    try:
        return int(resource_version(obj))
    except ValueError:
        return None


SNAPSHOT_KINDS = frozenset({"nodes", "pods", "priorityclasses", "topologies"})
"""What the planner's snapshot is built from (decide/observe/snapshot.py): only their changes
rebuild it."""


def _capacity_fingerprint(kind: str, obj: Obj | None) -> Any:
    if obj is None:
        return None
    if kind == "pods":
        return ((obj.get("spec") or {}).get("nodeName"), (obj.get("status") or {}).get("phase"))
    if kind == "workloads":
        # what changes who may be planned (quota, eviction, check states), not our messages
        status = obj.get("status") or {}
        return (
            tuple((c.get("type"), c.get("status")) for c in status.get("conditions") or []),
            tuple((c.get("name"), c.get("state")) for c in status.get("admissionChecks") or []),
        )
    if kind == "jobsets":
        return (
            (obj.get("status") or {}).get("terminalState"),
            (obj.get("spec") or {}).get("suspend"),
            (obj.get("metadata") or {}).get("deletionTimestamp"),
        )
    return resource_version(obj)


class ClusterCache:
    """Objects by kind, fed by `relist()`, the watch threads and `record()` of our own writes."""

    def __init__(
        self,
        adapter: ClusterAdapter,
        *,
        namespaces: tuple[str, ...] = (),
        all_pods: bool = True,
        watch_timeout_s: float = 300.0,
        ledger: Stream | None = None,
        kueue: bool = False,
    ) -> None:
        self.adapter = adapter
        self.watch_timeout_s = watch_timeout_s
        scopes: tuple[str | None, ...] = tuple(sorted(namespaces)) or (None,)
        # Every JobSet, whatever is managed: other controllers' records and finished states count.
        self.streams: list[Stream] = [Stream("nodes"), Stream("jobsets")]
        if ledger is not None:
            self.streams.append(ledger)
        if all_pods:
            # Free capacity is allocatable minus every bound pod, whoever owns it.
            self.streams.append(Stream("pods"))
        else:
            self.streams += [Stream("pods", ns, JOBSET_NAME_LABEL) for ns in scopes]
        if kueue:
            # placer's AdmissionCheck: Workloads everywhere (their JobSets may be anywhere) and
            # the cluster-scoped objects saying which checks are placer's and on which flavors
            self.streams += [Stream(k) for k in KUEUE_KINDS]
        self._objects: dict[str, dict[Key, Obj]] = {
            "nodes": {},
            "pods": {},
            "jobsets": {},
            "priorityclasses": {},
            "topologies": {},
            "configmaps": {},
            **{k: {} for k in KUEUE_KINDS},
        }
        self._rv: dict[Stream, str] = {}
        self.unhealthy: set[Stream] = set()
        """Streams whose last watch attempt failed (cleared when one connects)."""
        self._lock = threading.Condition()
        self._version = 0
        self._capacity_version = 0
        self._snapshot_version = 0
        self.relists = 0

    # --- feeding -------------------------------------------------------------------------------

    def relist(self, stream: Stream | None = None) -> None:
        """List `stream` (or everything, priority classes included) and replace what it covers."""
        for s in [stream] if stream else self.streams:
            listing = self.adapter.list(
                s.kind, namespace=s.namespace, label_selector=s.label_selector
            )
            with self._lock:
                store = self._objects[s.kind]
                for key in [k for k in store if s.covers(k[0])]:
                    del store[key]
                for obj in listing.items:
                    store[object_key(obj)] = obj
                self._rv[s] = listing.resource_version
                self._changed(capacity=True, snapshot=s.kind in SNAPSHOT_KINDS)
        if stream is None:
            listing = self.adapter.list("priorityclasses")
            topologies = self._list_topologies()
            with self._lock:
                self._objects["priorityclasses"] = {object_key(o): o for o in listing.items}
                found = {object_key(o): o for o in topologies}
                if found != self._objects["topologies"]:
                    self._objects["topologies"] = found
                    self._changed(capacity=True, snapshot=True)
        self.relists += 1

    def _list_topologies(self) -> list[Obj]:
        """Kueue Topologies, listed on every full relist (like priority classes: they rarely
        change, so no watch); none when Kueue is not installed (404) or they may not be listed
        (401/403), as `placer plan --kubeconfig` reads them."""
        try:
            return self.adapter.list("topologies").items
        except ClusterError as e:
            if e.status not in (401, 403, 404):
                raise
            if e.status != 404:
                log.warning("%s; Kueue Topologies are not read (grant list on them)", e)
            return []

    def _changed(self, *, capacity: bool, snapshot: bool = False) -> None:
        self._version += 1
        if capacity:
            self._capacity_version += 1
            if snapshot:
                self._snapshot_version += 1
        self._lock.notify_all()

    def apply(self, kind: str, event_type: str, obj: Obj) -> None:
        """One watch event. Older than what we hold (e.g. our own write landed first): ignored."""
        key = object_key(obj)
        with self._lock:
            store = self._objects[kind]
            old = store.get(key)
            if event_type == "DELETED":
                if old is None:
                    return
                del store[key]
                self._changed(capacity=True, snapshot=kind in SNAPSHOT_KINDS)
                return
            if old is not None:
                have, got = _rv_int(old), _rv_int(obj)
                if have is not None and got is not None and got <= have:
                    return
            store[key] = obj
            self._changed(
                capacity=_capacity_fingerprint(kind, old) != _capacity_fingerprint(kind, obj),
                snapshot=kind in SNAPSHOT_KINDS,
            )

    def record(self, kind: str, obj: Obj) -> None:
        """The API server's answer to one of our writes."""
        if kind in self._objects:
            self.apply(kind, "MODIFIED", obj)

    # --- reading -------------------------------------------------------------------------------

    def state(self) -> ClusterState:
        with self._lock:
            return ClusterState(
                nodes={k[1]: o for k, o in self._objects["nodes"].items()},
                pods=dict(self._objects["pods"]),
                jobsets=dict(self._objects["jobsets"]),
                priority_classes={k[1]: o for k, o in self._objects["priorityclasses"].items()},
                topologies={k[1]: o for k, o in self._objects["topologies"].items()},
                configmaps=dict(self._objects["configmaps"]),
                workloads=dict(self._objects["workloads"]),
                admission_checks={k[1]: o for k, o in self._objects["admissionchecks"].items()},
                cluster_queues={k[1]: o for k, o in self._objects["clusterqueues"].items()},
                resource_flavors={k[1]: o for k, o in self._objects["resourceflavors"].items()},
                version=self._version,
                capacity_version=self._capacity_version,
                snapshot_version=self._snapshot_version,
            )

    @property
    def version(self) -> int:
        return self._version

    def wait_for_change(
        self, since: int, timeout_s: float, stop: threading.Event | None = None
    ) -> bool:
        """Block until the version passes `since`, the timeout ends or `stop` is set (looked at
        every `STOP_POLL_S`); True if it changed."""
        deadline = time.monotonic() + timeout_s
        with self._lock:
            while self._version == since:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or (stop is not None and stop.is_set()):
                    return False
                self._lock.wait(min(remaining, STOP_POLL_S) if stop is not None else remaining)
            return True

    # --- watching ------------------------------------------------------------------------------

    def watch_forever(
        self, stream: Stream, stop: threading.Event, sleep: Callable[[float], None] | None = None
    ) -> None:
        """Follow one stream until `stop`: relist on 410, back off on other errors.

        The backoff starts again from its shortest delay as soon as a watch connects, whether or
        not events follow: a quiet, healthy stream is not a failing one. Waits end early on
        `stop`, so a stopping controller does not wait out a backoff.
        """
        wait: Callable[[float], object] = sleep or stop.wait
        failures = 0

        def connected() -> None:
            nonlocal failures
            failures = 0
            self.unhealthy.discard(stream)

        while not stop.is_set():
            try:
                for event in self.adapter.watch(
                    stream.kind,
                    resource_version=self._rv.get(stream, ""),
                    namespace=stream.namespace,
                    label_selector=stream.label_selector,
                    timeout_s=self.watch_timeout_s,
                    on_connected=connected,
                ):
                    if event.type != "BOOKMARK":
                        self.apply(stream.kind, event.type, event.object)
                    self._rv[stream] = resource_version(event.object) or self._rv.get(stream, "")
                    if stop.is_set():
                        return
            except ResourceExpired:
                log.info("watch %s expired; relisting", stream)
                self._relist_quietly(stream, stop, wait)
            except ClusterError as e:
                failures += 1
                self.unhealthy.add(stream)
                delay = min(WATCH_MAX_BACKOFF_S, 0.5 * 2 ** min(failures - 1, 6))
                log.warning("watch %s failed (%s); retrying in %.1fs", stream, e, delay)
                wait(delay)

    def _relist_quietly(
        self, stream: Stream, stop: threading.Event, wait: Callable[[float], object]
    ) -> None:
        delay = 0.5
        while not stop.is_set():
            try:
                self.relist(stream)
                return
            except ClusterError as e:
                log.warning("relist %s failed (%s); retrying", stream, e)
                wait(delay)
                delay = min(WATCH_MAX_BACKOFF_S, delay * 2)

    def start_watches(self, stop: threading.Event) -> list[threading.Thread]:
        threads = []
        for s in self.streams:
            t = threading.Thread(
                target=self.watch_forever,
                args=(s, stop),
                daemon=True,
                name=f"watch-{s.kind}-{s.namespace or 'all'}",
            )
            t.start()
            threads.append(t)
        return threads
