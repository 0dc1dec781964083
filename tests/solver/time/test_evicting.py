"""Time-aware planning with preemption (`placer.solver.time.evicting`): evictions first, then
reservations on the cluster without the victims. Every plan goes through the independent checker
on the cluster before any eviction."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings

from placer.model.cluster import ClusterSnapshot, RunningJobSet
from placer.model.options import SolveOptions, TimePolicy
from placer.model.plan import Plan
from placer.model.preemption import PreemptionPolicy
from placer.model.workload import JobSetRequest
from placer.solver.check.checker import check
from placer.solver.registry import get_solver
from tests.strategies import PreemptionCase, jobset, pool, preemption_scenarios, rjob, running_pool

NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)
TIME = TimePolicy(now=NOW, reservations="all")
ON = SolveOptions(
    workers=1,
    seed=0,
    time_limit_s=10,
    time=TIME,
    preemption=PreemptionPolicy(mode="lower-priority"),
)
OFF = ON.model_copy(update={"preemption": PreemptionPolicy()})


def solve(snapshot: ClusterSnapshot, queue: list[JobSetRequest], options: SolveOptions) -> Plan:
    plan = get_solver("cpsat", time_policy=options.time).solve(snapshot, queue, options)
    assert check(plan, snapshot, queue, options) == []
    return plan


def ran(hours: float, runs_for_h: float) -> RunningJobSet:
    return RunningJobSet(
        started_at=NOW - timedelta(hours=hours), expected_duration_s=runs_for_h * 3600
    )


def test_the_victim_the_planner_chooses_is_evicted_and_the_rest_reserved_behind_it() -> None:
    """`young` (1 h of work) is cheaper to evict than `old` (5 h). In queue order `big` would be
    reserved on `mid`'s pool (mid outranks it and ends first) and `small` on `young`'s: were
    those reservations in the way of the eviction, `big` could only evict `old`."""
    cluster = ClusterSnapshot(
        nodes=(
            *running_pool("p0", 2, "team-b/old"),
            *running_pool("p1", 2, "team-b/young"),
            *running_pool("p2", 2, "team-c/mid", priority=20),
        ),
        running={
            "team-b/old": ran(5, 10),
            "team-b/young": ran(1, 2),
            "team-c/mid": ran(1, 1.5),
        },
    )
    big = jobset("big", rjob(replicas=1, pods_per_job=2), priority=10)
    small = jobset("small", rjob(replicas=1, pods_per_job=2), priority=0, order=1)
    plan = solve(cluster, [big, small], ON)
    assert plan.outcome("team-a/big").status == "placed"
    assert plan.outcome("team-a/big").preempts == ["team-b/young"]
    assert [p.key for p in plan.preempted] == ["team-b/young"]
    waiting = plan.outcome("team-a/small")
    assert waiting.status != "placed"
    assert waiting.expected_start_seconds == 1800  # mid's pool, free in half an hour


def test_beyond_the_candidate_cap_the_planner_s_victim_is_still_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One candidate offered (cap 1). The planner offers `old` (priority 1, below the waiting
    `mid`); `young` (priority 5) is cheaper but outranks every JobSet left waiting. The victims
    named in the plan must come from all candidates, not from a capped set of other ones."""
    monkeypatch.setattr("placer.solver.preempt.candidates.MAX_CANDIDATES", 1)
    cluster = ClusterSnapshot(
        nodes=(
            *pool("p0", 2),
            *running_pool("p1", 2, "team-b/young", priority=5),
            *running_pool("p2", 2, "team-b/old", priority=1),
        ),
        running={"team-b/young": ran(0.1, 2), "team-b/old": ran(5, 10)},
    )
    hi = jobset("hi", rjob(replicas=1, pods_per_job=2), priority=10)
    mid = jobset("mid", rjob(replicas=1, pods_per_job=2), priority=3, order=1)
    plan = solve(cluster, [hi, mid], ON)
    assert [p.key for p in plan.preempted] == ["team-b/old"]
    assert {plan.outcome(k).status for k in ("team-a/hi", "team-a/mid")} == {"placed"}


def test_nobody_to_evict_is_the_plain_time_aware_round() -> None:
    cluster = ClusterSnapshot(
        nodes=(*running_pool("p0", 2, "team-b/peer", priority=10), *pool("p1", 2)),
        running={"team-b/peer": ran(1, 2)},
    )
    queue = [
        jobset("big", rjob(replicas=2, pods_per_job=2), priority=10),
        jobset("small", rjob(replicas=1, pods_per_job=2), priority=0, order=1),
    ]
    on, off = solve(cluster, queue, ON), solve(cluster, queue, OFF)
    assert on.preempted == []
    assert [(o.key, o.status, o.expected_start_seconds) for o in on.jobsets] == [
        (o.key, o.status, o.expected_start_seconds) for o in off.jobsets
    ]


@settings(
    max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
@given(preemption_scenarios())
def test_with_reservations_a_victim_is_whole_unprotected_and_used_by_its_preemptors(
    case: PreemptionCase,
) -> None:
    plan = solve(case.snapshot, case.jobsets, ON)
    given_ = {js.key: js for js in case.jobsets}
    for victim in plan.preempted:
        assert case.snapshot.running[victim.key].preemption.preemptible
        assert victim.makes_room_for
        for who in victim.makes_room_for:
            assert plan.outcome(who).status == "placed"
            assert not given_[who].never_preempts
            assert victim.priority < given_[who].priority
        held = {n.name for n in case.snapshot.nodes if victim.key in n.jobsets}
        users = {o.key for o in plan.jobsets for j in o.jobs for p in j.pods if p.node in held}
        assert users and users <= set(victim.makes_room_for)
