"""The rest of a cluster, simulated on a `MemoryCluster`: JobSet and Job controllers, a scheduler.

The controller only gates, records and labels; something must create pods, bind them and finish
them for a test or the benchmarks' over-time simulation to mean anything. These functions do what
the real components do, as far as placement can tell:

- `create_pods`: JobSet + Job controllers: pods of every child Job of the current restart attempt,
  from the pod template (gates included), with JobSet's labels and the exclusive-topology and
  node-selector annotations it copies (and, for the node-selector strategy, the per-child-Job node
  selector and toleration JobSet adds). tests/cluster/test_simulated_pods.py checks these against
  the pods real JobSet and the job controller make. One difference is kept: with exclusive
  placement by affinity, JobSet admits a child Job's followers only once its leader is scheduled,
  while the simulation creates them at once (the real sequence runs in tests/cluster/).
- `schedule`: kube-scheduler: binds each ungated pending pod to the first node (by name) that is
  ready, schedulable, matches its node selector and required node affinity, tolerates its taints
  and has room; a pod that fits nowhere stays pending.
- `finish`, `restart`, `set_node`: the JobSet ending, a failure-policy restart, a node going bad.
- `node_object`, `jobset_object`: object factories with Kubernetes-looking defaults.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from placer.controller.act.memory_adapter import MemoryCluster
from placer.controller.adapter import Obj
from placer.controller.decide.records.bindings import NAMESPACED_JOB_LABEL, NO_SCHEDULE_TAINT
from placer.model.assignment import PLACEMENT_GATE
from placer.model.kube.pods import (
    COMPLETION_INDEX_LABEL,
    JOB_INDEX_LABEL,
    JOB_NAME_LABEL,
    JOBSET_UID_LABEL,
    REPLICATED_JOB_LABEL,
    RESTART_ATTEMPT_LABEL,
    pod_ref,
)
from placer.model.pod_requests import pod_request
from placer.model.resources import PODS, is_extended_resource, parse_resource_map
from placer.model.scheduling import (
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Taint,
    Toleration,
    matches_term,
    tolerates,
)
from placer.model.snapshots.running import TERMINAL_PHASES
from placer.model.workload import (
    EXCLUSIVE_TOPOLOGY,
    JOBSET_NAME_LABEL,
    NODE_SELECTOR_STRATEGY,
    child_job_name,
)

__all__ = [
    "create_pods",
    "finish",
    "jobset_object",
    "node_object",
    "priority_class_name",
    "priority_class_object",
    "restart",
    "schedule",
    "set_node",
]


def node_object(
    name: str,
    labels: Mapping[str, str] | None = None,
    *,
    allocatable: Mapping[str, str | int] | None = None,
    taints: Sequence[Mapping[str, str]] = (),
) -> Obj:
    alloc = {
        "cpu": "32",
        "memory": "128Gi",
        "pods": "110",
        **{k: str(v) for k, v in (allocatable or {}).items()},
    }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": {"taints": [dict(t) for t in taints]} if taints else {},
        "status": {
            "allocatable": alloc,
            "capacity": dict(alloc),
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def jobset_object(
    name: str,
    *,
    namespace: str = "default",
    replicated_jobs: Sequence[tuple[str, int, int, Mapping[str, str]]] = (
        ("workers", 1, 1, {"cpu": "1"}),
    ),
    exclusive_key: str | None = None,
    gate: bool = True,
    node_selector_strategy: bool = False,
    suspend: bool = False,
    priority: int | None = None,
) -> Obj:
    """`replicated_jobs`: (name, replicas, pods per child Job, per-pod requests). `priority` names
    the class `priority_class_name` gives and states its value, as the API server requires of a
    template stating one; `priority_class_object` is that class."""
    annotations = {}
    if exclusive_key:
        annotations[EXCLUSIVE_TOPOLOGY] = exclusive_key
    if node_selector_strategy:
        annotations[NODE_SELECTOR_STRATEGY] = "true"
    rjobs = []
    for rname, replicas, pods, requests in replicated_jobs:
        pod_spec: dict[str, Any] = {
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "resources": {"requests": dict(requests), "limits": dict(requests)},
                }
            ],
        }
        if gate:
            pod_spec["schedulingGates"] = [{"name": PLACEMENT_GATE}]
        if priority is not None:
            pod_spec["priorityClassName"] = priority_class_name(priority)
            pod_spec["priority"] = priority
        rjobs.append(
            {
                "name": rname,
                "replicas": replicas,
                "template": {
                    "spec": {
                        "parallelism": pods,
                        "completions": pods,
                        "completionMode": "Indexed",
                        "template": {"spec": pod_spec},
                    }
                },
            }
        )
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": name, "namespace": namespace, "annotations": annotations},
        "spec": {"suspend": suspend, "replicatedJobs": rjobs},
    }


def priority_class_name(value: int) -> str:
    """The PriorityClass of value `value` that a simulated JobSet of that priority names."""
    return f"priority-{value}" if value >= 0 else f"priority-minus-{-value}"


def priority_class_object(value: int) -> Obj:
    """The PriorityClass `priority_class_name(value)`: a template may state a `priority` only
    beside a class of that value (the Priority admission plugin refuses its pods otherwise)."""
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": priority_class_name(value)},
        "value": value,
    }


def _suffix(*parts: object) -> str:
    return hashlib.sha1("/".join(map(str, parts)).encode()).hexdigest()[:5]


def _select_labeled_nodes(spec: dict[str, Any], namespace: str, job: str) -> None:
    """What JobSet's node-selector strategy gives each child Job: the label, the toleration."""
    spec.setdefault("nodeSelector", {})[NAMESPACED_JOB_LABEL] = f"{namespace}_{job}"
    spec.setdefault("tolerations", []).append(
        {"key": NO_SCHEDULE_TAINT.key, "operator": "Exists", "effect": "NoSchedule"}
    )


