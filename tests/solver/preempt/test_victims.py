"""Victim choice on tiny clusters with known answers, and the rules no plan may break.

Every pool below has two hosts of 4 chips; a pending JobSet of one child Job of two pods takes a
pool to itself. Running JobSets hold whole pools (`running_pool`). Each plan goes through the
independent checker (`solve_checked`).
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime, timedelta
from typing import Any, TypedDict, Unpack

import pytest
from hypothesis import HealthCheck, given, settings

from benchmarks.worlds.busy_fleet import busy_fleet
from placer.model.cluster import ClusterSnapshot, Node, RunningJobSet
from placer.model.options import ReservationPolicy, SolveOptions, TimePolicy
from placer.model.plan import Plan
from placer.model.preemption import PreemptionFacts, PreemptionPolicy
from placer.model.workload import JobSetRequest
from placer.solver.check.checker import check
from placer.solver.preempt import find_victims
from placer.solver.registry import get_solver
from tests.strategies import (
    PreemptionCase,
    jobset,
    node,
    pool,
    preemption_mixes,
    preemption_scenarios,
    rjob,
    running_pool,
    solve_checked,
)

NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)
ON = SolveOptions(
    workers=1,
    seed=0,
    time_limit_s=10,
    time=TimePolicy(now=NOW),
    preemption=PreemptionPolicy(mode="lower-priority"),
)
OFF = ON.model_copy(update={"preemption": PreemptionPolicy()})


class _Facts(TypedDict, total=False):
    """What a test states of a running JobSet's `PreemptionFacts`."""

    checkpoint_interval_s: float | None
    preemptible: bool


def started(hours: float, **facts: Unpack[_Facts]) -> RunningJobSet:
    return RunningJobSet(
        started_at=NOW - timedelta(hours=hours),
        preemption=PreemptionFacts(**facts),
    )


def snap(*pools: list[Node], running: dict[str, RunningJobSet]) -> ClusterSnapshot:
    return ClusterSnapshot(nodes=tuple(n for p in pools for n in p), running=running)


def wide(name: str = "big", pools: int = 1, priority: int = 10, **kw: object) -> JobSetRequest:
    js = jobset(name, rjob(replicas=pools, pods_per_job=2), priority=priority)
    return js.model_copy(update=kw) if kw else js


def test_the_cheaper_whole_victim_is_chosen() -> None:
    cluster = snap(
        running_pool("p0", 2, "team-b/old"),
        running_pool("p1", 2, "team-b/young"),
        running={"team-b/old": started(5), "team-b/young": started(1)},
    )
    plan = solve_checked("cpsat", cluster, [wide()], ON)
    o = plan.outcome("team-a/big")
    assert o.status == "placed"
    assert o.preempts == ["team-b/young"]
    assert [p.key for p in plan.preempted] == ["team-b/young"]
    victim = plan.preempted[0]
    assert victim.makes_room_for == ["team-a/big"]
    assert victim.accelerators == 8
    assert victim.lost_chip_hours == pytest.approx(8.0)  # 8 chips x 1 h since it started
    assert victim.restart_chip_hours == pytest.approx(8 * 300 / 3600)


def test_checkpoints_make_the_older_one_cheaper() -> None:
    """The one started 5 h ago checkpoints every 2 h: it loses 1 h; the younger loses 1.5 h."""
    cluster = snap(
        running_pool("p0", 2, "team-b/old"),
        running_pool("p1", 2, "team-b/young"),
        running={
            "team-b/old": started(5, checkpoint_interval_s=7200.0),
            "team-b/young": started(1.5),
        },
    )
    plan = solve_checked("cpsat", cluster, [wide()], ON)
    assert plan.outcome("team-a/big").preempts == ["team-b/old"]
    assert plan.preempted[0].lost_chip_hours == pytest.approx(8.0)


