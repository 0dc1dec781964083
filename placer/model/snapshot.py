"""Cluster snapshots from Kubernetes objects: kubectl output, compact descriptions, watch caches.

`snapshot_from_objects` is the one place that turns Node, Pod and PriorityClass objects into the
planner's `ClusterSnapshot` (free capacity = allocatable minus the requests of the non-terminal
pods bound to the node, one `pods` slot each). The controller calls it on its watch cache,
`load_snapshot` on files, `placer.model.live` on a live API server, so all three agree.
`snapshot_to_kubectl_list` is the inverse, used to render the bundled examples and to seed
API-server stand-ins in tests.

Objects are read through `placer.model.kube_objects` (fast field checks, pydantic's errors), each
Node model is built once, and pods are summed per node in place: a 10,000-node kubectl dump
loads in about two seconds.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from placer.model.cluster import ClusterSnapshot, JobSetUsage, Node
from placer.model.compact import DESCRIPTION_KIND, parse_description
from placer.model.errors import InputError
from placer.model.kube_objects import PodFootprints, read_node, read_pod, read_priority_class
from placer.model.manifests import (
    describe_object,
    object_key,
    parsed_as_json,
    paused_gc,
    read_documents,
)
from placer.model.resources import (
    PODS,
    ResourceMap,
    is_extended_resource,
    parse_resource_map,
    subtract_resources,
)
from placer.model.scheduling import Taint
from placer.model.workload import JOBSET_NAME_LABEL

__all__ = [
    "TERMINAL_PHASES",
    "format_quantity",
    "load_snapshot",
    "snapshot_from_objects",
    "snapshot_to_kubectl_list",
]

log = logging.getLogger(__name__)

JOBSET_PRIORITY_LABEL = "jobset.sigs.k8s.io/priority"
"""The label JobSet puts on its pods with their priority (a running JobSet's priority, if no
`spec.priority`)."""

TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})
"""Pods in these phases hold no capacity."""

_ZERO = Decimal(0)


def _unknown(source: str) -> bool:
    """Objects handed in (watch caches, the live loader): nothing is known of their keys."""
    return False


@dataclass(frozen=True, slots=True)
class _NodeDraft:
    """A Node object read, its model not built yet: built once, after its pods are counted,
    instead of built bare and then copied with new free capacity."""

    name: str
    labels: dict[str, str]
    taints: tuple[Taint, ...]
    allocatable: ResourceMap
    ready: bool
    unschedulable: bool

    def build(
        self,
        free: ResourceMap,
        used_host_ports: tuple[tuple[int, str], ...] = (),
        jobsets: tuple[str, ...] = (),
        jobset_usage: dict[str, JobSetUsage] | None = None,
    ) -> Node:
        """The Node; without `jobset_usage`, a node without pods (those fields left unset)."""
        pods: dict[str, Any] = (
            {}
            if jobset_usage is None
            else {
                "used_host_ports": used_host_ports,
                "jobsets": jobsets,
                "jobset_usage": jobset_usage,
            }
        )
        return Node(
            name=self.name,
            labels=self.labels,
            taints=self.taints,
            allocatable=self.allocatable,
            free=free,
            ready=self.ready,
            unschedulable=self.unschedulable,
            **pods,
        )


def _node(
    obj: Mapping[str, Any],
    source: str,
    taints: dict[tuple[str, str, str], Taint],
    keys_are_strings: Callable[[str], bool],
) -> _NodeDraft:
    """A Node object read; `taints` shares equal Taints across nodes."""
    n = read_node(obj, source, keys_are_strings=keys_are_strings(source))
    allocatable = parse_resource_map(
        n.allocatable, source=source, obj=object_key(obj), field="status.allocatable"
    )
    node_taints: list[Taint] = []
    for t in n.taints:
        taint = taints.get(t)
        if taint is None:
            taint = taints[t] = Taint(key=t[0], value=t[1], effect=t[2])  # type: ignore[arg-type]
        node_taints.append(taint)
    return _NodeDraft(
        name=n.name,
        labels=dict(sorted(n.labels.items())),
        taints=tuple(node_taints),
        allocatable=allocatable,
        # A node object without conditions (hand-written, or from a simulator) counts as ready.
        ready=all(status == "True" for kind, status in n.conditions if kind == "Ready"),
        unschedulable=n.unschedulable,
    )


def _pod_priority(
    obj: Mapping[str, Any], labels: Mapping[str, str], classes: Mapping[str, int]
) -> int | None:
    """A running pod's priority: `spec.priority` (set by admission), JobSet's priority label,
    or its PriorityClass; None when nothing says."""
    spec = obj.get("spec") or {}
    if isinstance(spec.get("priority"), int) and not isinstance(spec.get("priority"), bool):
        return int(spec["priority"])
    label = labels.get(JOBSET_PRIORITY_LABEL)
    if label is not None and label.lstrip("-").isdigit():
        return int(label)
    name = spec.get("priorityClassName")
    return classes.get(name) if isinstance(name, str) else None


def _apply_pods(
    nodes: Sequence[Node | _NodeDraft],
    pods: Iterable[tuple[str, Mapping[str, Any]]],
    classes: Mapping[str, int] | None = None,
    keys_are_strings: Callable[[str], bool] = _unknown,
) -> list[Node]:
    """Subtract the non-terminal pods bound to each node; collect host ports and JobSet owners,
    and what each JobSet's pods use per node (for what-ifs that let a JobSet finish).

    Nodes from a compact description come as models (copied with the pods' usage added), nodes
    from API objects as drafts (built once, here). `keys_are_strings(source)` says whether the
    objects of a source came from the JSON parser (see `read_pod`)."""
    index = {n.name: i for i, n in enumerate(nodes)}
    used: dict[str, ResourceMap] = {}
    ports: dict[str, set[tuple[int, str]]] = {}
    owners: dict[str, set[str]] = {}
    usage: dict[str, dict[str, _Usage]] = {}
    footprint = PodFootprints()
    for source, obj in pods:
        pod = read_pod(obj, source, keys_are_strings=keys_are_strings(source))
        node = pod.node_name
        if pod.phase in TERMINAL_PHASES or not node:
            continue
        if node not in index:
            log.debug(
                "%s: pod %s is bound to unknown node %s; ignored", source, object_key(obj), node
            )
            continue
        request, pod_ports = footprint(obj, source)
        _accumulate(used.setdefault(node, {}), request)
        if pod_ports:
            ports.setdefault(node, set()).update(pod_ports)
        jobset = pod.labels.get(JOBSET_NAME_LABEL)
        if jobset:
            owner = f"{pod.namespace}/{jobset}"
            owners.setdefault(node, set()).add(owner)
            entry = usage.setdefault(node, {}).setdefault(owner, _Usage())
            _accumulate(entry.requests, request)
            entry.ports.update(pod_ports)
            priority = _pod_priority(obj, pod.labels, classes or {})
            if priority is not None:
                entry.priority = max(
                    priority, entry.priority if entry.priority is not None else priority
                )
    result: list[Node] = []
    for n in nodes:
        total = used.get(n.name)
        if total is None:
            result.append(n.build(dict(n.allocatable)) if isinstance(n, _NodeDraft) else n)
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
        if isinstance(n, _NodeDraft):
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


def _priority_classes(objs: Iterable[tuple[str, Mapping[str, Any]]]) -> dict[str, int]:
    result: dict[str, int] = {}
    for source, obj in objs:
        name, value = read_priority_class(obj, source)
        result[name] = value
    return dict(sorted(result.items()))


def snapshot_from_objects(
    nodes: Iterable[Mapping[str, Any]],
    pods: Iterable[Mapping[str, Any]],
    priority_classes: Iterable[Mapping[str, Any]] = (),
    *,
    source: str = "",
    levels: Sequence[str] = (),
) -> ClusterSnapshot:
    """Snapshot from Node, Pod and PriorityClass objects (dicts in API JSON shape)."""
    taints: dict[tuple[str, str, str], Taint] = {}
    node_list = _check_unique([_node(obj, source, taints, _unknown) for obj in nodes], source)
    classes = _priority_classes((source, p) for p in priority_classes)
    return ClusterSnapshot(
        nodes=tuple(_apply_pods(node_list, ((source, p) for p in pods), classes)),
        priority_classes=classes,
        levels=tuple(levels),
        source=source,
    )


def _check_unique(nodes: list[Node | _NodeDraft], source: str) -> list[Node | _NodeDraft]:
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
    with paused_gc():
        return _load_snapshot(paths)


def _load_snapshot(paths: Sequence[str | Path]) -> ClusterSnapshot:
    nodes: list[Node | _NodeDraft] = []
    pods: list[tuple[str, Mapping[str, Any]]] = []
    classes: dict[str, int] = {}
    taints: dict[tuple[str, str, str], Taint] = {}
    levels: tuple[str, ...] = ()
    sources = [str(p) for p in paths]
    for source, doc in read_documents(paths):
        kind = doc.get("kind")
        if kind == DESCRIPTION_KIND:
            part = parse_description(doc, source=source)
            nodes.extend(part.nodes)
            classes.update(part.priority_classes)
            if part.levels and levels and part.levels != levels:
                log.warning(
                    "%s: levels %s differ from earlier %s; keeping the earlier",
                    source,
                    list(part.levels),
                    list(levels),
                )
            levels = levels or part.levels
        elif kind == "Node":
            nodes.append(_node(doc, source, taints, parsed_as_json))
        elif kind == "Pod":
            pods.append((source, doc))
        elif kind == "PriorityClass":
            classes.update(_priority_classes([(source, doc)]))
        elif kind == "JobSet":
            # `kubectl get nodes,pods,priorityclasses,jobsets -A -o json` (the README's command)
            # carries them: pending JobSets come from the JOBSETS arguments, running ones from pods
            log.debug("%s: JobSet %s in the snapshot not read", source, object_key(doc))
        else:
            log.warning("%s: skipping %s", source, describe_object(doc))
    if not nodes:
        raise InputError(
            "no Node objects and no ClusterDescription found",
            source=", ".join(sources),
            code="no-nodes",
        )
    return ClusterSnapshot(
        nodes=tuple(
            _apply_pods(_check_unique(nodes, ", ".join(sources)), pods, classes, parsed_as_json)
        ),
        priority_classes=dict(sorted(classes.items())),
        levels=levels,
        source=", ".join(sources),
    )


# --- rendering back to kubectl shape -----------------------------------------------------------


def format_quantity(value: Decimal) -> str:
    """Kubernetes-style text for a quantity: `400Gi`, `500m`, `110`."""
    if value == value.to_integral_value():
        n = int(value)
        for suffix, unit in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20)):
            if n >= unit and n % unit == 0:
                return f"{n // unit}{suffix}"
        return str(n)
    milli = value * 1000
    if milli == milli.to_integral_value():
        return f"{int(milli)}m"
    return str(value)


def _quantities(m: Mapping[str, Decimal]) -> dict[str, str]:
    return {k: format_quantity(v) for k, v in sorted(m.items())}


def _node_object(n: Node) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if n.taints:
        spec["taints"] = [
            t.model_dump(exclude_defaults=True) | {"effect": t.effect} for t in n.taints
        ]
    if n.unschedulable:
        spec["unschedulable"] = True
    ready = {
        "type": "Ready",
        "status": "True" if n.ready else "False",
        "reason": "KubeletReady" if n.ready else "KubeletNotReady",
    }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": n.name, "labels": dict(sorted(n.labels.items()))},
        "spec": spec,
        "status": {
            "allocatable": _quantities(n.allocatable),
            "capacity": _quantities(n.allocatable),
            "conditions": [ready],
        },
    }


def _pod_object(
    name: str,
    namespace: str,
    node: str,
    requests: Mapping[str, Decimal],
    jobset: str | None,
    ports: Sequence[tuple[int, str]] = (),
    priority: int | None = None,
) -> dict[str, Any]:
    extended = {k: v for k, v in requests.items() if is_extended_resource(k)}
    plain = {k: v for k, v in requests.items() if k not in extended}
    resources: dict[str, Any] = {}
    if plain:
        resources["requests"] = _quantities(plain)
    if extended:
        resources["limits"] = _quantities(extended)
    container: dict[str, Any] = {"name": "main", "image": "busybox", "resources": resources}
    if ports:
        container["ports"] = [
            {"containerPort": p, "hostPort": p, "protocol": proto} for p, proto in ports
        ]
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if jobset:
        meta["labels"] = {JOBSET_NAME_LABEL: jobset}
    spec: dict[str, Any] = {"nodeName": node, "containers": [container]}
    if priority is not None:
        spec["priority"] = priority
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": spec,
        "status": {"phase": "Running"},
    }


def snapshot_to_kubectl_list(snapshot: ClusterSnapshot) -> dict[str, Any]:
    """Render as `kubectl get nodes,pods,priorityclasses -A -o json` would: a v1 List.

    Each node's used capacity (allocatable - free) becomes pods. A JobSet whose usage on the node
    is known (`Node.jobset_usage`) gets one pod per `pods` slot it uses, the first carrying its
    requests, host ports and priority; the first JobSet without known usage gets what is left
    (older snapshots); unlabeled `kube-system` pods take leftover pod slots and usage without a
    JobSet. Loading the list back gives the same nodes.
    """
    nodes: list[dict[str, Any]] = []
    pods: list[dict[str, Any]] = []
    counters: dict[str, int] = {}

    def add(
        jobset: str,
        requests: Mapping[str, Decimal],
        ports: Sequence[tuple[int, str]],
        priority: int | None,
        node: str,
    ) -> None:
        namespace, _, name = jobset.rpartition("/")
        k = counters[jobset] = counters.get(jobset, -1) + 1
        pods.append(
            _pod_object(
                f"{name}-worker-{k}", namespace or "default", node, requests, name, ports, priority
            )
        )

    for n in sorted(snapshot.nodes, key=lambda n: n.name):
        nodes.append(_node_object(n))
        used = {k: v for k, v in subtract_resources(n.allocatable, n.free).items() if v != 0}
        ports: tuple[tuple[int, str], ...] = n.used_host_ports
        known = [j for j in n.jobsets if j in n.jobset_usage]
        for jobset in known:
            u = n.jobset_usage[jobset]
            requests = {k: v for k, v in u.requests.items() if k != PODS and v != 0}
            used = {k: v for k, v in subtract_resources(used, u.requests).items() if v != 0}
            ports = tuple(p for p in ports if p not in u.host_ports)
            for i in range(max(1, int(u.requests.get(PODS, Decimal(1))))):
                add(
                    jobset,
                    requests if i == 0 else {},
                    u.host_ports if i == 0 else (),
                    u.priority,
                    n.name,
                )
        slots = int(used.pop(PODS, Decimal(0)))
        for jobset in (j for j in n.jobsets if j not in n.jobset_usage):
            add(jobset, used, ports, None, n.name)
            used, slots, ports = {}, slots - 1, ()
        filler = 0
        while slots > 0 or used or ports:
            name = f"system-{n.name}-{filler}"
            pods.append(_pod_object(name, "kube-system", n.name, used, None, ports))
            used, slots, ports, filler = {}, slots - 1, (), filler + 1
    classes = [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": value,
        }
        for name, value in sorted(snapshot.priority_classes.items())
    ]
    return {
        "apiVersion": "v1",
        "kind": "List",
        "metadata": {"resourceVersion": ""},
        "items": [*nodes, *pods, *classes],
    }
