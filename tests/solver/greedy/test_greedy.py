"""Greedy baselines: each policy's rule on tiny cases, and properties on random small clusters."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from placer.model.cluster import ClusterSnapshot
from placer.model.options import SolveOptions
from placer.model.plan import Plan
from placer.model.workload import JobSetRequest
from placer.solver.check.checker import check
from placer.solver.context import PlacementContext
from placer.solver.greedy.baselines import greedy_plan
from placer.solver.registry import get_solver
from tests.strategies import (
    BLOCK,
    HOSTNAME,
    NODEPOOL,
    cluster,
    jobset,
    node,
    pool,
    resources,
    rjob,
    scenarios,
    solve_checked,
)

POLICIES = ["first-fit", "best-fit", "largest-first"]


def _domains(plan: Plan, key: str) -> list[str | None]:
    return [j.domain.value if j.domain else None for j in plan.outcome(key).jobs]


def _status(plan: Plan) -> dict[str, str]:
    return {o.key: o.status for o in plan.jobsets}


@pytest.mark.parametrize("name", POLICIES)
def test_registry_returns_the_greedy_solvers(name: str) -> None:
    assert get_solver(name).name == name


def test_first_fit_takes_domains_in_path_order_best_fit_the_tightest() -> None:
    snap = cluster(pool("p0", 4), pool("p1", 2))
    a = jobset("a", rjob(pods_per_job=2))
    assert _domains(solve_checked("first-fit", snap, [a]), "team-a/a") == ["p0"]
    assert _domains(solve_checked("best-fit", snap, [a]), "team-a/a") == ["p1"]


def test_best_fit_tightness_counts_free_accelerators_not_hosts() -> None:
    # p0: 2 hosts x 8 chips (16 free), p1: 3 hosts x 4 chips (12 free); a 2-pod job of 4 chips
    snap = cluster(pool("p0", 2, tpu=8), pool("p1", 3, tpu=4))
    a = jobset("a", rjob(pods_per_job=2, tpu=4))
    assert _domains(solve_checked("best-fit", snap, [a]), "team-a/a") == ["p1"]


def test_first_fit_leaves_a_partial_jobset_holding_its_domains() -> None:
    snap = cluster(pool("p0", 2), pool("p1", 2))
    a = jobset("a", rjob(replicas=3, pods_per_job=2), order=0)
    b = jobset("b", rjob(replicas=1, pods_per_job=2), order=1)
    plan = solve_checked("first-fit", snap, [a, b])
    out = plan.outcome("team-a/a")
    assert out.status == "partial"
    assert [j.name for j in out.jobs] == ["a-workers-0", "a-workers-1"]
    assert out.accelerators == 16
    assert out.reason.startswith("1 of 3 child Jobs could not be placed (workers-2): ")
    assert _status(plan)["team-a/b"] == "unschedulable"
    assert plan.solver.objective == 0  # a partial JobSet admits nothing


@pytest.mark.parametrize("name", ["best-fit", "largest-first"])
def test_all_or_nothing_releases_what_a_failed_jobset_took(name: str) -> None:
    snap = cluster(pool("p0", 2), pool("p1", 2))
    a = jobset("a", rjob(replicas=3, pods_per_job=2), order=0)
    b = jobset("b", rjob(replicas=2, pods_per_job=2), order=1)
    plan = solve_checked(name, snap, [a, b])
    assert _status(plan) == {"team-a/a": "unschedulable", "team-a/b": "placed"}
    assert plan.outcome("team-a/a").jobs == []
    assert _domains(plan, "team-a/b") == ["p0", "p1"]


def test_a_shared_replicated_job_that_does_not_fit_undoes_the_exclusive_ones() -> None:
    snap = cluster(pool("p0", 2), node("cpu-0", tpu=0, cpu=4))
    a = jobset(
        "a", rjob(pods_per_job=2), rjob("driver", pods_per_job=1, exclusive=None, tpu=0, cpu=8)
    )
    b = jobset("b", rjob(pods_per_job=2), order=1)
    plan = solve_checked("best-fit", snap, [a, b])
    assert _status(plan) == {"team-a/a": "unschedulable", "team-a/b": "placed"}


def test_child_jobs_come_in_creation_order_with_shared_ones_placed_beside() -> None:
    snap = cluster(pool("p0", 1), pool("p1", 1), node("cpu-0", tpu=0))
    a = jobset(
        "a",
        rjob("driver", pods_per_job=1, exclusive=None, tpu=0),
        rjob("workers", replicas=2, pods_per_job=1),
    )
    plan = solve_checked("best-fit", snap, [a])
    out = plan.outcome("team-a/a")
    assert [j.name for j in out.jobs] == ["a-driver-0", "a-workers-0", "a-workers-1"]
    assert out.jobs[0].domain is None and out.jobs[0].pods[0].node == "cpu-0"
    assert out.accelerators == 9  # 2 x 4 chips, and the chipless driver counts its one pod


@pytest.mark.parametrize("name", POLICIES)
def test_pods_without_an_exclusive_key_go_where_they_close_no_domain_the_queue_needs(
    name: str,
) -> None:
    """`pool-9` is closed already (a running JobSet holds a node of it, the other has room);
    `pool-0` and `pool-1` are free and `left` and `right` each need one. The pods of `shared`,
    placed first, went to `pool-0` by name, and one of them was left out; they go to `pool-9`,
    which no JobSet of the queue can take (`PlacementContext.shared_pod_rank`)."""
    free_host = resources(cpu=32, pods=110, tpu=4)
    busy = pool("pool-9", 2, jobsets=["ns/run-a"], free=free_host)
    snap = cluster(pool("pool-0", 2), pool("pool-1", 2), busy)
    shared = jobset("shared", rjob(pods_per_job=1, exclusive=None), priority=10)
    left, right = jobset("left", rjob(), order=1), jobset("right", rjob(), order=2)
    plan = solve_checked(name, snap, [shared, left, right])
    assert _status(plan) == dict.fromkeys(
        ["team-a/shared", "team-a/left", "team-a/right"], "placed"
    )
    [pod] = plan.outcome("team-a/shared").jobs[0].pods
    assert pod.node.startswith("pool-9-")


@pytest.mark.parametrize("name", POLICIES)
def test_higher_priority_goes_first_whatever_the_order_given(name: str) -> None:
    snap = cluster(pool("p0", 2))
    low = jobset("low", rjob(), order=0)
    high = jobset("high", rjob(), priority=10, order=1)
    plan = solve_checked(name, snap, [low, high])
    assert _status(plan) == {"team-a/low": "unschedulable", "team-a/high": "placed"}
    assert [o.name for o in plan.jobsets] == ["low", "high"]  # the order given


def test_largest_first_sorts_by_demand_within_a_tier_only() -> None:
    snap = cluster(pool("p0", 2), pool("p1", 2))
    small = jobset("small", rjob(replicas=1), order=0)
    big = jobset("big", rjob(replicas=2), order=1)
    assert _status(solve_checked("best-fit", snap, [small, big])) == {
        "team-a/small": "placed",
        "team-a/big": "unschedulable",
    }
    assert _status(solve_checked("largest-first", snap, [small, big])) == {
        "team-a/small": "unschedulable",
        "team-a/big": "placed",
    }
    urgent = jobset("small", rjob(replicas=1), priority=1, order=0)
    assert _status(solve_checked("largest-first", snap, [urgent, big])) == {
        "team-a/small": "placed",
        "team-a/big": "unschedulable",
    }


@pytest.mark.parametrize("name", POLICIES)
def test_strict_fifo_blocks_later_jobsets_of_the_same_tier_only(name: str) -> None:
    big = jobset("big", rjob(pods_per_job=3), order=0)  # never fits
    small = jobset("small", rjob(), order=1)
    other_tier = jobset("low", rjob("cpu", exclusive=None, tpu=0), priority=-1, order=2)
    snap = cluster(pool("p0", 2), node("cpu-0", tpu=0))
    opts = SolveOptions(queue="strict-fifo")
    plan = solve_checked(name, snap, [big, small, other_tier], opts)
    assert _status(plan) == {
        "team-a/big": "unschedulable",
        "team-a/small": "unschedulable",
        "team-a/low": "placed",
    }
    assert plan.outcome("team-a/small").reason == (
        "strict-fifo: team-a/big, earlier in priority 0, is not admitted"
    )
    plan = solve_checked(name, snap, [big, small, other_tier])
    assert _status(plan)["team-a/small"] == "placed"


def _blocks() -> ClusterSnapshot:
    # block b0: p0 (2 hosts), p1 (2 hosts); block b1: p2, p3, p4 (2 hosts each)
    pools = [pool(f"p{i}", 2, block="b0" if i < 2 else "b1") for i in range(5)]
    return cluster(*pools, levels=(BLOCK, NODEPOOL, HOSTNAME))


@pytest.mark.parametrize("name", ["best-fit", "largest-first"])
def test_required_topology_keeps_every_child_job_in_one_block(name: str) -> None:
    a = jobset("a", rjob(replicas=3, required=BLOCK))
    plan = solve_checked(name, _blocks(), [a])
    assert _domains(plan, "team-a/a") == ["p2", "p3", "p4"]


def test_first_fit_commits_to_the_block_of_the_first_child_job() -> None:
    # upstream-like: the first child Job picks, the others follow, nobody looks ahead
    a = jobset("a", rjob(replicas=3, required=BLOCK))
    plan = solve_checked("first-fit", _blocks(), [a])
    assert plan.outcome("team-a/a").status == "partial"
    assert _domains(plan, "team-a/a") == ["p0", "p1"]


def test_required_topology_prefers_the_tightest_block_that_fits() -> None:
    a = jobset("a", rjob(replicas=2, required=BLOCK))
    assert _domains(solve_checked("best-fit", _blocks(), [a]), "team-a/a") == ["p0", "p1"]


def test_the_tightest_block_counts_free_accelerators_not_hosts() -> None:
    # two blocks of three 2-host pools; b1's third pool runs another JobSet, so b1 has fewer
    # free chips though as many hosts: a pair that must share a block takes b1's two free pools
    busy = resources(cpu=32, pods=110, tpu=0)
    snap = cluster(
        *(pool(f"q{i}", 2, block="b0") for i in range(3)),
        pool("q3", 2, block="b1"),
        pool("q4", 2, block="b1"),
        pool("q5", 2, block="b1", jobsets=["ns/run"], free=busy),
        levels=(BLOCK, NODEPOOL, HOSTNAME),
    )
    a = jobset("a", rjob(replicas=2, required=BLOCK))
    assert _domains(solve_checked("best-fit", snap, [a]), "team-a/a") == ["q3", "q4"]


def test_required_topology_that_no_block_satisfies_is_unschedulable() -> None:
    a = jobset("a", rjob(replicas=4, required=BLOCK))
    plan = solve_checked("best-fit", _blocks(), [a])
    assert _status(plan) == {"team-a/a": "unschedulable"}
    assert plan.outcome("team-a/a").reason.endswith(
        f"at most 3 in one domain of {BLOCK} (required)"
    )


def test_preferred_topology_spans_blocks_when_it_must() -> None:
    a = jobset("a", rjob(replicas=4, preferred=BLOCK))
    plan = solve_checked("best-fit", _blocks(), [a])
    assert _status(plan) == {"team-a/a": "placed"}
    b = jobset("b", rjob(replicas=2, preferred=BLOCK))
    assert _domains(solve_checked("best-fit", _blocks(), [b]), "team-a/b") == ["p0", "p1"]


def test_a_jobsets_own_running_pods_do_not_close_its_domain() -> None:
    snap = cluster(pool("p0", 2, jobsets=["team-a/a"]), pool("p1", 2, jobsets=["team-b/x"]))
    a = jobset("a", rjob())
    b = jobset("b", rjob(), order=1)
    plan = solve_checked("best-fit", snap, [a, b])
    assert _domains(plan, "team-a/a") == ["p0"]
    assert _status(plan)["team-a/b"] == "unschedulable"


def test_report_counts_admitted_units_against_the_trivial_bound() -> None:
    snap = cluster(pool("p0", 2))
    plan = solve_checked("best-fit", snap, [jobset("a", rjob()), jobset("b", rjob(), order=1)])
    assert plan.solver.name == "best-fit"
    assert plan.solver.status == "HEURISTIC"
    assert (plan.solver.objective, plan.solver.bound) == (8, 16)
    assert plan.solver.gap == pytest.approx(0.5)
    assert plan.accelerators_admitted == 8


def test_greedy_plan_rejects_an_unknown_policy() -> None:
    ctx = PlacementContext(cluster(pool("p0", 1)), [jobset("a")], SolveOptions())
    with pytest.raises(ValueError):
        greedy_plan(ctx, "worst-fit")


def _run(
    name: str, snap: ClusterSnapshot, queue: list[JobSetRequest], options: SolveOptions
) -> Plan:
    plan = get_solver(name).solve(snap, queue, options)
    assert check(plan, snap, queue, options) == []
    return plan


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_every_greedy_plan_passes_the_checker(
    scenario: tuple[ClusterSnapshot, list[JobSetRequest]],
) -> None:
    snap, queue = scenario
    for options in (SolveOptions(), SolveOptions(queue="strict-fifo")):
        for name in POLICIES:
            plan = _run(name, snap, queue, options)
            assert [o.key for o in plan.jobsets] == [js.key for js in queue]
            if name != "first-fit":
                assert all(o.status != "partial" for o in plan.jobsets)
            assert plan == _run(name, snap, queue, options).model_copy(
                update={"solver": plan.solver}
            )  # deterministic (timings aside)
            bound = plan.solver.bound
            assert bound is not None
            assert plan.solver.objective == plan.accelerators_admitted <= bound


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_input_order_does_not_change_the_plan(
    scenario: tuple[ClusterSnapshot, list[JobSetRequest]],
) -> None:
    snap, queue = scenario
    for name in POLICIES:
        forward = _run(name, snap, queue, SolveOptions())
        backward = _run(name, snap, list(reversed(queue)), SolveOptions())
        assert sorted(forward.jobsets, key=lambda o: o.key) == sorted(
            backward.jobsets, key=lambda o: o.key
        )