def _exclusive_annotations(js: Obj, rjob: Mapping[str, Any]) -> dict[str, str]:
    """What JobSet copies onto every pod from the JobSet's, then the replicatedJob's, annotations:
    exclusive-topology and, only next to it, the node-selector flag (no other annotation)."""
    copied: dict[str, str] = {}
    for source in (
        js["metadata"].get("annotations") or {},
        ((rjob.get("template") or {}).get("metadata") or {}).get("annotations") or {},
    ):
        if EXCLUSIVE_TOPOLOGY in source:
            copied[EXCLUSIVE_TOPOLOGY] = source[EXCLUSIVE_TOPOLOGY]
            if NODE_SELECTOR_STRATEGY in source:
                copied[NODE_SELECTOR_STRATEGY] = source[NODE_SELECTOR_STRATEGY]
    return copied


def create_pods(cluster: MemoryCluster, namespace: str, name: str) -> list[Obj]:
    """Create the missing pods of the JobSet's current restart attempt; returns the new ones."""
    js = cluster.get("jobsets", name, namespace=namespace)
    status = js.get("status") or {}
    if (js.get("spec") or {}).get("suspend") or status.get("terminalState"):
        return []
    attempt = int(status.get("restarts") or 0)
    uid = js["metadata"]["uid"]
    selector_strategy = NODE_SELECTOR_STRATEGY in (js["metadata"].get("annotations") or {})
    mine = cluster.list("pods", namespace=namespace, label_selector=f"{JOBSET_NAME_LABEL}={name}")
    have = {
        (r.job_name, r.completion_index)
        for p in mine.items
        if (r := pod_ref(p)) is not None and r.restart_attempt == attempt
    }
    created = []
    for rj in js["spec"]["replicatedJobs"]:
        job_spec = rj["template"]["spec"]
        pods = min(job_spec.get("parallelism", 1), job_spec.get("completions", 1))
        for j in range(int(rj.get("replicas", 1))):
            job = child_job_name(name, rj["name"], j)
            for idx in range(pods):
                if (job, idx) in have:
                    continue
                template = job_spec["template"]
                labels = {
                    **((template.get("metadata") or {}).get("labels") or {}),
                    JOBSET_NAME_LABEL: name,
                    JOBSET_UID_LABEL: uid,
                    REPLICATED_JOB_LABEL: rj["name"],
                    JOB_INDEX_LABEL: str(j),
                    RESTART_ATTEMPT_LABEL: str(attempt),
                    COMPLETION_INDEX_LABEL: str(idx),
                    JOB_NAME_LABEL: job,
                }
                pod = {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {
                        "name": f"{job}-{idx}-{_suffix(uid, attempt, idx)}",
                        "namespace": namespace,
                        "labels": labels,
                        "annotations": {
                            **((template.get("metadata") or {}).get("annotations") or {}),
                            **_exclusive_annotations(js, rj),
                        },
                    },
                    "spec": copy.deepcopy(template["spec"]),
                    "status": {"phase": "Pending"},
                }
                if selector_strategy:
                    _select_labeled_nodes(pod["spec"], namespace, job)
                created.append(cluster.create("pods", pod))
    return created


def _terms(spec: Mapping[str, Any]) -> list[NodeSelectorTerm]:
    aff = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    req = aff.get("requiredDuringSchedulingIgnoredDuringExecution") or {}

    def reqs(items: Any) -> tuple[NodeSelectorRequirement, ...]:
        return tuple(
            NodeSelectorRequirement(
                key=r["key"], operator=r["operator"], values=tuple(r.get("values") or ())
            )
            for r in items
        )

    return [
        NodeSelectorTerm(
            match_expressions=reqs(t.get("matchExpressions") or []),
            match_node_names=reqs(t.get("matchFields") or []),
        )
        for t in req.get("nodeSelectorTerms") or []
    ]


