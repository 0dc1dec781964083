"""What the pods bound to each node use: the node's free capacity, host ports and JobSets.

`load.snapshot_from_objects` hands every non-terminal pod here once (`apply_pods`): its requests
are subtracted from its node's allocatable, its host ports and its JobSet (by the JobSet name
label, only when that names a valid JobSet) recorded, and what each JobSet's pods use per node kept
for what-ifs that let a JobSet finish. A fleet runs the same few pod specs thousands of times, so
each distinct footprint is computed once (`footprints`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from placer.model.cluster import JobSetUsage, Node
from placer.model.kube.objects import Footprint, PodObject, footprint_signature, pod_footprint
from placer.model.messages import echo
from placer.model.read.names import dns1123_label_problem, dns1123_subdomain_problem
from placer.model.resources import ResourceMap, subtract_resources
from placer.model.snapshots.node_drafts import NodeDraft
from placer.model.snapshots.running import TERMINAL_PHASES
from placer.model.workload import JOBSET_NAME_LABEL

__all__ = ["JOBSET_PRIORITY_LABEL", "apply_pods", "footprints", "pod_owner"]

log = logging.getLogger(__name__)

JOBSET_PRIORITY_LABEL = "jobset.sigs.k8s.io/priority"
"""The label JobSet puts on its pods with their priority (a running JobSet's priority, if no
`spec.priority`)."""

_ZERO = Decimal(0)


def _pod_priority(pod: PodObject, classes: Mapping[str, int]) -> int | None:
    """A running pod's priority: `spec.priority` (set by admission), JobSet's priority label,
    or its PriorityClass; None when nothing says."""
    priority = pod.spec.priority
    if isinstance(priority, int) and not isinstance(priority, bool):
        return priority
    label = pod.metadata.labels.get(JOBSET_PRIORITY_LABEL)
    if label is not None and label.isascii() and label.lstrip("-").isdigit():
        return int(label)
    name = pod.spec.priorityClassName
    return classes.get(name) if isinstance(name, str) else None


def pod_owner(source: str, pod: PodObject, jobset: str) -> str | None:
    """`namespace/name` of the JobSet a running pod belongs to, or None when the pair is no
    JobSet's (its label names no valid JobSet: anyone may label a pod, and such a pod must
    neither hold a domain nor stop a controller that reads the cluster every cycle)."""
    namespace = pod.metadata.namespace
    if dns1123_label_problem(namespace) or dns1123_subdomain_problem(jobset):  # cached: cheap
        log.debug(
            "%s: pod %s/%s: label %s=%s names no JobSet; counted as a pod of no JobSet",
            source,
            echo(namespace, quote=False),
            echo(pod.metadata.name, quote=False),
            JOBSET_NAME_LABEL,
            echo(jobset, quote=False),
        )
        return None
    return f"{namespace}/{jobset}"


def footprints() -> Callable[[str, PodObject], Footprint]:
    """`pod_footprint`, computed once per distinct signature: a fleet runs the same few
    DaemonSet and JobSet pod specs thousands of times (benchmarks/RESULTS-speed.md, "snapshot
    decoding": a 50,000-node load takes 7.6 s of CPU without it, 3.5 s with it). Only successes
    are kept, so a bad pod's error names that pod."""
    known: dict[bytes, Footprint] = {}

    def footprint(source: str, pod: PodObject) -> Footprint:
        key = footprint_signature(pod)
        found = known.get(key) if key is not None else None
        if found is None:
            found = pod_footprint(pod, source)
            if key is not None:
                known[key] = found
        return found

    return footprint


def apply_pods(
    nodes: Sequence[Node | NodeDraft],
    pods: Iterable[tuple[str, PodObject]],
    classes: Mapping[str, int] | None = None,
) -> list[Node]:
    """Subtract the non-terminal pods bound to each node; collect host ports and JobSet owners,
    and what each JobSet's pods use per node (for what-ifs that let a JobSet finish).

    Nodes from a compact description come as models (copied with the pods' usage added), nodes
    from API objects as drafts (built once, here)."""
    index = {n.name: i for i, n in enumerate(nodes)}
    used: dict[str, ResourceMap] = {}
    ports: dict[str, set[tuple[int, str]]] = {}
    owners: dict[str, set[str]] = {}
    usage: dict[str, dict[str, _Usage]] = {}
    footprint = footprints()
    for source, pod in pods:
        node = pod.spec.nodeName
        if pod.status.phase in TERMINAL_PHASES or not node:
            continue
        if node not in index:
            log.debug(
                "%s: pod %s/%s is bound to unknown node %s; ignored",
                source,
                pod.metadata.namespace,
                pod.metadata.name,
                node,
            )
            continue
        request, pod_ports = footprint(source, pod)
        _accumulate(used.setdefault(node, {}), request)
        if pod_ports:
            ports.setdefault(node, set()).update(pod_ports)
        jobset = pod.metadata.labels.get(JOBSET_NAME_LABEL)
        owner = pod_owner(source, pod, jobset) if jobset else None
        if owner is not None:
            owners.setdefault(node, set()).add(owner)
            entry = usage.setdefault(node, {}).setdefault(owner, _Usage())
            _accumulate(entry.requests, request)
            entry.ports.update(pod_ports)
            priority = _pod_priority(pod, classes or {})
            if priority is not None:
                entry.priority = max(
                    priority, entry.priority if entry.priority is not None else priority
                )
    result: list[Node] = []
    for n in nodes:
        total = used.get(n.name)
        if total is None:
            result.append(n.build(dict(n.allocatable)) if isinstance(n, NodeDraft) else n)
            continue
        # Only what the node offers can be used up; anything else the pod asks is not ours to count.
        total = {k: v for k, v in total.items() if k in n.allocatable}
        per_jobset = {
            owner: JobSetUsage(
                requests={k: v for k, v in sorted(u.requests.items()) if k in n.allocatable},
                host_ports=tuple(sorted(u.ports)),
                priority=u.priority,
            )
            for owner, u in sorted(usage.get(n.name, {}).items())
        }
        if isinstance(n, NodeDraft):
            result.append(
                n.build(
                    free=subtract_resources(n.allocatable, total),
                    used_host_ports=tuple(sorted(ports.get(n.name, ()))),
                    jobsets=tuple(sorted(owners.get(n.name, ()))),
                    jobset_usage=per_jobset,
                )
            )
            continue
        result.append(
            n.model_copy(
                update={
                    "free": subtract_resources(n.free, total),
                    "used_host_ports": tuple(sorted({*n.used_host_ports, *ports.get(n.name, ())})),
                    "jobsets": tuple(sorted({*n.jobsets, *owners.get(n.name, ())})),
                    "jobset_usage": {**n.jobset_usage, **per_jobset},
                }
            )
        )
    return result


def _accumulate(total: ResourceMap, request: Mapping[str, Decimal]) -> None:
    """`add_resources` in place: the same additions in the same order, without a copy per pod."""
    for name, value in request.items():
        total[name] = total.get(name, _ZERO) + value


@dataclass
class _Usage:
    requests: ResourceMap = field(default_factory=dict)
    """Summed requests of the JobSet's pods on the node."""
    ports: set[tuple[int, str]] = field(default_factory=set)
    priority: int | None = None
