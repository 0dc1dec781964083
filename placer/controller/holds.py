"""Domains already given away: which nodes a record covers, whether it still fits, and reservations.

The planner only knows a domain is taken when a node in it lists a holder in `Node.jobsets` (the
snapshot loader fills that from running pods). Between writing a record and the pods running, the
domains are taken only on paper, so before planning we add a holder token per recorded child Job
(`placer:<namespace>/<job>`) to every node of its domain. A token never equals a JobSet key, so a
held domain is closed to everyone, the JobSet itself included: re-placing one child Job can never
land on a sibling's domain. Pure functions over frozen models; `model_copy` for the changed nodes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from placer.controller.bindings import (
    LABELED_BY_ANNOTATION,
    NAMESPACED_JOB_LABEL,
    NO_SCHEDULE_TAINT,
)
from placer.controller.cache import ClusterState
from placer.controller.survey import PodEntry
from placer.model.assignment import JobAssignment
from placer.model.cluster import ClusterSnapshot, Node
from placer.model.jobset import pod_host_ports
from placer.model.plan import DomainRef
from placer.model.resources import PODS, ResourceMap, add_resources, pod_request
from placer.model.snapshot import snapshot_from_objects
from placer.model.workload import ReplicatedJobRequest
from placer.solver.context import node_exclusion, node_pod_capacity

__all__ = [
    "HOLD_PREFIX",
    "DomainIndex",
    "OwnUse",
    "domain_id",
    "hold_token",
    "job_problem",
    "own_usage",
    "planning_snapshot",
    "reserve",
]

HOLD_PREFIX = "placer:"


def hold_token(namespace: str, job: str) -> str:
    return f"{HOLD_PREFIX}{namespace}/{job}"


def _pairs(domain: DomainRef) -> tuple[tuple[str, str], ...]:
    pairs = [(str(k), str(v)) for k, v in domain.path]
    if (domain.key, domain.value) not in pairs:
        pairs.append((domain.key, domain.value))
    return tuple(pairs)


def domain_id(domain: DomainRef) -> str:
    return "/".join(v for _, v in _pairs(domain))


class DomainIndex:
    """Node names per domain path, computed once per distinct list of path keys."""

    def __init__(self, snapshot: ClusterSnapshot) -> None:
        self.snapshot = snapshot
        self.nodes: dict[str, Node] = snapshot.by_name()
        self._by_keys: dict[tuple[str, ...], dict[tuple[str, ...], tuple[str, ...]]] = {}

    def members(self, domain: DomainRef) -> tuple[str, ...]:
        """The domain's nodes, sorted by name."""
        pairs = _pairs(domain)
        keys = tuple(k for k, _ in pairs)
        if keys not in self._by_keys:
            groups: dict[tuple[str, ...], list[str]] = {}
            for n in self.snapshot.nodes:
                values = tuple(n.labels.get(k) for k in keys)
                if all(v is not None for v in values):
                    groups.setdefault(values, []).append(n.name)  # type: ignore[arg-type]
            self._by_keys[keys] = {v: tuple(sorted(names)) for v, names in groups.items()}
        return self._by_keys[keys].get(tuple(v for _, v in pairs), ())

    def job_nodes(self, job: JobAssignment) -> tuple[str, ...]:
        """Nodes a recorded child Job holds: its domain, else the nodes its pods were given."""
        if job.domain is not None:
            return self.members(job.domain)
        return tuple(sorted(set(job.nodes.values())))


@dataclass(frozen=True)
class OwnUse:
    """What a JobSet's own running pods take on one node: given back when judging its record."""

    requests: ResourceMap
    ports: frozenset[tuple[int, str]]


def own_usage(pods: Iterable[PodEntry]) -> dict[str, OwnUse]:
    by_node: dict[str, list[PodEntry]] = {}
    for p in pods:
        if p.node and not p.terminal:
            by_node.setdefault(p.node, []).append(p)
    result: dict[str, OwnUse] = {}
    for node, entries in by_node.items():
        spec_list = [e.pod.get("spec") or {} for e in entries]
        requests = add_resources(*({**pod_request(s), PODS: Decimal(1)} for s in spec_list))
        ports = frozenset(p for s in spec_list for p in pod_host_ports(s))
        result[node] = OwnUse(requests=requests, ports=ports)
    return result