def _fits_node(pod: Obj, node: Obj, free: Mapping[str, Decimal]) -> bool:
    spec = pod.get("spec") or {}
    labels = node["metadata"].get("labels") or {}
    conditions = (node.get("status") or {}).get("conditions") or []
    if (node.get("spec") or {}).get("unschedulable") or any(
        c.get("type") == "Ready" and c.get("status") != "True" for c in conditions
    ):
        return False
    if any(labels.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
        return False
    terms = _terms(spec)
    if terms and not any(matches_term(labels, node["metadata"]["name"], t) for t in terms):
        return False
    request = pod_request(spec)
    tolerations = tuple(
        Toleration(**{k: v for k, v in t.items() if k in ("key", "operator", "value", "effect")})
        for t in spec.get("tolerations") or []
    )
    tolerations += tuple(
        Toleration(key=r, operator="Exists") for r in request if is_extended_resource(r)
    )
    for t in (node.get("spec") or {}).get("taints") or []:
        taint = Taint(key=t["key"], value=t.get("value", ""), effect=t["effect"])
        if taint.blocks_scheduling and not tolerates(tolerations, taint):
            return False
    return all(free.get(k, Decimal(0)) >= v for k, v in {**request, PODS: Decimal(1)}.items())


def schedule(cluster: MemoryCluster) -> list[tuple[str, str]]:
    """Bind every schedulable pending pod; returns (pod, node) pairs bound, in pod-name order."""
    nodes = cluster.objects("nodes")
    free = {
        n["metadata"]["name"]: parse_resource_map((n.get("status") or {}).get("allocatable"))
        for n in nodes
    }
    pods = cluster.objects("pods")
    for p in pods:
        node = (p.get("spec") or {}).get("nodeName")
        if node in free and (p.get("status") or {}).get("phase") not in TERMINAL_PHASES:
            for k, v in {**pod_request(p["spec"]), PODS: Decimal(1)}.items():
                free[node][k] = free[node].get(k, Decimal(0)) - v
    bound = []
    for p in pods:
        spec = p.get("spec") or {}
        if (
            spec.get("nodeName")
            or spec.get("schedulingGates")
            or (p.get("status") or {}).get("phase") in TERMINAL_PHASES
        ):
            continue
        for n in nodes:
            name = n["metadata"]["name"]
            if _fits_node(p, n, free[name]):
                for k, v in {**pod_request(spec), PODS: Decimal(1)}.items():
                    free[name][k] = free[name].get(k, Decimal(0)) - v

                def bind(obj: Obj, node: str = name) -> None:
                    obj["spec"]["nodeName"] = node
                    obj["status"] = {**(obj.get("status") or {}), "phase": "Running"}

                cluster.mutate(
                    "pods", p["metadata"]["name"], bind, namespace=p["metadata"]["namespace"]
                )
                bound.append((p["metadata"]["name"], name))
                break
    return bound


def _jobset_pods(cluster: MemoryCluster, namespace: str, name: str) -> list[Obj]:
    selector = f"{JOBSET_NAME_LABEL}={name}"
    return cluster.list("pods", namespace=namespace, label_selector=selector).items


def finish(cluster: MemoryCluster, namespace: str, name: str, state: str = "Completed") -> None:
    """Every pod ends, then the JobSet reports its terminal state."""
    phase = "Succeeded" if state == "Completed" else "Failed"
    for p in _jobset_pods(cluster, namespace, name):

        def end(obj: Obj) -> None:
            obj["status"] = {**(obj.get("status") or {}), "phase": phase}

        cluster.mutate("pods", p["metadata"]["name"], end, namespace=namespace)

    def terminal(obj: Obj) -> None:
        obj["status"] = {
            **(obj.get("status") or {}),
            "terminalState": state,
            "conditions": [{"type": state, "status": "True"}],
        }

    cluster.mutate("jobsets", name, terminal, namespace=namespace)


def restart(cluster: MemoryCluster, namespace: str, name: str) -> list[Obj]:
    """A failure-policy restart: every pod deleted, `status.restarts` + 1, pods recreated."""
    for p in _jobset_pods(cluster, namespace, name):
        cluster.delete("pods", p["metadata"]["name"], namespace=namespace)

    def bump(obj: Obj) -> None:
        status = obj.setdefault("status", {})
        status["restarts"] = int(status.get("restarts") or 0) + 1

    cluster.mutate("jobsets", name, bump, namespace=namespace)
    return create_pods(cluster, namespace, name)


def set_node(
    cluster: MemoryCluster,
    name: str,
    *,
    ready: bool | None = None,
    unschedulable: bool | None = None,
) -> None:
    def change(obj: Obj) -> None:
        if ready is not None:
            obj.setdefault("status", {})["conditions"] = [
                {"type": "Ready", "status": "True" if ready else "False"}
            ]
        if unschedulable is not None:
            obj.setdefault("spec", {})["unschedulable"] = unschedulable

    cluster.mutate("nodes", name, change)
