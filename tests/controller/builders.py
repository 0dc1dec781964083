"""Small clusters and JobSets for the controller tests, and the checks every scenario ends with.

A TPU-style cluster: `blocks` topology blocks (label `BLOCK`) of `per_block` nodes, each node with
4 chips. A JobSet's child Jobs are exclusive per block, so "which block" is the whole placement.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from benchmarks.simulate import cluster_sim as sim
from placer.controller.act.cache import ClusterCache
from placer.controller.act.memory_adapter import MemoryCluster
from placer.controller.adapter import ClusterAdapter, Obj
from placer.controller.decide.observe.domains import DomainIndex
from placer.controller.decide.observe.kueue import KueueView
from placer.controller.decide.observe.snapshot import planning_snapshot
from placer.controller.decide.observe.state import ClusterState
from placer.controller.decide.observe.survey import ManagedJobSet
from placer.controller.decide.observe.survey import jobset_pods as survey_pods
from placer.controller.decide.observed import Observed, Reviewed
from placer.controller.decide.records.ledger import Ledger
from placer.controller.decide.review.ledgerplan import LedgerView
from placer.controller.decide.review.review import Review
from placer.controller.reconcile import Clocks, Controller, ControllerConfig, CycleReport
from placer.model.assignment import ASSIGNMENT_ANNOTATION, PLACEMENT_GATE, Assignment, JobAssignment
from placer.model.options import SolveOptions
from placer.model.plan import DomainRef
from placer.solver.check.checker import check

__all__ = [
    "BLOCK",
    "TPU",
    "add_jobset",
    "assert_exclusive",
    "assert_valid",
    "block_of",
    "controller",
    "events",
    "eventually",
    "gated",
    "on_blocks",
    "pod_requirements",
    "record",
    "state_of",
    "tpu_cluster",
]

BLOCK = "cloud.google.com/gce-topology-block"
TPU = "google.com/tpu"


def tpu_cluster(blocks: int = 3, per_block: int = 2, *, chips: int = 4) -> MemoryCluster:
    cluster = MemoryCluster()
    for b in range(blocks):
        for i in range(per_block):
            cluster.create(
                "nodes",
                sim.node_object(
                    f"n-{b}-{i}",
                    {BLOCK: f"b{b}", "pool": "tpu"},
                    allocatable={TPU: chips},
                    taints=[{"key": TPU, "value": "present", "effect": "NoSchedule"}],
                ),
            )
    return cluster


def add_jobset(
    cluster: MemoryCluster,
    name: str,
    *,
    jobs: int = 2,
    pods: int = 2,
    chips: int = 4,
    namespace: str = "default",
    gate: bool = True,
    node_labels: bool = False,
    pods_now: bool = True,
    priority: int | None = None,
) -> Obj:
    """A JobSet of `jobs` child Jobs of `pods` pods with `chips` each, exclusive per block."""
    obj = sim.jobset_object(
        name,
        namespace=namespace,
        replicated_jobs=[("w", jobs, pods, {TPU: str(chips)})],
        exclusive_key=BLOCK,
        gate=gate,
        node_selector_strategy=node_labels,
        priority=priority,
    )
    if priority is not None and sim.priority_class_name(priority) not in {
        pc["metadata"]["name"] for pc in cluster.list("priorityclasses").items
    }:
        cluster.create("priorityclasses", sim.priority_class_object(priority))
    created = cluster.create("jobsets", obj)
    if pods_now:
        sim.create_pods(cluster, namespace, name)
    return created


def controller(adapter: ClusterAdapter, **config: Any) -> Controller:
    """A controller planning at once (no gather window), with the greedy solver by default."""
    settings: dict[str, Any] = {"solver": "best-fit", "window_s": 0.0, **config}
    return Controller(adapter, ControllerConfig(**settings), clocks=Clocks(sleep=lambda s: None))


def assert_valid(report: CycleReport) -> CycleReport:
    """Every plan the cycle made passes the independent checker."""
    for plan, snapshot, requests in report.planned.plans:
        assert check(plan, snapshot, requests, ControllerConfig().options) == []
    return report


def record(cluster: MemoryCluster, name: str, namespace: str = "default") -> Assignment | None:
    obj = cluster.get("jobsets", name, namespace=namespace)
    text = (obj["metadata"].get("annotations") or {}).get(ASSIGNMENT_ANNOTATION)
    return None if text is None else Assignment.from_annotation(text)


def block_of(assignment: Assignment, job: str) -> str:
    domain = assignment.jobs[job].domain
    assert domain is not None
    return domain.value


def assert_exclusive(cluster: MemoryCluster) -> None:
    """No two child Jobs of unfinished JobSets hold the same block."""
    seen: dict[str, str] = {}
    for js in cluster.objects("jobsets"):
        if (js.get("status") or {}).get("terminalState"):
            continue
        a = record(cluster, js["metadata"]["name"], js["metadata"]["namespace"])
        if a is None:
            continue
        for job in a.jobs:
            block = block_of(a, job)
            assert block not in seen, f"{job} and {seen[block]} share block {block}"
            seen[block] = job


def gated(pod: Obj) -> bool:
    return any(g.get("name") == PLACEMENT_GATE for g in pod["spec"].get("schedulingGates") or [])


def pod_requirements(pod: Obj) -> list[list[dict[str, Any]]]:
    aff = (pod["spec"].get("affinity") or {}).get("nodeAffinity") or {}
    terms = (aff.get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get(
        "nodeSelectorTerms"
    ) or []
    return [t.get("matchExpressions") or [] for t in terms]


def events(cluster: MemoryCluster, reason: str | None = None) -> list[Obj]:
    return [e for e in cluster.objects("events") if reason is None or e["reason"] == reason]


def jobset_pods(cluster: MemoryCluster, name: str) -> Iterable[Obj]:
    return [
        p
        for p in cluster.objects("pods")
        if p["metadata"]["labels"].get("jobset.sigs.k8s.io/jobset-name") == name
    ]


def state_of(cluster: MemoryCluster) -> ClusterState:
    """The cluster as a controller's cache sees it after one full list."""
    cache = ClusterCache(cluster)
    cache.relist()
    return cache.state()


def eventually(condition: Callable[[], bool], timeout_s: float = 10.0) -> None:
    """Wait until `condition()` holds; fail the test after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.05)


def on_blocks(owner: str, blocks: dict[str, str]) -> Assignment:
    """A record putting each child Job (`blocks`: child Job -> block) on a whole block."""
    return Assignment(
        jobset=owner,
        jobs={
            job: JobAssignment(domain=DomainRef(key=BLOCK, value=b, path=[(BLOCK, b)]))
            for job, b in blocks.items()
        },
        plan_id="p",
    )


def reviewed_of(
    state: ClusterState,
    managed: Sequence[ManagedJobSet],
    rev: Review,
    options: SolveOptions,
    *,
    wall_s: float,
    kueue: KueueView | None = None,
) -> Reviewed:
    """A round's review as the controller hands it to planning: an empty ledger, the planner's
    snapshot of `state`, every target of `rev` due."""
    snapshot = planning_snapshot(state, binding="gate")
    observed = Observed(
        state=state,
        ledger=Ledger(namespace="placer-system"),
        managed=tuple(managed),
        snapshot=snapshot,
        index=DomainIndex(snapshot),
        pods=survey_pods(state),
    )
    return Reviewed(
        observed=observed,
        options=options,
        review=rev,
        ledger=LedgerView(),
        wall_s=wall_s,
        due=tuple(rev.targets),
        kueue=kueue,
    )
