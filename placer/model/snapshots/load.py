"""Cluster snapshots from Kubernetes objects: kubectl output, compact descriptions, watch caches.

`snapshot_from_objects` is the one place that turns Node, Pod and PriorityClass objects into the
planner's `ClusterSnapshot` (free capacity = allocatable minus the requests of the non-terminal pods
bound to the node, one `pods` slot each). The controller calls it on its watch cache,
`load_snapshot` on files, `placer.model.snapshots.live` on a live API server, so all three agree.
`snapshot_to_kubectl_list` (in `placer.model.snapshots.kubectl_list`, re-exported here) is the
inverse, used to render the bundled examples and to seed API-server stand-ins in tests.

Objects are read as the typed structs of `placer.model.kube.objects` (a kubectl JSON List in one
decoding call), each Node model is built once, and pods are summed per node in place. What the
snapshot knows of running JobSets (starts, expected durations, preemption facts) is
`placer.model.snapshots.running`'s.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from placer.model.cluster import ClusterSnapshot, JobSetUsage, Node, RunningJobSet
from placer.model.errors import InputError
from placer.model.kube.objects import (
    Footprint,
    JobSetObject,
    KubeObject,
    NodeObject,
    ObjectMeta,
    PodObject,
    PriorityClassObject,
    decode_kubectl_list,
    footprint_signature,
    pod_footprint,
    read_as,
    read_object,
)
from placer.model.kueue.topology import is_kueue_topology, topology_levels
from placer.model.messages import echo
from placer.model.read.files import read_input
from placer.model.read.limits import INT32_MAX
from placer.model.read.manifests import describe_object, expand_paths, object_key, read_documents
from placer.model.read.names import (
    check,
    dns1123_label_problem,
    dns1123_subdomain_problem,
)
from placer.model.resources import (
    ResourceMap,
    subtract_resources,
)
from placer.model.snapshots.compact import DESCRIPTION_KIND, parse_description
from placer.model.snapshots.kubectl_list import format_quantity, snapshot_to_kubectl_list
from placer.model.snapshots.node_drafts import NodeDraft, NodeReader
from placer.model.snapshots.running import (
    TERMINAL_PHASES,
    running_starts,
    with_expected_durations,
    with_preemption_facts,
)
from placer.model.workload import JOBSET_NAME_LABEL

__all__ = [
    "format_quantity",
    "load_snapshot",
    "snapshot_from_objects",
    "snapshot_to_kubectl_list",
]

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


def _owner(source: str, pod: PodObject, jobset: str) -> str | None:
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


def _footprints() -> Callable[[str, PodObject], Footprint]:
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


def _apply_pods(
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
    footprint = _footprints()
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
        owner = _owner(source, pod, jobset) if jobset else None
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


def _running_starts(pods: Iterable[tuple[str, PodObject]]) -> dict[str, RunningJobSet]:
    return running_starts(
        (key, pod.status.phase, pod.status.startTime)
        for source, pod in pods
        if (jobset := pod.metadata.labels.get(JOBSET_NAME_LABEL))
        and pod.status.phase not in TERMINAL_PHASES
        and isinstance(pod.status.startTime, str)
        and (key := _owner(source, pod, jobset)) is not None
    )


def _with_durations(
    running: dict[str, RunningJobSet],
    objects: Sequence[tuple[str, JobSetObject]],
    nodes: Sequence[Node],
) -> dict[str, RunningJobSet]:
    """Running JobSets' expected durations from the JobSet objects in the snapshot."""
    holders = {k for n in nodes for k in n.jobsets}
    manifests = [
        (source, key, {"metadata": {"annotations": obj.metadata.annotations}, "spec": obj.spec})
        for source, obj in objects
        if (key := f"{obj.metadata.namespace}/{obj.metadata.name}") in holders
    ]
    return with_preemption_facts(with_expected_durations(running, manifests), manifests)


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


def _priority_classes(objs: Iterable[tuple[str, PriorityClassObject]]) -> dict[str, int]:
    """name -> value, sorted by name; a later definition wins. Names are DNS-1123 subdomains and
    values int32, as the API server has them."""
    result: dict[str, int] = {}
    for source, pc in objs:
        name = pc.metadata.name
        obj = f"PriorityClass/{echo(name, quote=False)}"
        check(dns1123_subdomain_problem, name, source=source, obj=obj, field="metadata.name")
        if not -INT32_MAX - 1 <= pc.value <= INT32_MAX:
            raise InputError(
                f"must be an int32 ({-INT32_MAX - 1} .. {INT32_MAX}), got {echo(pc.value)}",
                source=source,
                obj=obj,
                field="value",
                code="priority-class",
            )
        result[name] = pc.value
    return dict(sorted(result.items()))


def _non_preempting(objs: Iterable[tuple[str, PriorityClassObject]]) -> tuple[str, ...]:
    """Names of the PriorityClasses with `preemptionPolicy: Never`, sorted."""
    return tuple(sorted({pc.metadata.name for _, pc in objs if pc.preemptionPolicy == "Never"}))


