"""Placer against Kueue's own TAS test table (see cases.py): same verdicts, same packing.

- best-fit: Kueue's exact assignment (pods per lowest-level domain) on every case, or nothing
  placed where Kueue admits nothing;
- cpsat: the same verdict, and as tight: the same number of domains used at each level;
- every plan passes the independent checker.

Placer differs from Kueue on purpose in one way these cases touch: a JobSet is placed whole or not
at all, so where Kueue "admits nothing" placer reports the JobSet unschedulable; with one PodSet
per case the two coincide.
"""

from __future__ import annotations

from collections import Counter
from decimal import Decimal
from typing import Any

import pytest

from placer.model.cluster import ClusterSnapshot, Node
from placer.model.jobset.parse import parse_jobset
from placer.model.options import SolveOptions
from placer.model.plan import Plan
from placer.model.workload import JobSetRequest
from placer.solver.check.checker import check
from placer.solver.context import PlacementContext
from placer.solver.greedy.tas import room_beside_leader
from placer.solver.registry import get_solver
from tests.kueue_tas.cases import (
    CASES,
    GROUP_CASES,
    HOST,
    THREE,
    KueueCase,
    KueueGroupCase,
    Topology,
)

KUEUE = "kueue.x-k8s.io/"


def jobset_of(case: KueueCase) -> JobSetRequest:
    """One replicated job: the PodSet; with slices, one child Job per slice."""
    annotations: dict[str, str] = {}
    if case.required:
        annotations[KUEUE + "podset-required-topology"] = case.required
    if case.preferred:
        annotations[KUEUE + "podset-preferred-topology"] = case.preferred
    if case.unconstrained:
        annotations[KUEUE + "podset-unconstrained-topology"] = "true"
    size = case.slice_size or case.count
    if case.slice_level:
        annotations[KUEUE + "podset-slice-required-topology"] = case.slice_level
        annotations[KUEUE + "podset-slice-size"] = str(size)
    requests: dict[str, Any] = {}
    if case.cpu_m:
        requests["cpu"] = f"{case.cpu_m}m"
    if case.memory:
        requests["memory"] = str(case.memory)
    pod: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": requests}}]}
    if case.node_selector:
        pod["nodeSelector"] = case.node_selector
    if case.tolerations:
        pod["tolerations"] = list(case.tolerations)
    job = {
        "parallelism": size,
        "completions": size,
        "template": {"metadata": {"annotations": annotations}, "spec": pod},
    }
    return parse_jobset(
        {
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "metadata": {"name": "ps", "namespace": "kueue"},
            "spec": {
                "replicatedJobs": [
                    {"name": "main", "replicas": case.count // size, "template": {"spec": job}}
                ]
            },
        }
    )


def queue_of(nodes: tuple[Node, ...], *requests: tuple[str, int, Topology]) -> list[JobSetRequest]:
    """JobSets in queue order, one pod of cpu 1 each on the three Kueue levels: (name, pods,
    {"required"|"preferred": level})."""
    queue = []
    for order, (name, count, topology) in enumerate(requests):
        js = jobset_of(KueueCase(name, nodes, THREE, count, {}, **topology))
        queue.append(js.model_copy(update={"name": name, "order": order}))
    return queue


def lowest_level(node: Node, levels: tuple[str, ...]) -> object:
    """The node's Kueue lowest-level domain: its hostname, or its level values."""
    if HOST in levels:
        return node.labels.get(HOST, node.name)
    return tuple(node.labels[lv] for lv in levels)


def solve(case: KueueCase, solver: str) -> tuple[Plan, ClusterSnapshot, JobSetRequest]:
    snapshot = ClusterSnapshot(nodes=case.nodes)
    js = jobset_of(case)
    options = SolveOptions(levels=case.levels, workers=1, time_limit_s=5)
    plan = get_solver(solver).solve(snapshot, [js], options)
    assert check(plan, snapshot, [js], options) == []
    return plan, snapshot, js


def assignment(plan: Plan, snapshot: ClusterSnapshot, levels: tuple[str, ...]) -> dict[object, int]:
    nodes = snapshot.by_name()
    got: Counter[object] = Counter()
    for job in plan.jobsets[0].jobs:
        for p in job.pods:
            got[lowest_level(nodes[p.node], levels)] += 1
    return dict(got)


def domains_per_level(plan: Plan, snapshot: ClusterSnapshot, levels: tuple[str, ...]) -> list[int]:
    nodes = snapshot.by_name()
    used = [nodes[p.node] for job in plan.jobsets[0].jobs for p in job.pods]
    counts = []
    for depth in range(len(levels)):
        keys = levels[: depth + 1]
        counts.append(len({tuple(n.labels.get(k, n.name) for k in keys) for n in used}))
    counts.append(len({n.name for n in used}))
    return counts


def test_the_table_is_large_enough() -> None:
    assert len(CASES) >= 20
    assert len({c.name for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name) for c in CASES])