def test_a_protected_jobset_is_never_chosen_even_when_cheaper() -> None:
    cluster = snap(
        running_pool("p0", 2, "team-b/old"),
        running_pool("p1", 2, "team-b/young"),
        running={"team-b/old": started(5), "team-b/young": started(1, preemptible=False)},
    )
    plan = solve_checked("cpsat", cluster, [wide()], ON)
    assert plan.outcome("team-a/big").preempts == ["team-b/old"]


def test_equal_priority_is_never_preempted() -> None:
    cluster = snap(
        running_pool("p0", 2, "team-b/peer", priority=10),
        running={"team-b/peer": started(1)},
    )
    plan = solve_checked("cpsat", cluster, [wide()], ON)
    assert plan.outcome("team-a/big").status == "unschedulable"
    assert plan.preempted == []
    assert find_victims(cluster, [wide()], ON) is None  # not even offered to the model


def test_each_preemptor_may_evict_only_below_its_own_priority() -> None:
    """Running: `low` (1), `run` (5), `peer` (10); waiting: `hi` (10) and `mid` (5). Nobody
    outranks `peer`, so it is no candidate; `hi` may evict `run` and `low`, `mid` only `low`."""
    cluster = snap(
        running_pool("p0", 2, "team-b/low", priority=1),
        running_pool("p1", 2, "team-b/run", priority=5),
        running_pool("p2", 2, "team-b/peer", priority=10),
        running={k: started(1) for k in ("team-b/low", "team-b/run", "team-b/peer")},
    )
    victims = find_victims(cluster, [wide("hi", priority=10), wide("mid", priority=5)], ON)
    assert victims is not None and set(victims.candidates) == {"team-b/low", "team-b/run"}
    assert victims.can_evict("team-a/hi", "team-b/run")
    assert victims.can_evict("team-a/mid", "team-b/low")
    assert not victims.can_evict("team-a/mid", "team-b/run")


@pytest.mark.parametrize(
    "jobset_kw, classes",
    [
        pytest.param({"never_preempts": True}, (), id="pod-template-Never"),
        pytest.param({"priority_class_name": "polite"}, ("polite",), id="PriorityClass-Never"),
    ],
)
def test_a_preemptor_with_policy_never_evicts_nobody(
    jobset_kw: dict[str, Any], classes: tuple[str, ...]
) -> None:
    cluster = snap(running_pool("p0", 2, "team-b/low"), running={"team-b/low": started(1)})
    cluster = cluster.model_copy(update={"non_preempting_classes": classes})
    plan = solve_checked("cpsat", cluster, [wide(**jobset_kw)], ON)
    assert plan.outcome("team-a/big").status == "unschedulable"
    assert plan.preempted == []


def test_a_free_domain_is_used_before_anyone_is_evicted() -> None:
    cluster = snap(
        running_pool("p0", 2, "team-b/low"),
        pool("p1", 2),
        running={"team-b/low": started(0)},
    )
    plan = solve_checked("cpsat", cluster, [wide()], ON)
    assert plan.outcome("team-a/big").status == "placed"
    assert plan.preempted == []


def test_a_victim_is_whole_across_its_domains() -> None:
    """`team-b/two` runs on two pools: evicting it frees both, so one cheap eviction places a
    JobSet needing two pools, where `team-b/one` (cheaper alone) would free only one."""
    cluster = snap(
        running_pool("p0", 2, "team-b/two"),
        running_pool("p1", 2, "team-b/two"),
        running_pool("p2", 2, "team-b/one"),
        running={"team-b/two": started(1), "team-b/one": started(0.5)},
    )
    plan = solve_checked("cpsat", cluster, [wide(pools=2)], ON)
    o = plan.outcome("team-a/big")
    assert o.status == "placed"
    assert o.preempts == ["team-b/two"]


