"""Cluster snapshots from Kubernetes objects: kubectl output, compact descriptions, watch caches.

`snapshot_from_objects` is the one place that turns Node, Pod and PriorityClass objects into the
planner's `ClusterSnapshot` (free capacity = allocatable minus the requests of the non-terminal pods
bound to the node, one `pods` slot each). The controller calls it on its watch cache,
`load_snapshot` on files, `placer.model.snapshots.live` on a live API server, so all three agree.
`snapshot_to_kubectl_list` (in `placer.model.snapshots.kubectl_list`, re-exported here) is the
inverse, used to render the bundled examples and to seed API-server stand-ins in tests.

Objects are read as the typed structs of `placer.model.kube.objects` (a kubectl JSON List in one
decoding call), each Node model is built once (`node_drafts`), and pods are summed per node in
place (`pod_usage`). What the snapshot knows of running JobSets (starts, expected durations,
preemption facts) is `placer.model.snapshots.running`'s.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from placer.model.cluster import ClusterSnapshot, Node, RunningJobSet
from placer.model.errors import InputError
from placer.model.kube.objects import (
    JobSetObject,
    KubeObject,
    NodeObject,
    ObjectMeta,
    PodObject,
    PriorityClassObject,
    decode_kubectl_list,
    read_as,
    read_object,
)
from placer.model.kueue.topology import is_kueue_topology, topology_levels
from placer.model.read.files import read_input
from placer.model.read.manifests import describe_object, expand_paths, object_key, read_documents
from placer.model.snapshots.compact import DESCRIPTION_KIND, parse_description
from placer.model.snapshots.kubectl_list import format_quantity, snapshot_to_kubectl_list
from placer.model.snapshots.node_drafts import NodeDraft, NodeReader
from placer.model.snapshots.pod_usage import apply_pods, pod_owner
from placer.model.snapshots.priority_classes import (
    default_of,
    non_preempting,
    priority_class_values,
)
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


def _running_starts(pods: Iterable[tuple[str, PodObject]]) -> dict[str, RunningJobSet]:
    return running_starts(
        (key, pod.status.phase, pod.status.startTime)
        for source, pod in pods
        if (jobset := pod.metadata.labels.get(JOBSET_NAME_LABEL))
        and pod.status.phase not in TERMINAL_PHASES
        and isinstance(pod.status.startTime, str)
        and (key := pod_owner(source, pod, jobset)) is not None
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
    classes = priority_class_values(class_objs)
    pod_list = [(source, read_as(PodObject, p, source)) for p in pods]
    return ClusterSnapshot(
        nodes=tuple(apply_pods(node_list, pod_list, classes)),
        priority_classes=classes,
        non_preempting_classes=non_preempting(class_objs),
        default_priority_class=default_of(class_objs),
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
    priority_classes = priority_class_values(classes)
    node_list = apply_pods(_check_unique(nodes, ", ".join(sources)), pods, priority_classes)
    return ClusterSnapshot(
        nodes=tuple(node_list),
        priority_classes=priority_classes,
        non_preempting_classes=non_preempting(classes),
        default_priority_class=default_of(classes),
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
