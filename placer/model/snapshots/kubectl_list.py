"""A cluster snapshot rendered back as kubectl would list it: the inverse of the snapshot loader.

`snapshot_to_kubectl_list` renders the bundled examples and seeds the API-server stand-ins of
tests; loading its output back with `placer.model.snapshots.load` gives the same nodes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from placer.model.cluster import ClusterSnapshot, Node
from placer.model.resources import PODS, overcommit_allowed, subtract_resources
from placer.model.workload import JOBSET_NAME_LABEL

__all__ = ["format_quantity", "snapshot_to_kubectl_list"]


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
    # Extended resources and hugepages are requested exactly as limited, so a limit states them
    # (the API server refuses a request of them without one).
    exact = {k: v for k, v in requests.items() if not overcommit_allowed(k)}
    plain = {k: v for k, v in requests.items() if k not in exact}
    resources: dict[str, Any] = {}
    if plain:
        resources["requests"] = _quantities(plain)
    if exact:
        resources["limits"] = _quantities(exact)
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
            **({"globalDefault": True} if name == snapshot.default_priority_class else {}),
            **({"preemptionPolicy": "Never"} if name in snapshot.non_preempting_classes else {}),
        }
        for name, value in sorted(snapshot.priority_classes.items())
    ]
    return {
        "apiVersion": "v1",
        "kind": "List",
        "metadata": {"resourceVersion": ""},
        "items": [*nodes, *pods, *classes],
    }