def test_admission_of_a_higher_tier_comes_before_eviction_cost() -> None:
    """Two pending JobSets of different tiers, one pool to win: the higher tier gets it."""
    cluster = snap(running_pool("p0", 2, "team-b/low"), running={"team-b/low": started(1)})
    hi, mid = wide("hi", priority=10), wide("mid", priority=5)
    plan = solve_checked("cpsat", cluster, [mid, hi], ON)
    assert plan.outcome("team-a/hi").preempts == ["team-b/low"]
    assert plan.outcome("team-a/mid").status == "unschedulable"


def test_nobody_is_evicted_to_make_room_indirectly_for_a_lower_priority_jobset() -> None:
    """`hi` fits on the free pool; only `lo` (priority 0) waits. `hi` could move onto `mid`'s
    pool (priority 5 < 10) so that `lo` takes the free one: that evicts a priority-5 JobSet for a
    priority-0 one, and a victim must be outranked by a JobSet left waiting without preemption."""
    cluster = snap(
        pool("p0", 2),
        running_pool("p1", 2, "team-b/mid", priority=5),
        running={"team-b/mid": started(1)},
    )
    hi, lo = wide("hi", priority=10), wide("lo", priority=0)
    plan = solve_checked("cpsat", cluster, [hi, lo], ON)
    assert plan.preempted == []
    assert plan.outcome("team-a/hi").status == "placed"
    assert plan.outcome("team-a/lo").status == "unschedulable"


def test_a_blocked_jobset_still_evicts_below_its_own_priority_through_a_higher_one() -> None:
    """`mid` (priority 5) waits without preemption; `low` (priority 1) is below it: evicting `low`
    places both, whoever of `hi` and `mid` takes `low`'s pool."""
    cluster = snap(
        pool("p0", 2),
        running_pool("p1", 2, "team-b/low", priority=1),
        running={"team-b/low": started(1)},
    )
    hi, mid = wide("hi", priority=10), wide("mid", priority=5)
    plan = solve_checked("cpsat", cluster, [hi, mid], ON)
    assert [p.key for p in plan.preempted] == ["team-b/low"]
    assert {plan.outcome(k).status for k in ("team-a/hi", "team-a/mid")} == {"placed"}