def test_best_fit_gives_kueues_assignment(case: KueueCase) -> None:
    plan, snapshot, _ = solve(case, "best-fit")
    outcome = plan.jobsets[0]
    if case.want is None:
        assert outcome.status == "unschedulable"
        assert outcome.reason
        return
    assert outcome.status == "placed"
    assert assignment(plan, snapshot, case.levels) == case.want


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name) for c in CASES])
def test_cpsat_has_kueues_verdict_and_is_as_tight(case: KueueCase) -> None:
    plan, snapshot, _ = solve(case, "cpsat")
    reference, _, _ = solve(case, "best-fit")
    assert plan.solver.status == "OPTIMAL"  # CP-SAT's own plan, not the greedy fallback
    outcome = plan.jobsets[0]
    assert outcome.status == ("unschedulable" if case.want is None else "placed")
    if case.want is not None:
        assert domains_per_level(plan, snapshot, case.levels) == domains_per_level(
            reference, snapshot, case.levels
        )


def test_a_case_restated_has_kueues_pod_count() -> None:
    """The translation itself: pods and requests as Kueue's PodSet states them."""
    for case in CASES:
        js = jobset_of(case)
        (r,) = js.replicated_jobs
        assert r.pod_count == case.count
        assert r.pod.requests.get("cpu", Decimal(0)) * 1000 == case.cpu_m


# -- podset groups --


def group_jobset_of(case: KueueGroupCase) -> JobSetRequest:
    """Kueue's two PodSets as two replicated jobs of one child Job each, in Kueue's order."""
    annotations = {KUEUE + "podset-group-name": "sameGroup"}
    if case.required:
        annotations[KUEUE + "podset-required-topology"] = case.required
    if case.preferred:
        annotations[KUEUE + "podset-preferred-topology"] = case.preferred

    def rjob(name: str, pods: int, requests: dict[str, str]) -> dict[str, Any]:
        # an extended resource is limited as requested, or the API server refuses the pod
        limits = {k: v for k, v in requests.items() if "/" in k}
        container = {"name": "c", "resources": {"requests": requests, "limits": limits}}
        job = {
            "parallelism": pods,
            "completions": pods,
            "template": {
                "metadata": {"annotations": annotations},
                "spec": {"containers": [container]},
            },
        }
        return {"name": name, "replicas": 1, "template": {"spec": job}}

    return parse_jobset(
        {
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "metadata": {"name": "lws", "namespace": "kueue"},
            "spec": {
                "replicatedJobs": [
                    rjob("leader", 1, case.leader),
                    rjob("workers", case.count, case.workers),
                ]
            },
        }
    )


def solve_group(case: KueueGroupCase, solver: str) -> tuple[Plan, ClusterSnapshot]:
    snapshot = ClusterSnapshot(nodes=case.nodes)
    js = group_jobset_of(case)
    options = SolveOptions(levels=case.levels, workers=1, time_limit_s=5)
    plan = get_solver(solver).solve(snapshot, [js], options)
    assert check(plan, snapshot, [js], options) == []
    return plan, snapshot


def per_rjob(plan: Plan, snapshot: ClusterSnapshot, levels: tuple[str, ...]) -> dict[str, Any]:
    nodes = snapshot.by_name()
    got: dict[str, Counter[object]] = {}
    for job in plan.jobsets[0].jobs:
        for p in job.pods:
            got.setdefault(job.replicated_job, Counter())[lowest_level(nodes[p.node], levels)] += 1
    return {name: dict(c) for name, c in got.items()}


def test_the_group_table_covers_kueues_group_cases() -> None:
    assert len(GROUP_CASES) >= 14
    assert len({c.name for c in GROUP_CASES}) == len(GROUP_CASES)


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name) for c in GROUP_CASES])
def test_best_fit_gives_kueues_group_assignment(case: KueueGroupCase) -> None:
    plan, snapshot = solve_group(case, "best-fit")
    outcome = plan.jobsets[0]
    if case.want_workers is None:
        assert outcome.status == "unschedulable" and outcome.reason
        return
    assert outcome.status == "placed"
    assert per_rjob(plan, snapshot, case.levels) == {
        "leader": {case.want_leader: 1},
        "workers": case.want_workers,
    }


def required_room(plan: Plan, snapshot: ClusterSnapshot, case: KueueGroupCase) -> int:
    """Kueue's count (workers' pods beside the leader) of the required domain the plan used."""
    js = group_jobset_of(case)
    ctx = PlacementContext(snapshot, [js], SolveOptions(levels=case.levels))
    workers, leader = ctx.podset_group(ctx.job_classes[1]) or (None, None)
    assert workers is not None and leader is not None
    level = case.required
    assert level is not None
    used = {p.node for j in plan.jobsets[0].jobs for p in j.pods}
    (domain,) = [d for d in ctx.domains(level) if used <= set(d.nodes)]
    return room_beside_leader(ctx, workers, leader, domain.nodes)


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name) for c in GROUP_CASES])
def test_cpsat_has_kueues_group_verdict_and_is_as_tight(case: KueueGroupCase) -> None:
    plan, snapshot = solve_group(case, "cpsat")
    reference, _ = solve_group(case, "best-fit")
    assert plan.solver.status == "OPTIMAL"
    outcome = plan.jobsets[0]
    assert outcome.status == ("unschedulable" if case.want_workers is None else "placed")
    if case.want_workers is None:
        return
    if case.required:
        assert required_room(plan, snapshot, case) == required_room(reference, snapshot, case)
    assert domains_per_level(plan, snapshot, case.levels) == domains_per_level(
        reference, snapshot, case.levels
    )