def snapshot_from_objects(
    nodes: Iterable[Mapping[str, Any]],
    pods: Iterable[Mapping[str, Any]],
    priority_classes: Iterable[Mapping[str, Any]] = (),
    *,
    source: str = "",
    levels: Sequence[str] = (),
    kueue_topology: str = "",
) -> ClusterSnapshot:
    """Snapshot from Node, Pod and PriorityClass objects (dicts in API JSON shape; a watch
    cache's list items need no `kind`)."""
    read_node = NodeReader()
    node_list = _check_unique(
        [read_node(read_as(NodeObject, obj, source), source) for obj in nodes], source
    )
    class_objs = [(source, read_as(PriorityClassObject, p, source)) for p in priority_classes]
    classes = _priority_classes(class_objs)
    pod_list = [(source, read_as(PodObject, p, source)) for p in pods]
    return ClusterSnapshot(
        nodes=tuple(_apply_pods(node_list, pod_list, classes)),
        priority_classes=classes,
        non_preempting_classes=_non_preempting(class_objs),
        running=_running_starts(pod_list),
        levels=tuple(levels),
        kueue_topology=kueue_topology,
        source=source,
    )


def _check_unique(nodes: list[Node | NodeDraft], source: str) -> list[Node | NodeDraft]:
    seen: set[str] = set()
    for n in nodes:
        if n.name in seen:
            raise InputError(
                "node defined twice", source=source, obj=f"Node/{n.name}", code="duplicate"
            )
        seen.add(n.name)
    return nodes


def load_snapshot(paths: Sequence[str | Path]) -> ClusterSnapshot:
    """Snapshot from files: kubectl JSON/YAML (Lists, NodeList/PodList, single objects) and/or
    compact cluster descriptions, merged. Pods in any file count against nodes from any file."""
    nodes: list[Node | NodeDraft] = []
    pods: list[tuple[str, PodObject]] = []
    classes: list[tuple[str, PriorityClassObject]] = []
    jobset_objects: list[tuple[str, JobSetObject]] = []
    read_node = NodeReader()
    levels: tuple[str, ...] = ()
    kueue_topology = ""
    described: dict[str, RunningJobSet] = {}
    """Running JobSets a cluster description dates or annotates."""
    sources = [str(p) for p in paths]
    for source, obj in _objects(paths):
        if isinstance(obj, NodeObject):
            nodes.append(read_node(obj, source))
        elif isinstance(obj, PodObject):
            pods.append((source, obj))
        elif isinstance(obj, PriorityClassObject):
            classes.append((source, obj))
        elif isinstance(obj, JobSetObject):
            jobset_objects.append((source, obj))
        elif isinstance(obj, Mapping) and is_kueue_topology(obj):
            part_levels = topology_levels(obj, source=source)
            if levels and part_levels != levels:
                log.warning(
                    "%s: levels %s differ from earlier %s; keeping the earlier",
                    source,
                    list(part_levels),
                    list(levels),
                )
            elif not levels:
                levels, kueue_topology = part_levels, object_key(obj)
        else:
            part = parse_description(obj, source=source)
            nodes.extend(part.nodes)
            described.update(part.running)
            classes.extend(
                (source, PriorityClassObject(ObjectMeta(name), value))
                for name, value in part.priority_classes.items()
            )
            if part.levels and levels and part.levels != levels:
                log.warning(
                    "%s: levels %s differ from earlier %s; keeping the earlier",
                    source,
                    list(part.levels),
                    list(levels),
                )
            levels = levels or part.levels
    if not nodes:
        raise InputError(
            "no Node objects and no ClusterDescription found",
            source=", ".join(sources),
            code="no-nodes",
        )
    priority_classes = _priority_classes(classes)
    node_list = _apply_pods(_check_unique(nodes, ", ".join(sources)), pods, priority_classes)
    return ClusterSnapshot(
        nodes=tuple(node_list),
        priority_classes=priority_classes,
        non_preempting_classes=_non_preempting(classes),
        running=_with_durations({**described, **_running_starts(pods)}, jobset_objects, node_list),
        levels=levels,
        kueue_topology=kueue_topology,
        source=", ".join(sources),
    )


def _objects(
    paths: Sequence[str | Path],
) -> Iterator[tuple[str, KubeObject | JobSetObject | Mapping[str, Any]]]:
    """(source, object) of every file in order: Nodes, Pods and PriorityClasses as structs,
    cluster descriptions and Kueue Topologies as mappings; other kinds are skipped with a warning.

    A kubectl JSON List is decoded in one call; any other file (YAML, a single JSON object, a
    JSON List holding other kinds or something wrong) object by object, which names what is
    wrong."""
    for path in expand_paths(paths):
        source = str(path)
        if path.suffix == ".json":
            items = decode_kubectl_list(read_input(path))
            if items is not None:
                for item in items:
                    yield source, item
                continue
        for _, doc in read_documents([path]):
            if doc.get("kind") == DESCRIPTION_KIND or is_kueue_topology(doc):
                yield source, doc
                continue
            obj = read_object(doc, source)
            if obj is not None:
                yield source, obj
            elif doc.get("kind") == "JobSet":
                # `kubectl get nodes,pods,priorityclasses,jobsets -A -o json` (the README's
                # command) carries them: pending JobSets come from the JOBSETS arguments; the
                # running ones' expected durations come from here
                yield source, read_as(JobSetObject, doc, source)
            else:
                log.warning("%s: skipping %s", source, describe_object(doc))
