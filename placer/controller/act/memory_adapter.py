"""An in-memory cluster behind the `ClusterAdapter` protocol, for unit tests and the benchmarks.

It behaves like an API server where the controller can tell the difference: every write bumps a
global resourceVersion; a stale `metadata.resourceVersion` in a patch or replace is a 409; creating
an existing name is a 409; watches replay the changes after a resourceVersion and answer 410 once
the history is trimmed past it; label selectors filter lists and watches (an object that stops
matching is seen as DELETED); and a pod update must follow the rules for gated pods (KEP-3838):
gates only removed, node affinity only narrowed while gated, nothing else in the spec changed.
Faults (409, 429, 5xx) can be injected per verb and kind. The HTTP stand-in in tests/controller/
serves this same store to the real client, so both adapters are tested against one behavior.

The simulated JobSet/Job controllers and scheduler that drive it over time live outside the
package, in `benchmarks/simulate/cluster_sim.py` (used by the tests and the benchmarks).
"""

from __future__ import annotations

import builtins
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

from placer.controller.act.lease import LeaderSettings
from placer.controller.act.selectors import matches_selector, merge_patch, parse_selector
from placer.controller.adapter import KINDS, Kind, Listing, Obj, WatchEvent, copy_json
from placer.model.errors import ClusterError, ResourceExpired

__all__ = ["CLUSTER_SCOPED", "MemoryCluster", "pod_update_violation"]

CLUSTER_SCOPED: frozenset[str] = frozenset(
    {"nodes", "priorityclasses", "topologies"}
    | {"admissionchecks", "clusterqueues", "resourceflavors"}
)
_TEMPORARY = frozenset({429, 500, 502, 503, 504})


def _clone(obj: Obj) -> Obj:
    copied: Obj = copy_json(obj)
    return copied


def _names(gates: Any) -> list[str]:
    return [str(g.get("name")) for g in gates or [] if isinstance(g, Mapping)]