def test_beyond_the_cap_the_costliest_per_accelerator_are_not_offered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Cap 2 of 3: `old` (5 h of work on 8 chips) is left out, `young` and `mid` are offered; the
    plan says so, and still evicts the cheapest."""
    monkeypatch.setattr("placer.solver.preempt.candidates.MAX_CANDIDATES", 2)
    cluster = snap(
        running_pool("p0", 2, "team-b/old"),
        running_pool("p1", 2, "team-b/mid"),
        running_pool("p2", 2, "team-b/young"),
        running={
            "team-b/old": started(5),
            "team-b/mid": started(3),
            "team-b/young": started(1),
        },
    )
    victims = find_victims(cluster, [wide()], ON)
    assert victims is not None
    assert sorted(victims.candidates) == ["team-b/mid", "team-b/young"]
    assert victims.left_out == 1
    plan = solve_checked("cpsat", cluster, [wide()], ON)
    assert plan.outcome("team-a/big").preempts == ["team-b/young"]
    assert "preemption: 2 cheapest candidates per accelerator offered, 1 costlier ones not" in (
        plan.solver.notes
    )


@pytest.mark.parametrize("solver", ["cpsat", "best-fit", "largest-first", "first-fit"])
def test_with_preemption_off_nobody_is_evicted(solver: str) -> None:
    cluster = snap(running_pool("p0", 2, "team-b/low"), running={"team-b/low": started(1)})
    plan = solve_checked(solver, cluster, [wide()], OFF)
    assert plan.outcome("team-a/big").status == "unschedulable"
    assert plan.preempted == []


@pytest.mark.parametrize("solver", ["best-fit", "largest-first", "first-fit"])
def test_greedy_baselines_never_preempt(solver: str) -> None:
    cluster = snap(running_pool("p0", 2, "team-b/low"), running={"team-b/low": started(1)})
    plan = solve_checked(solver, cluster, [wide()], ON)
    assert plan.outcome("team-a/big").status == "unschedulable"
    assert plan.preempted == []


def test_the_checker_refuses_a_protected_or_unlisted_victim() -> None:
    cluster = snap(
        running_pool("p0", 2, "team-b/low"),
        running={"team-b/low": started(1)},
    )
    plan = solve_checked("cpsat", cluster, [wide()], ON)
    protected = cluster.model_copy(
        update={"running": {"team-b/low": started(1, preemptible=False)}}
    )
    assert check(plan, protected, [wide()], ON) == [
        "team-b/low: preempted but annotated placer.dev/preemptible: false"
    ]
    unlisted = plan.model_copy(
        update={"jobsets": [o.model_copy(update={"preempts": []}) for o in plan.jobsets]}
    )
    assert check(unlisted, cluster, [wide()], ON) == [
        "team-a/big: uses nodes of preempted team-b/low without listing it in preempts",
        "team-b/low: makes room for ['team-a/big'] but is preempted by nobody",
    ]
    assert check(plan, cluster, [wide(priority=0)], ON) == [
        "team-a/big: priority 10 in the plan, 0 in the JobSet",
        "team-b/low: priority 0 preempted by team-a/big of priority 0",
    ]
    assert check(plan, cluster, [wide()], OFF) == ["preempts team-b/low with --preemption none"]


@settings(
    max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
@given(preemption_scenarios())
def test_a_victim_is_never_protected_nor_partial(case: PreemptionCase) -> None:
    plan = solve_checked("cpsat", case.snapshot, case.jobsets, ON)
    given_ = {js.key: js for js in case.jobsets}
    for victim in plan.preempted:
        info = case.snapshot.running[victim.key]
        assert info.preemption.preemptible
        assert victim.makes_room_for
        for who in victim.makes_room_for:
            js = given_[who]
            assert not js.never_preempts
            assert victim.priority < js.priority
        # whole: every node it runs on is free of it in the plan's eyes, and what it held is
        # used only by the JobSets it makes room for
        held = {n.name for n in case.snapshot.nodes if victim.key in n.jobsets}
        users = {o.key for o in plan.jobsets for j in o.jobs for p in j.pods if p.node in held}
        assert users and users <= set(victim.makes_room_for)
    off = solve_checked("cpsat", case.snapshot, case.jobsets, OFF)
    assert off.preempted == []
    # preemption never admits less in any tier
    tiers = sorted({js.priority for js in case.jobsets}, reverse=True)
    assert [_units(plan, t) for t in tiers] >= [_units(off, t) for t in tiers]


def _units(plan: Plan, tier: int) -> int:
    return sum(o.accelerators for o in plan.jobsets if o.status == "placed" and o.priority == tier)


def test_a_jobset_of_unknown_priority_is_never_preempted() -> None:
    cluster = snap(
        running_pool("p0", 2, "team-b/unknown", priority=None),
        running={"team-b/unknown": started(1)},
    )
    plan = solve_checked("cpsat", cluster, [wide()], ON)
    assert plan.outcome("team-a/big").status == "unschedulable"
    assert plan.preempted == []


@settings(
    max_examples=100, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
@given(preemption_mixes())
def test_preemption_among_every_placement_rule_passes_the_checker(
    mix: tuple[ClusterSnapshot, list[JobSetRequest]],
) -> None:
    """Blocks and pools both exclusive (overlapping domains), shared pods, required and
    preferred topology: every plan with preemption passes the checker (solve_checked), never
    admits less in any tier than without it, and evicts only to place someone."""
    snapshot, queue = mix
    plan = solve_checked("cpsat", snapshot, queue, ON)
    off = solve_checked("cpsat", snapshot, queue, OFF)
    tiers = sorted({js.priority for js in queue}, reverse=True)
    assert [_units(plan, t) for t in tiers] >= [_units(off, t) for t in tiers]
    for victim in plan.preempted:
        assert victim.makes_room_for
        assert all(plan.outcome(k).status == "placed" for k in victim.makes_room_for)


@pytest.mark.parametrize("solver", ["cpsat"])
def test_a_domain_freed_for_another_stays_closed_to_pods_that_could_not_evict_its_victim(
    solver: str,
) -> None:
    """`low` (priority 1) runs on p0 and p1; `hi` (10) needs one pool and evicts it, freeing
    both. `peer` (priority 1, two pods without an exclusive key) may not evict `low`: the pool
    `hi` leaves is no room for it. Before, the model and the materialization put `peer`'s pods
    there, the plan said `low` was preempted for `peer` too, and the checker refused the plan
    (`placer explain` and a preempting controller cycle failed so on a busy fleet)."""
    cluster = snap(
        running_pool("p0", 2, "team-b/low", priority=1),
        running_pool("p1", 2, "team-b/low", priority=1),
        running={"team-b/low": started(1)},
    )
    peer = jobset("peer", rjob("w", pods_per_job=2, exclusive=None), priority=1)
    plan = solve_checked(solver, cluster, [wide("hi"), peer], ON)
    assert plan.outcome("team-a/hi").preempts == ["team-b/low"]
    assert plan.outcome("team-a/peer").status == "unschedulable"
    assert [(p.key, p.makes_room_for) for p in plan.preempted] == [("team-b/low", ["team-a/hi"])]


def test_pods_that_may_not_use_a_freed_domain_are_placed_before_those_that_may() -> None:
    """`hi` (10) evicts `low` (1) from p0 and p1: its workers take p0, and its two pods without
    an exclusive key may go to p1, freed for it. `peer` (1) may not use p1; its two such pods
    fit only on `spare`, a host outside every pool. The model counts them so; placed first-fit
    in queue order, `hi`'s pods took `spare`, `peer`'s found no room, and the plan fell back to
    greedy, evicting nobody."""
    cluster = snap(
        running_pool("p0", 2, "team-b/low", priority=1),
        running_pool("p1", 2, "team-b/low", priority=1),
        [node("spare", tpu=8)],
        running={"team-b/low": started(1)},
    )
    hi = jobset(
        "hi", rjob("w", pods_per_job=2), rjob("c", pods_per_job=2, exclusive=None), priority=10
    )
    peer = jobset("peer", rjob("w", pods_per_job=2, exclusive=None), priority=1, order=1)
    plan = solve_checked("cpsat", cluster, [hi, peer], ON)
    assert plan.solver.status != "FALLBACK", plan.solver.notes
    assert plan.outcome("team-a/hi").preempts == ["team-b/low"]
    peer_nodes = {p.node for j in plan.outcome("team-a/peer").jobs for p in j.pods}
    assert peer_nodes == {"spare"}


@pytest.mark.parametrize("reservations", ["none", "all"])
@pytest.mark.parametrize("seed", range(1, 9))
def test_preempting_plans_of_busy_fleets_pass_the_checker_without_falling_back(
    seed: int, reservations: ReservationPolicy
) -> None:
    """The benchmarks' busy TPU fleet at 200 nodes: 40 pending JobSets of three priorities, ten
    of them without an exclusive key and five with a coordinator, most pools running. Before
    f261c17 every seed's preempting plan without reservations was refused by the checker (a
    JobSet of a victim's own priority on a domain freed for a higher one); each must pass it,
    from the model, not the greedy fallback, with reservations too (evictions decided first)."""
    args = argparse.Namespace(nodes=200, pending=40, shared=10, mixed=5, held=0.9, seed=seed)
    snapshot, queue = busy_fleet(args)
    policy = TimePolicy(now=NOW, reservations=reservations)
    options = ON.model_copy(update={"time": policy, "time_limit_s": 5})
    plan = get_solver("cpsat", time_policy=policy).solve(snapshot, queue, options)
    assert check(plan, snapshot, queue, options) == []
    assert plan.solver.status != "FALLBACK", plan.solver.notes
    assert plan.preempted
