"""Whether a recorded child Job still fits where its record puts it (nodes lost, cordoned, full).

`review.review` asks `job_problem` for every child Job of every record; the JobSet's own running
pods are given back first (`own_usage`), since the room they take is theirs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal

from placer.controller.decide.observe.domains import DomainIndex, domain_id
from placer.controller.decide.observe.survey import PodEntry
from placer.model.assignment import JobAssignment
from placer.model.kube.objects import pod_host_ports
from placer.model.pod_requests import pod_request
from placer.model.resources import PODS, ResourceMap, add_resources
from placer.model.workload import ReplicatedJobRequest
from placer.solver.context import node_exclusion, node_pod_capacity

__all__ = ["OwnUse", "job_problem", "own_usage"]


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