def _required_terms(spec: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    aff = spec.get("affinity") or {}
    req = (aff.get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    return list((req or {}).get("nodeSelectorTerms") or [])


def _without_node_affinity(spec: Mapping[str, Any]) -> Any:
    """Affinity minus node affinity (pod affinity and anti-affinity): fixed even while gated."""
    return {k: v for k, v in (spec.get("affinity") or {}).items() if k != "nodeAffinity"}


def _only_added(old: Any, new: Any) -> bool:
    """`new` is `old` with entries appended, as the API server compares requirement lists (in
    order: a requirement put before the existing ones is a change, not an addition)."""
    old, new = list(old or []), list(new or [])
    return bool(new[: len(old)] == old)


def _term_narrowed(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """A node selector term with requirements only appended; an empty term (which matches no
    node) stays empty."""
    fields = ("matchExpressions", "matchFields")
    if not any(old.get(f) for f in fields) and any(new.get(f) for f in fields):
        return False
    return all(_only_added(old.get(f), new.get(f)) for f in fields)


def pod_update_violation(old: Mapping[str, Any], new: Mapping[str, Any]) -> str | None:
    """Why the API server would refuse this pod update, or None: the rules of ValidatePodUpdate
    for what placer's controller writes (KEP-3838 for gated pods). tests/cluster/
    test_pod_update_rules.py asks the real API server the same questions; container images and
    tolerations, which it also lets change, stay fixed here because placer never writes them."""
    o, n = old.get("spec") or {}, new.get("spec") or {}
    mutable = ("schedulingGates", "affinity", "nodeSelector")
    if {k: v for k, v in o.items() if k not in mutable} != {
        k: v for k, v in n.items() if k not in mutable
    }:
        return "pod updates may not change fields other than gates, affinity and nodeSelector"
    old_gates, new_gates = _names(o.get("schedulingGates")), _names(n.get("schedulingGates"))
    if not set(new_gates) <= set(old_gates):
        return "schedulingGates can only be removed"
    if not old_gates:
        if (o.get("affinity") or {}) != (n.get("affinity") or {}) or (
            o.get("nodeSelector") or {}
        ) != (n.get("nodeSelector") or {}):
            return "affinity and nodeSelector are immutable once the pod is not gated"
        return None
    old_sel, new_sel = o.get("nodeSelector") or {}, n.get("nodeSelector") or {}
    if any(new_sel.get(k) != v for k, v in old_sel.items()):
        return "nodeSelector may only gain entries while gated"
    if _without_node_affinity(o) != _without_node_affinity(n):
        return "only node affinity may change while gated"
    old_terms, new_terms = _required_terms(o), _required_terms(n)
    if old_terms:
        if len(old_terms) != len(new_terms):
            return "nodeSelectorTerms may not be added or removed once set"
        for ot, nt in zip(old_terms, new_terms, strict=True):
            if not _term_narrowed(ot, nt):
                return "a node selector term may only gain requirements, after its own"
    return None


class _Fault:
    def __init__(self, verb: str, kind: str, status: int, times: int) -> None:
        self.verb, self.kind, self.status, self.times = verb, kind, status, times


class MemoryCluster:
    """A thread-safe object store with API-server semantics; implements `ClusterAdapter`.

    `list`, `get` and `objects` return copies; the object a write returns is the stored one
    (as the cache keeps it): read it, never mutate it.
    """

    def __init__(self, *, history: int = 100_000) -> None:
        # Leases too: the HTTP stand-in serves them to the client's leader election.
        self._objects: dict[str, dict[tuple[str, str], Obj]] = {k: {} for k in KINDS}
        self._rv = 0
        self._uid = 0
        self._log: dict[str, deque[tuple[int, str, Obj | None, Obj | None]]] = {
            k: deque(maxlen=history) for k in self._objects
        }
        self._trimmed: dict[str, int] = dict.fromkeys(self._objects, 0)
        self._cond = threading.Condition(threading.RLock())
        self._faults: list[_Fault] = []
        self.calls: list[tuple[str, str, str]] = []
        """(verb, kind, name) of every call, for tests that count API calls."""

    # --- fault injection -----------------------------------------------------------------------

    def inject(self, verb: str, kind: str, status: int, times: int = 1) -> None:
        """Make the next `times` calls of `verb` on `kind` fail with HTTP `status`."""
        with self._cond:
            self._faults.append(_Fault(verb, kind, status, times))

    def _maybe_fail(self, verb: str, kind: str, name: str = "") -> None:
        self.calls.append((verb, kind, name))
        for f in self._faults:
            if f.verb == verb and f.kind == kind and f.times > 0:
                f.times -= 1
                raise ClusterError(
                    f"injected {f.status} on {verb} {kind}",
                    status=f.status,
                    temporary=f.status in _TEMPORARY,
                )

    # --- store internals -----------------------------------------------------------------------

    def _key(self, kind: str, name: str, namespace: str | None) -> tuple[str, str]:
        return ("" if kind in CLUSTER_SCOPED else (namespace or "default")), name

    def _record(self, kind: str, type_: str, old: Obj | None, new: Obj | None) -> None:
        log = self._log[kind]
        if log.maxlen is not None and len(log) == log.maxlen:
            self._trimmed[kind] = log[0][0]
        log.append((self._rv, type_, old, new))
        self._cond.notify_all()

    def _stamp(self, obj: Obj) -> None:
        """A new resourceVersion, in a metadata of `obj`'s own: a merge patch shares what it
        leaves alone (metadata, for a status patch) with the stored object, which an earlier
        answer handed out; stamping in place changed that answer under its holder's feet (the
        cache then held an old status under the new resourceVersion). Stored objects are
        otherwise never changed in place, so answers may share the rest."""
        self._rv += 1
        obj["metadata"] = {**(obj.get("metadata") or {}), "resourceVersion": str(self._rv)}

    def _get(self, kind: str, name: str, namespace: str | None) -> Obj:
        obj = self._objects[kind].get(self._key(kind, name, namespace))
        if obj is None:
            raise ClusterError(f"{kind} {namespace or ''}/{name} not found", status=404)
        return obj

    def _check_rv(self, kind: str, current: Obj, wanted: Any) -> None:
        if wanted and str(wanted) != current["metadata"]["resourceVersion"]:
            raise ClusterError(
                f"{kind} {current['metadata'].get('name')}: the object has been "
                "modified; please apply your changes to the latest version",
                status=409,
            )

    # --- ClusterAdapter ------------------------------------------------------------------------

    def list(
        self, kind: Kind, *, namespace: str | None = None, label_selector: str = ""
    ) -> Listing:
        selector = parse_selector(label_selector)
        with self._cond:
            self._maybe_fail("list", kind)
            items = [
                _clone(o)
                for (ns, _), o in sorted(self._objects[kind].items())
                if (namespace is None or ns == namespace)
                and matches_selector((o["metadata"].get("labels") or {}), selector)
            ]
            return Listing(items=items, resource_version=str(self._rv))

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
        selector = parse_selector(label_selector)
        deadline = time.monotonic() + timeout_s
        since = int(resource_version or 0)
        with self._cond:
            self._maybe_fail("watch", kind)
            if since < self._trimmed[kind]:
                raise ResourceExpired(f"too old resource version: {since}")
        if on_connected is not None:
            on_connected()

        def visible(obj: Obj | None) -> bool:
            if obj is None:
                return False
            meta = obj["metadata"]
            return (
                namespace is None or meta.get("namespace", "") == namespace
            ) and matches_selector(meta.get("labels") or {}, selector)

        while True:
            with self._cond:
                if since < self._trimmed[kind]:
                    raise ResourceExpired(f"too old resource version: {since}")
                pending = [e for e in self._log[kind] if e[0] > since]
                if not pending:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return
                    self._cond.wait(remaining)
                    continue
            for rv, type_, old, new in pending:
                since = rv
                was, now = visible(old), visible(new)
                if now and new is not None:
                    yield WatchEvent(
                        type="MODIFIED" if was and type_ != "ADDED" else "ADDED",
                        object=_clone(new),
                    )
                elif was and old is not None:
                    gone = _clone(old)
                    gone["metadata"]["resourceVersion"] = str(rv)
                    yield WatchEvent(type="DELETED", object=gone)

    def get(self, kind: Kind, name: str, *, namespace: str | None = None) -> Obj:
        with self._cond:
            self._maybe_fail("get", kind, name)
            return _clone(self._get(kind, name, namespace))

    def patch(self, kind: Kind, name: str, patch: Obj, *, namespace: str | None = None) -> Obj:
        with self._cond:
            self._maybe_fail("patch", kind, name)
            current = self._get(kind, name, namespace)
            self._check_rv(kind, current, (patch.get("metadata") or {}).get("resourceVersion"))
            if kind in ("workloads", "admissionchecks"):  # placer patches only their status
                patch = {"status": patch.get("status") or {}}
            updated = merge_patch(current, patch)
            for field in ("name", "namespace", "uid", "creationTimestamp"):
                if field in current["metadata"]:
                    updated["metadata"][field] = current["metadata"][field]
            if kind == "pods":
                why = pod_update_violation(current, updated)
                if why:
                    raise ClusterError(f"Pod {name} is invalid: {why}", status=422)
            return self._replace_locked(kind, current, updated)

    def replace(self, kind: Kind, obj: Obj) -> Obj:
        """PUT (not used by the controller; the HTTP stand-in serves it, e.g. for Leases)."""
        meta = obj.get("metadata") or {}
        with self._cond:
            self._maybe_fail("replace", kind, str(meta.get("name")))
            current = self._get(kind, str(meta.get("name")), meta.get("namespace"))
            self._check_rv(kind, current, meta.get("resourceVersion"))
            if kind == "pods":
                why = pod_update_violation(current, obj)
                if why:
                    raise ClusterError(f"Pod {meta.get('name')} is invalid: {why}", status=422)
            updated = _clone(obj)
            for field in ("uid", "creationTimestamp"):
                if field in current["metadata"]:
                    updated["metadata"][field] = current["metadata"][field]
            return self._replace_locked(kind, current, updated)

    def _replace_locked(self, kind: str, current: Obj, updated: Obj) -> Obj:
        self._stamp(updated)
        self._objects[kind][
            self._key(kind, updated["metadata"]["name"], updated["metadata"].get("namespace"))
        ] = updated
        self._record(kind, "MODIFIED", current, updated)
        return updated

    def create(self, kind: Kind, obj: Obj) -> Obj:
        obj = _clone(obj)
        meta = obj.setdefault("metadata", {})
        with self._cond:
            self._maybe_fail("create", kind, str(meta.get("name")))
            if kind not in CLUSTER_SCOPED:
                meta.setdefault("namespace", "default")
            key = self._key(kind, str(meta.get("name")), meta.get("namespace"))
            if key in self._objects[kind]:
                raise ClusterError(f"{kind} {key[0]}/{key[1]} already exists", status=409)
            self._uid += 1
            meta.setdefault("uid", f"00000000-0000-4000-8000-{self._uid:012d}")
            meta.setdefault("creationTimestamp", datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
            self._stamp(obj)
            self._objects[kind][key] = obj
            self._record(kind, "ADDED", None, obj)
            return _clone(obj)

    def lead(
        self,
        settings: LeaderSettings,
        *,
        on_started: Callable[[], None],
        on_stopped: Callable[[], None],
        stop: threading.Event,
    ) -> None:
        """A one-replica cluster: this identity always leads."""
        try:
            on_started()
        finally:
            on_stopped()

    # --- beyond the protocol: what the cluster's own controllers do ----------------------------

    def delete(self, kind: str, name: str, *, namespace: str | None = None) -> None:
        with self._cond:
            self._maybe_fail("delete", kind, name)
            key = self._key(kind, name, namespace)
            current = self._objects[kind].pop(key, None)
            if current is None:
                raise ClusterError(f"{kind} {key[0]}/{key[1]} not found", status=404)
            self._rv += 1
            self._record(kind, "DELETED", current, None)

    def mutate(
        self, kind: str, name: str, change: Callable[[Obj], None], *, namespace: str | None = None
    ) -> Obj:
        """Change an object without API validation (binding, status, kubelet): a system write."""
        with self._cond:
            current = self._get(kind, name, namespace)
            updated = _clone(current)
            change(updated)
            return self._replace_locked(kind, current, updated)

    def objects(self, kind: str, namespace: str | None = None) -> builtins.list[Obj]:
        """Every stored object of `kind` (copies), sorted by namespace and name."""
        with self._cond:
            return [
                _clone(o)
                for (ns, _), o in sorted(self._objects[kind].items())
                if namespace is None or ns == namespace
            ]

    def trim_history(self, kind: str) -> None:
        """Forget every change so far, as etcd compaction does: older watches get 410."""
        with self._cond:
            self._log[kind].clear()
            self._trimmed[kind] = self._rv
            self._cond.notify_all()

    def changes(self, kind: str) -> builtins.list[tuple[int, str, Obj | None, Obj | None]]:
        """Every change of `kind` still in the history: (resourceVersion, type, old, new), oldest
        first. For tests that judge what happened over time, not only the end state."""
        with self._cond:
            return builtins.list(self._log[kind])

    @property
    def resource_version(self) -> str:
        return str(self._rv)