def job_problem(
    job: JobAssignment,
    rjob: ReplicatedJobRequest,
    index: DomainIndex,
    own: Mapping[str, OwnUse],
    *,
    extended_resource_toleration: bool,
) -> str | None:
    """Why a recorded child Job can no longer stay where it is, or None while it still fits.

    A domain stays valid while its usable nodes can hold the child Job's pods, counting the room its
    own pods take as free; losing a node it does not need changes nothing. Pinned nodes must all
    still exist and be usable.
    """
    for idx, name in sorted(job.nodes.items()):
        node = index.nodes.get(name)
        if node is None:
            return f"pinned node {name} (pod {idx}) is gone"
        why = node_exclusion(
            node, rjob.pod, extended_resource_toleration=extended_resource_toleration
        )
        if why:
            return f"pinned node {name} (pod {idx}) is excluded: {why}"
    if job.domain is None:
        return None
    members = index.members(job.domain)
    label = domain_id(job.domain)
    if not members:
        return f"domain {label} has no nodes"
    capacity, excluded = 0, dict[str, int]()
    for name in members:
        node = index.nodes[name]
        why = node_exclusion(
            node, rjob.pod, extended_resource_toleration=extended_resource_toleration
        )
        if why:
            excluded[why] = excluded.get(why, 0) + 1
            continue
        use = own.get(name)
        if use is not None:
            node = node.model_copy(
                update={
                    "free": add_resources(node.free, use.requests),
                    "used_host_ports": tuple(p for p in node.used_host_ports if p not in use.ports),
                }
            )
        capacity += node_pod_capacity(node, rjob.pod)
    if capacity >= rjob.pods_per_job:
        return None
    detail = ", ".join(f"{n} {why}" for why, n in sorted(excluded.items()))
    return f"domain {label} fits {capacity} of {rjob.pods_per_job} pods" + (
        f" ({detail})" if detail else ""
    )


def reserve(snapshot: ClusterSnapshot, holders: Mapping[str, Sequence[str]]) -> ClusterSnapshot:
    """The snapshot with holder tokens (`holders`: node -> tokens) added to nodes' `jobsets`."""
    if not holders:
        return snapshot
    nodes = []
    for n in snapshot.nodes:
        extra = holders.get(n.name)
        if extra:
            n = n.model_copy(update={"jobsets": tuple(sorted({*n.jobsets, *extra}))})
        nodes.append(n)
    return snapshot.model_copy(update={"nodes": tuple(nodes)})


def _strip_node_labels(obj: Mapping[str, Any]) -> tuple[Mapping[str, Any], str | None]:
    """The node without the node-selector label and taint, and the holder it implies (if any).

    Under the node-labels binding every managed pod tolerates the taint, and placer's own labels are
    reservations already counted from the records; a label placer did not set (no ownership mark)
    reserves the node for that child Job, as far as placer knows.
    """
    meta = obj.get("metadata") or {}
    labels = meta.get("labels") or {}
    taints = (obj.get("spec") or {}).get("taints") or []
    value = labels.get(NAMESPACED_JOB_LABEL)
    ours = [t for t in taints if isinstance(t, Mapping) and t.get("key") == NO_SCHEDULE_TAINT.key]
    if value is None and not ours:
        return obj, None
    mark = (meta.get("annotations") or {}).get(LABELED_BY_ANNOTATION)
    new_meta = {**meta, "labels": {k: v for k, v in labels.items() if k != NAMESPACED_JOB_LABEL}}
    new_spec = {**(obj.get("spec") or {}), "taints": [t for t in taints if t not in ours]}
    holder = f"label:{value}" if value is not None and value != mark else None
    return {**obj, "metadata": new_meta, "spec": new_spec}, holder


def planning_snapshot(
    state: ClusterState, *, binding: str, levels: Sequence[str] = ()
) -> ClusterSnapshot:
    """The planner's snapshot of the cached objects (node-labels: see `_strip_node_labels`)."""
    nodes: list[Mapping[str, Any]] = []
    holders: dict[str, list[str]] = {}
    for name, raw in sorted(state.nodes.items()):
        obj: Mapping[str, Any] = raw
        if binding == "node-labels":
            obj, holder = _strip_node_labels(raw)
            if holder:
                holders[name] = [holder]
        nodes.append(obj)
    # Only pods bound to a node take room there; the gated ones waiting for a plan are most.
    bound = [p for p in state.pods.values() if (p.get("spec") or {}).get("nodeName")]
    snapshot = snapshot_from_objects(
        nodes, bound, state.priority_classes.values(), source="cluster", levels=levels
    )
    return reserve(snapshot, holders)
