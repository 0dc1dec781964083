"""CP-SAT planner: each rule with a tiny feasible and infeasible case; where it must beat greedy.

Every plan goes through the independent checker.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from ortools.sat.python import cp_model

from placer.model.cluster import ClusterSnapshot
from placer.model.options import SolveOptions
from placer.model.plan import Plan
from placer.model.workload import JobSetRequest
from placer.solver.check.checker import check
from placer.solver.context import PlacementContext
from placer.solver.cpsat import aggregate, build_model
from placer.solver.cpsat.coarsen import coarsen
from placer.solver.cpsat.hints import solution_from_plan
from placer.solver.cpsat.planner import best_greedy
from placer.solver.registry import get_solver
from tests.strategies import (
    BLOCK,
    HOSTNAME,
    NODEPOOL,
    TPU_TOPOLOGY,
    cluster,
    jobset,
    pool,
    rjob,
    scenarios,
)

OPTIONS = SolveOptions(time_limit_s=5, workers=2, seed=1)


def solve(
    snapshot: ClusterSnapshot,
    jobsets: list[JobSetRequest],
    solver: str = "cpsat",
    options: SolveOptions = OPTIONS,
) -> Plan:
    plan = get_solver(solver).solve(snapshot, jobsets, options)
    assert check(plan, snapshot, jobsets, options) == []
    return plan


def statuses(plan: Plan) -> dict[str, str]:
    return {o.name: o.status for o in plan.jobsets}


def test_places_every_child_job_in_its_own_domain() -> None:
    snapshot = cluster(*(pool(f"p{i}", 2) for i in range(4)))
    js = jobset("multislice", rjob(replicas=4, pods_per_job=2))
    plan = solve(snapshot, [js])
    outcome = plan.jobsets[0]
    assert outcome.status == "placed"
    assert sorted(j.domain.value for j in outcome.jobs if j.domain) == ["p0", "p1", "p2", "p3"]
    assert [j.name for j in outcome.jobs] == [f"multislice-workers-{i}" for i in range(4)]
    assert plan.solver.status == "OPTIMAL"
    assert plan.solver.objective == 32 and plan.solver.gap == 0


def test_all_or_nothing_when_one_domain_short() -> None:
    snapshot = cluster(*(pool(f"p{i}", 2) for i in range(3)))
    plan = solve(snapshot, [jobset("big", rjob(replicas=4, pods_per_job=2))])
    assert statuses(plan) == {"big": "unschedulable"}
    assert plan.jobsets[0].jobs == []
    assert "needs 4 domains" in plan.jobsets[0].reason


def test_beats_best_fit_when_greedy_takes_the_only_domain_another_needs() -> None:
    snapshot = cluster(pool("a-pool", 2, topology="2x4"), pool("b-pool", 2, topology="4x4"))
    first = jobset("anywhere", rjob(pods_per_job=2), order=0)
    picky = jobset("picky", rjob(pods_per_job=2, node_selector={TPU_TOPOLOGY: "2x4"}), order=1)
    greedy = solve(snapshot, [first, picky], "best-fit")
    assert statuses(greedy) == {"anywhere": "placed", "picky": "unschedulable"}
    plan = solve(snapshot, [first, picky])
    assert statuses(plan) == {"anywhere": "placed", "picky": "placed"}
    assert plan.accelerators_admitted > greedy.accelerators_admitted


def test_best_fit_keeps_large_domains_whole() -> None:
    snapshot = cluster(pool("big", 4), pool("small", 2))
    plan = solve(snapshot, [jobset("one", rjob(pods_per_job=2))])
    assert plan.jobsets[0].jobs[0].domain is not None
    assert plan.jobsets[0].jobs[0].domain.value == "small"


def test_higher_priority_tier_is_never_traded_for_more_lower_tier_accelerators() -> None:
    snapshot = cluster(*(pool(f"p{i}", 2) for i in range(2)))
    high = jobset("high", rjob(replicas=1), priority=100, order=1)
    low = jobset("low", rjob(replicas=2), priority=0, order=0)
    plan = solve(snapshot, [low, high])
    assert statuses(plan) == {"low": "unschedulable", "high": "placed"}


def test_strict_fifo_blocks_later_jobsets_of_the_same_tier() -> None:
    snapshot = cluster(*(pool(f"p{i}", 2) for i in range(2)))
    head = jobset("head", rjob(replicas=3), order=0)
    tail = jobset("tail", rjob(replicas=1), order=1)
    assert statuses(solve(snapshot, [head, tail]))["tail"] == "placed"
    fifo = OPTIONS.model_copy(update={"queue": "strict-fifo"})
    assert statuses(solve(snapshot, [head, tail], options=fifo)) == {
        "head": "unschedulable",
        "tail": "unschedulable",
    }


def test_required_topology_keeps_all_child_jobs_in_one_block() -> None:
    snapshot = cluster(
        pool("a0", 2, block="a"),
        pool("b0", 2, block="b"),
        pool("b1", 2, block="b"),
        levels=(BLOCK, NODEPOOL, HOSTNAME),
    )
    js = jobset("local", rjob(replicas=2, required=BLOCK))
    plan = solve(snapshot, [js])
    assert {j.domain.path[0][1] for j in plan.jobsets[0].jobs if j.domain} == {"b"}
    three = jobset("three", rjob(replicas=3, required=BLOCK))
    assert statuses(solve(snapshot, [three])) == {"three": "unschedulable"}


def test_locality_prefers_fewest_blocks() -> None:
    snapshot = cluster(
        pool("a0", 2, block="a"),
        pool("b0", 2, block="b"),
        pool("b1", 2, block="b"),
        pool("c0", 2, block="c"),
        levels=(BLOCK, NODEPOOL, HOSTNAME),
    )
    plan = solve(snapshot, [jobset("pair", rjob(replicas=2))])
    assert {j.domain.path[0][1] for j in plan.jobsets[0].jobs if j.domain} == {"b"}


def test_overlapping_keys_never_share_nodes() -> None:
    snapshot = cluster(
        pool("a0", 2, block="a"),
        pool("a1", 2, block="a"),
        pool("b0", 2, block="b"),
        levels=(BLOCK, NODEPOOL, HOSTNAME),
    )
    whole_block = jobset("block", rjob(pods_per_job=4, exclusive=BLOCK), order=0)
    slices = jobset("slices", rjob(replicas=2), order=1)
    plan = solve(snapshot, [whole_block, slices])
    assert statuses(plan) == {"block": "placed", "slices": "unschedulable"}


def test_non_exclusive_pods_share_free_nodes_but_not_reserved_domains() -> None:
    snapshot = cluster(pool("p0", 2))
    js = jobset("mixed", rjob(replicas=1), rjob("driver", exclusive=None, tpu=0, pods_per_job=1))
    assert statuses(solve(snapshot, [js])) == {"mixed": "unschedulable"}
    snapshot = cluster(pool("p0", 2), pool("cpu", 1, tpu=0))
    plan = solve(snapshot, [js])
    assert statuses(plan) == {"mixed": "placed"}
    driver = next(j for j in plan.jobsets[0].jobs if j.replicated_job == "driver")
    assert driver.domain is None and driver.pods[0].node == "cpu-host-0"


def test_domains_held_by_running_jobsets_are_closed() -> None:
    snapshot = cluster(pool("p0", 2, jobsets=["team-b/other"]), pool("p1", 2))
    plan = solve(snapshot, [jobset("two", rjob(replicas=2))])
    assert statuses(plan) == {"two": "unschedulable"}
    assert "held by running team-b/other" in plan.jobsets[0].reason


def test_aggregation_folds_identical_domains_into_one_class() -> None:
    snapshot = cluster(*(pool(f"p{i:04d}", 2) for i in range(500)))
    ctx = PlacementContext(snapshot, [jobset("a", rjob(replicas=3))], OPTIONS)
    problem = aggregate(ctx)
    assert len(problem.domain_classes) == 1
    assert problem.domain_classes[0].size == 500


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_cpsat_is_valid_deterministic_and_never_below_any_greedy(
    scenario: tuple[ClusterSnapshot, list[JobSetRequest]],
) -> None:
    snapshot, jobsets = scenario
    options = SolveOptions(time_limit_s=5, workers=4, seed=0)
    plan = solve(snapshot, jobsets, options=options)
    again = solve(snapshot, jobsets, options=options)
    assert plan.jobsets == again.jobsets
    for name in ("first-fit", "best-fit", "largest-first"):
        greedy = solve(snapshot, jobsets, name, options)
        assert admission_by_tier(plan) >= admission_by_tier(greedy), name


def admission_by_tier(plan: Plan) -> list[int]:
    """Accelerators of placed JobSets per priority tier, highest first: the lexicographic goal."""
    tiers = sorted({o.priority for o in plan.jobsets}, reverse=True)
    return [
        sum(o.accelerators for o in plan.jobsets if o.priority == t and o.status == "placed")
        for t in tiers
    ]


@pytest.mark.parametrize("solver", ["cpsat", "first-fit", "best-fit", "largest-first"])
def test_every_solver_reports_itself(solver: str) -> None:
    snapshot = cluster(pool("p0", 2))
    plan = solve(snapshot, [jobset("one", rjob())], solver)
    assert plan.solver.name == solver
    assert plan.solver.wall_seconds >= 0


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_greedy_hint_is_a_feasible_solution_of_the_model(
    scenario: tuple[ClusterSnapshot, list[JobSetRequest]],
) -> None:
    """The hint CP-SAT starts from is feasible: why cpsat never ends below greedy."""
    snapshot, jobsets = scenario
    ctx = PlacementContext(snapshot, jobsets, OPTIONS)
    problem = coarsen(aggregate(ctx))
    greedy = best_greedy(ctx)
    built = build_model(problem)
    model, v = built.model, built.variables
    solution_from_plan(v, problem, greedy).hint(model, v)
    solver = cp_model.CpSolver()
    solver.parameters.fix_variables_to_their_hinted_value = True
    solver.parameters.num_workers = 1
    assert solver.solve(model) in (cp_model.OPTIMAL, cp_model.FEASIBLE)
    for o in greedy.jobsets:
        assert solver.value(v.admit[o.key]) == (o.status == "placed")
