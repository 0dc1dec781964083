"""`--schedule cpsat`: start times decided jointly, on small cases whose best schedule is known."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from google.protobuf import text_format
from hypothesis import given, settings
from hypothesis import strategies as st
from ortools.sat import cp_model_pb2
from ortools.sat.python import cp_model

from placer.model.cluster import ClusterSnapshot, RunningJobSet
from placer.model.options import NOT_EXPLAINED, ScheduleMode, SolveOptions, TimePolicy
from placer.model.plan import Plan
from placer.model.workload import JobSetRequest
from placer.solver.check.checker import check
from placer.solver.registry import get_solver
from placer.solver.time.release import ReleaseTimeline
from placer.solver.time.schedule.model import build_schedule, extract
from placer.solver.time.schedule.problem import (
    ScheduleProblem,
    ScheduleRequest,
    build_problem,
    unit_release_s,
)
from placer.solver.time.schedule.solve import HintChanges, hint
from placer.solver.time.schedule.starving import starving
from placer.solver.time.schedule.wait_cost import wait_cost
from placer.solver.time.standing import tiers
from placer.solver.time.timeaware import reservations_of
from placer.solver.time.units import Units
from tests.solver.time.test_timeaware import _timed
from tests.strategies import TPU_TOPOLOGY, cluster, jobset, pool, resources, rjob

NOW = datetime(2026, 12, 1, 6, 0, tzinfo=UTC)
H = 3600.0
BUSY = resources(cpu=32, pods=110, tpu=0)  # what a busy host has free: no chip


def _fleet(busy_h: dict[str, float], free: int) -> ClusterSnapshot:
    """Pools `busy-<name>` held by a running JobSet for that many hours, and `free` free ones."""
    snap = cluster(
        *(pool(f"busy-{p}", 2, jobsets=[f"ns/run-{p}"], free=BUSY) for p in busy_h),
        *(pool(f"free-{i}", 2) for i in range(free)),
    )
    running = {
        f"ns/run-{p}": RunningJobSet(started_at=NOW, expected_duration_s=h * H)
        for p, h in busy_h.items()
    }
    return snap.model_copy(update={"running": running})


def _unstated(js: JobSetRequest, minutes_ago: int) -> JobSetRequest:
    """A JobSet that states no run time: the policy's default duration stands in for it."""
    return js.model_copy(update={"creation_timestamp": NOW - timedelta(minutes=minutes_ago)})


def _plan(
    snap: ClusterSnapshot,
    queue: list[JobSetRequest],
    schedule: ScheduleMode,
    max_wait_s: float | None = None,
) -> Plan:
    policy = TimePolicy(now=NOW, reservations="all", schedule=schedule, max_wait_s=max_wait_s)
    options = SolveOptions(workers=1, seed=0, time=policy)
    plan = get_solver("best-fit", time_policy=policy).solve(snap, queue, options)
    assert check(plan, snap, queue, options) == []
    return plan


def _starts(plan: Plan) -> dict[str, float | None]:
    return {o.key.split("/")[1]: o.expected_start_seconds for o in plan.jobsets}


def _start(starts: dict[str, float | None], name: str) -> float:
    """`name`'s start, which the test expects it to have."""
    start = starts[name]
    assert start is not None, name
    return start


def test_holding_a_narrow_jobset_back_lets_two_wide_ones_start_sooner() -> None:
    """Two pools free now, two free in 1 h. In queue order the greedy pass starts the 3 h narrow
    JobSet now and both 1 h wide ones (all four pools) wait for it: 3 h and 4 h. Holding the
    narrow one back starts them at 1 h and 2 h, the narrow one at 3 h: 96 weighted hours
    (24 per hour of a 1 h run, 8 of a 3 h one) instead of 168."""
    snap = _fleet({"a": 1, "b": 1}, free=2)
    queue = [
        _timed(jobset("narrow", rjob(replicas=1)), 3, 30),
        _timed(jobset("wide-1", rjob(replicas=4)), 1, 20),
        _timed(jobset("wide-2", rjob(replicas=4)), 1, 10),
    ]
    greedy = _starts(_plan(snap, queue, "greedy"))
    wide = sorted([_start(greedy, "wide-1"), _start(greedy, "wide-2")])
    assert greedy["narrow"] == 0 and wide == [3 * H, 4 * H]
    joint = _plan(snap, queue, "cpsat")
    starts = _starts(joint)
    assert sorted([_start(starts, "wide-1"), _start(starts, "wide-2")]) == [1 * H, 2 * H]
    assert starts["narrow"] == 3 * H
    assert joint.outcome("team-a/narrow").status == "unschedulable"
    note = next(n for n in joint.solver.notes if n.startswith("schedule: OPTIMAL"))
    # all three starts left the greedy hint's; the narrow one's out of now
    assert HintChanges.parse(note) == HintChanges(moved=3, of=3, now=1)


def test_a_schedule_that_keeps_the_hint_says_it_moved_nothing() -> None:
    """One JobSet, free pools: the greedy hint starts it now, and so does the search."""
    plan = _plan(_fleet({}, free=2), [_timed(jobset("only", rjob(replicas=2)), 1, 5)], "cpsat")
    note = next(n for n in plan.solver.notes if n.startswith("schedule:"))
    assert HintChanges.parse(note) == HintChanges(moved=0, of=1, now=0)


def test_hint_changes_read_back_from_their_text() -> None:
    changes = HintChanges(moved=12, of=30, now=2)
    assert HintChanges.parse(f"schedule: FEASIBLE, objective 5, {changes.text()}") == changes
    assert HintChanges.parse("schedule: nothing waits") is None


def test_a_narrow_jobset_that_ends_before_the_reservation_is_backfilled() -> None:
    snap = _fleet({"a": 2, "b": 2}, free=2)
    queue = [
        _timed(jobset("wide", rjob(replicas=4)), 1, 30),
        _timed(jobset("narrow", rjob(replicas=1)), 1, 10),
    ]
    plan = _plan(snap, queue, "cpsat")
    narrow, wide = plan.outcome("team-a/narrow"), plan.outcome("team-a/wide")
    assert narrow.status == "placed" and narrow.backfill
    assert wide.expected_start_seconds == 2 * H and len(wide.reserved_domains) == 4
    assert wide.waits_for == ["ns/run-a", "ns/run-b"]


def test_a_narrow_jobset_that_would_delay_the_reservation_waits() -> None:
    """A 4 h narrow run now would push the 1 h wide one from 2 h to 4 h (48 weighted hours
    lost); waiting until the wide one ends costs the narrow one 3 h at 6 per hour (18)."""
    snap = _fleet({"a": 2, "b": 2}, free=2)
    queue = [
        _timed(jobset("narrow", rjob(replicas=1)), 4, 30),
        _timed(jobset("wide", rjob(replicas=4)), 1, 10),
    ]
    assert _starts(_plan(snap, queue, "greedy"))["narrow"] == 0
    starts = _starts(_plan(snap, queue, "cpsat"))
    assert starts == {"narrow": 3 * H, "wide": 2 * H}


def test_a_jobset_taking_one_class_through_two_replicated_jobs_is_scheduled() -> None:
    """Two replicated jobs per pool draw on one class: the capacity rule's demand is their sum,
    which CP-SAT takes as a variable of its own (it returned MODEL_INVALID, and the greedy pass
    decided). Pool a frees at 1 h: the 1 h two-pool JobSet first in the queue starts now on
    the free pools; the 2 h one waits for it (greedy would give the same: checked is the
    schedule's status)."""
    snap = _fleet({"a": 1}, free=2)
    queue = [
        _timed(jobset("two", rjob("x", replicas=1), rjob("y", replicas=1)), 1, 10),
        _timed(jobset("wide", rjob(replicas=2)), 2, 5),
    ]
    plan = _plan(snap, queue, "cpsat")
    assert any(n.startswith("schedule: OPTIMAL") for n in plan.solver.notes), plan.solver.notes
    assert _starts(plan) == {"two": 0, "wide": 1 * H}


def test_max_wait_comes_before_weighted_waits() -> None:
    """The long run waited 23 h of a 24 h maximum: it starts at 1 h, though starting the two
    short ones first would weigh less."""
    snap = _fleet({"a": 1}, free=0)
    queue = [
        _timed(jobset("short-1", rjob(replicas=1)), 1, 10),
        _timed(jobset("short-2", rjob(replicas=1)), 1, 5),
        _timed(jobset("long", rjob(replicas=1)), 10, 23 * 60),
    ]
    starts = _starts(_plan(snap, queue, "cpsat", max_wait_s=24 * H))
    assert starts["long"] == 1 * H
    without = _starts(_plan(snap, queue, "cpsat"))
    assert without["long"] == 3 * H


@pytest.mark.parametrize(
    ("max_wait_h", "long_start_h"),
    [
        pytest.param(24, 0, id="starving-starts-at-its-greedy-slot"),
        pytest.param(60, 2, id="not-yet-starving-yields-to-shorter-runs"),
    ],
)
def test_a_starving_jobset_starts_no_later_than_the_greedy_pass_would(
    max_wait_h: float, long_start_h: float
) -> None:
    """One pool, free now. The 10 h run has waited 13 h, over a quarter of a 24 h maximum
    (`SCHEDULE_STARVING_SHARE`): the greedy pass, starving JobSets first, starts it now, and so
    must the schedule, though starting the two 1 h runs first weighs less (their 24 per second
    against its 48: 120 weighted hours instead of 504). With a 60 h maximum it is not starving
    yet, and the weighted waits put it after them, at 2 h."""
    snap = _fleet({}, free=1)
    queue = [
        _timed(jobset("short-1", rjob(replicas=1)), 1, 10),
        _timed(jobset("short-2", rjob(replicas=1)), 1, 5),
        _timed(jobset("long", rjob(replicas=1)), 10, 13 * 60),
    ]
    starts = _starts(_plan(snap, queue, "cpsat", max_wait_s=max_wait_h * H))
    assert starts["long"] == long_start_h * H
    assert sorted([_start(starts, "short-1"), _start(starts, "short-2")]) == (
        [10 * H, 11 * H] if long_start_h == 0 else [0.0, 1 * H]
    )


def test_the_hint_is_a_valid_schedule_and_the_model_never_worse() -> None:
    snap = _fleet({"a": 1, "b": 1}, free=2)
    queue = [
        _timed(jobset("narrow", rjob(replicas=1)), 3, 30),
        _timed(jobset("wide-1", rjob(replicas=4)), 1, 20),
        _timed(jobset("wide-2", rjob(replicas=4)), 1, 10),
    ]
    problem = _problem(snap, queue)
    fixed, free = cp_model.CpSolver(), cp_model.CpSolver()
    fixed.parameters.fix_variables_to_their_hinted_value = True
    for solver in (fixed, free):
        solver.parameters.num_workers = 1
    model, _ = build_schedule(problem)
    assert fixed.status_name(fixed.solve(model)) in ("OPTIMAL", "FEASIBLE")
    model, _ = build_schedule(problem)
    assert free.status_name(free.solve(model)) == "OPTIMAL"
    assert free.objective_value < fixed.objective_value


def _request(
    snap: ClusterSnapshot, queue: list[JobSetRequest], max_wait_s: float | None = None
) -> ScheduleRequest:
    """The schedule request the time-aware pass would make (through its own units)."""
    policy = TimePolicy(now=NOW, reservations="all", schedule="cpsat")
    timeline = ReleaseTimeline.build(snap, NOW, policy.default_duration_s)
    units = Units(snap, queue, SolveOptions(time=policy), timeline)
    return ScheduleRequest(
        units.layout,
        tuple(units.candidate(js, js.expected_duration_s or 0) for js in queue),
        units.free_at,
        (),
        {},
        tiers(queue, policy, NOW),
        max_wait_s,
    )


def _problem(snap: ClusterSnapshot, queue: list[JobSetRequest]) -> ScheduleProblem:
    """The schedule problem the time-aware pass would build (through its own units)."""
    request = _request(snap, queue)
    old = starving(request)
    hinted = hint(request, old)
    free_at = {n: float(f) for n, f in request.free_at.items()}
    return build_problem(request, hinted, unit_release_s(request.layout, free_at), [], starving=old)


@st.composite
def _queues(draw: st.DrawFn) -> tuple[ClusterSnapshot, list[JobSetRequest]]:
    busy = draw(
        st.dictionaries(st.sampled_from("abc"), st.sampled_from([0.5, 1, 2, 5]), max_size=3)
    )
    snap = _fleet(busy, free=draw(st.integers(0, 2)))
    pools = len(busy) + len([n for n in snap.nodes if n.name.startswith("free-")]) // 2
    queue = [
        _timed(
            jobset(
                f"js-{i}",
                rjob(replicas=draw(st.integers(1, max(1, pools)))),
                priority=draw(st.sampled_from([0, 0, 10])),
            ),
            draw(st.sampled_from([0.25, 1, 3])),
            draw(st.integers(0, 600)),
        )
        for i in range(draw(st.integers(1, 5)))
    ]
    return snap, queue


@settings(max_examples=25, deadline=None)
@given(case=_queues(), unstated=st.sets(st.integers(0, 4)))
def test_only_the_head_of_the_jobsets_stating_no_run_time_holds_domains(
    case: tuple[ClusterSnapshot, list[JobSetRequest]], unstated: set[int]
) -> None:
    """Whatever the queue: every waiting JobSet that states its run time holds the domains of
    its reservation, at most one (`--reservation-head 1`) of those that state none does, and
    the plan passes the checker (`_plan`)."""
    snap, queue = case
    queue = [
        js.model_copy(update={"expected_duration_s": None}) if i in unstated else js
        for i, js in enumerate(queue)
    ]
    plan = _plan(snap, queue, "cpsat")
    stated = {js.key for js in queue if js.expected_duration_s is not None}
    waiting = [o for o in plan.jobsets if o.status != "placed" and o.expected_start_seconds]
    assert all(o.reserved_domains for o in waiting if o.key in stated)
    assert sum(1 for o in waiting if o.key not in stated and o.reserved_domains) <= 1


@settings(max_examples=25, deadline=None)
@given(case=_queues())
def test_the_schedule_never_starts_a_jobset_before_its_domains_free_nor_overlaps_two(
    case: tuple[ClusterSnapshot, list[JobSetRequest]],
) -> None:
    snap, queue = case
    plan = _plan(snap, queue, "cpsat")  # the checker runs on it
    assert any(n.startswith("schedule: ") for n in plan.solver.notes)
    ends = {k: r.expected_duration_s or 0.0 for k, r in snap.running.items()}
    free_at = {
        n.labels["cloud.google.com/gke-nodepool"]: max((ends[k] for k in n.jobsets), default=0.0)
        for n in snap.nodes
    }
    duration = {js.key: js.expected_duration_s or 0.0 for js in queue}
    windows: dict[str, list[tuple[float, float, str]]] = {}
    for o in plan.jobsets:
        if o.status == "placed":
            for j in o.jobs:
                assert j.domain is not None and free_at[j.domain.value] == 0
                windows.setdefault(j.domain.value, []).append((0.0, duration[o.key], o.key))
        for d in o.reserved_domains:
            start = o.expected_start_seconds
            assert start is not None and start >= free_at[d.value]
            windows.setdefault(d.value, []).append((start, start + duration[o.key], o.key))
    for spans in windows.values():
        spans.sort()
        for (_, e1, k1), (s2, _, k2) in itertools.pairwise(spans):
            assert s2 >= e1, f"{k1} and {k2} overlap on one domain"


def _round(snap: ClusterSnapshot, queue: list[JobSetRequest], before: Plan | None) -> Plan:
    """A round of the receding horizon: last round's reservations on the snapshot."""
    if before is not None:
        policy = TimePolicy(now=NOW, reservations="all", schedule="cpsat")
        snap = snap.model_copy(update={"reservations": reservations_of(before, queue, policy)})
    return _plan(snap, queue, "cpsat")


def _held(plan: Plan, key: str) -> tuple[float | None, list[str]]:
    o = plan.outcome(f"team-a/{key}")
    return o.expected_start_seconds, [d.value for d in o.reserved_domains]


def test_reservations_stay_across_rounds_when_nothing_changed() -> None:
    snap = _fleet({"a": 2, "b": 2}, free=2)
    queue = [
        _timed(jobset("wide", rjob(replicas=4)), 1, 30),
        _timed(jobset("long", rjob(replicas=1)), 4, 10),
    ]
    first = _round(snap, queue, None)
    assert _held(first, "long")[0] == 3 * H
    second = _round(snap, queue, first)
    assert [_held(second, k) for k in ("wide", "long")] == [
        _held(first, k) for k in ("wide", "long")
    ]


@pytest.mark.parametrize(
    ("pool_b_ends_h", "expected"),
    [
        pytest.param(1.5, (2 * H, ["busy-a"]), id="half-an-hour-sooner-keeps-it"),
        pytest.param(0.5, (0.5 * H, ["busy-b"]), id="an-hour-and-a-half-sooner-moves-it"),
    ],
)
def test_a_reservation_moves_only_when_the_new_schedule_is_clearly_better(
    pool_b_ends_h: float, expected: tuple[float, list[str]]
) -> None:
    """Reserved on busy-a from 2 h; next round busy-b is expected free sooner than busy-a. The
    reservation moves only if that gains more than `STABLE_S` (1 h) of its own wait."""
    queue = [_timed(jobset("narrow", rjob(replicas=1)), 1, 10)]
    first = _round(_fleet({"a": 2, "b": 3}, free=0), queue, None)
    assert _held(first, "narrow") == (2 * H, ["busy-a"])
    second = _round(_fleet({"a": 2, "b": pool_b_ends_h}, free=0), queue, first)
    start, domains = expected
    assert _held(second, "narrow") == (start, domains if start else [])


@pytest.mark.parametrize(
    ("b_states_its_run", "c_starts_h"),
    [pytest.param(True, 5.0, id="stated-holds"), pytest.param(False, 0.0, id="unstated-does-not")],
)
def test_a_reservation_behind_the_head_holds_only_if_its_jobset_states_its_run(
    b_states_its_run: bool, c_starts_h: float
) -> None:
    """A (2 pools, no stated run, so the 4 h default) is the head: from 1 h on busy-a and
    busy-b. B (2 pools) is next: from 2 h on busy-c and free-0. C (a stated 3 h, lowest) could
    start now on free-0 only ahead of B's reservation. B's reservation holds free-0 if B states
    its run (C then waits for A's pools, free at 5 h); without one, only the head's does (EASY
    backfill), and C starts now."""
    snap = _fleet({"a": 1, "b": 1, "c": 2}, free=1)
    b = jobset("b", rjob(replicas=2), priority=5)
    queue = [
        _unstated(jobset("a", rjob(replicas=2), priority=10), 30),
        _timed(b, 4, 20) if b_states_its_run else _unstated(b, 20),
        _timed(jobset("c", rjob(replicas=1), priority=0), 3, 10),
    ]
    plan = _plan(snap, queue, "cpsat")
    assert _held(plan, "a") == (1 * H, ["busy-a", "busy-b"])
    assert _starts(plan)["c"] == c_starts_h * H
    b_start, b_domains = _held(plan, "b")
    if b_states_its_run:
        assert (b_start, b_domains) == (2 * H, ["busy-c", "free-0"])
    else:
        assert b_domains == [] and b_start == 3 * H  # after C on free-0, as the estimate pass says
        assert any(n.endswith("no domains (expected start only)") for n in plan.solver.notes)


def test_a_higher_tier_goes_first_even_against_a_shorter_lower_tier_run() -> None:
    """One pool. The low JobSet's 30 min run weighs twice the high one's hour per second
    waited (bounded slowdown), but a tier up weighs fifty times: the high one starts now."""
    snap = _fleet({}, free=1)
    queue = [
        _timed(jobset("low", rjob(replicas=1), priority=0), 0.5, 30),
        _timed(jobset("high", rjob(replicas=1), priority=10), 1, 10),
    ]
    assert _starts(_plan(snap, queue, "cpsat")) == {"low": 1 * H, "high": 0.0}


def test_starving_jobsets_are_the_oldest_past_the_share_of_max_wait_first_head_only() -> None:
    """Waited 10 h, 7 h, 5 h and 20 h of a 24 h maximum: past a quarter (6 h) are 20 h, 10 h
    and 7 h, oldest first; the head only gets the bound by default; none without a maximum."""
    snap = _fleet({}, free=1)
    waited_h = {"a": 10, "b": 7, "c": 5, "d": 20}
    queue = [_timed(jobset(k, rjob(replicas=1)), 1, h * 60) for k, h in waited_h.items()]
    request = _request(snap, queue, max_wait_s=24 * H)
    assert starving(request, head=None) == ("team-a/d", "team-a/a", "team-a/b")
    assert starving(request) == ("team-a/d",)
    assert starving(_request(snap, queue, max_wait_s=None), head=None) == ()


def test_an_overdue_jobset_in_a_disjoint_pool_is_starving_too() -> None:
    """Two pools of slices no JobSet can swap: two 2x4 pools and one 4x4 pool. Of a 24 h
    maximum, d (2x4) waited 30 h and heads the starving; a (2x4, 26 h) is overdue but may take
    d's pools, so it is left to the weighted waits; b (4x4, 25 h) is overdue and shares no pool
    with d, so it is bounded too; c (4x4, 10 h) is starving, not overdue, and b holds its pool
    anyway. The problem carries a latest start for d and b only, each its greedy slot."""
    snap = cluster(
        pool("two-0", 2, topology="2x4"),
        pool("two-1", 2, topology="2x4"),
        pool("four-0", 2, topology="4x4"),
    )
    waited_h = {"a": ("2x4", 26), "b": ("4x4", 25), "c": ("4x4", 10), "d": ("2x4", 30)}
    queue = [
        _timed(jobset(k, rjob(replicas=1, node_selector={TPU_TOPOLOGY: t})), 1, h * 60)
        for k, (t, h) in waited_h.items()
    ]
    request = _request(snap, queue, max_wait_s=24 * H)
    assert starving(request) == ("team-a/d", "team-a/b")
    assert starving(request, overdue=None) == ("team-a/d",)
    assert starving(request, overdue=1.1) == ("team-a/d",)  # b waited 25 h, not 26.4 h
    old = starving(request)
    hinted = hint(request, old)
    free_at = {n: float(f) for n, f in request.free_at.items()}
    problem = build_problem(
        request, hinted, unit_release_s(request.layout, free_at), [], starving=old
    )
    bounded = {j.key: j.latest_start_s for j in problem.jobs if j.latest_start_s is not None}
    assert bounded == {k: int(hinted[k].start_s or 0) for k in ("team-a/d", "team-a/b")}


def test_one_overdue_jobset_per_pool_the_oldest() -> None:
    """d (2x4, 30 h of a 24 h maximum) heads the starving; e (27 h) and b (25 h) are both overdue
    in the 4x4 pool, which d cannot take: the older, e, is bounded, and b, sharing e's pool, is
    left to the weighted waits (a second bound there could only delay e)."""
    snap = cluster(
        pool("two-0", 2, topology="2x4"),
        pool("four-0", 2, topology="4x4"),
    )
    waited_h = {"b": ("4x4", 25), "d": ("2x4", 30), "e": ("4x4", 27)}
    queue = [
        _timed(jobset(k, rjob(replicas=1, node_selector={TPU_TOPOLOGY: t})), 1, h * 60)
        for k, (t, h) in waited_h.items()
    ]
    assert starving(_request(snap, queue, max_wait_s=24 * H)) == ("team-a/d", "team-a/e")


def _objective_starts(snap: ClusterSnapshot, queue: list[JobSetRequest]) -> dict[str, int]:
    """The schedule model's optimal starts with no JobSet starving, so that the objective alone
    orders them (24 h `--max-wait`; the hint takes the queue in its order)."""
    request = _request(snap, queue, max_wait_s=24 * H)
    hinted = hint(request, ())
    free_at = {n: float(f) for n, f in request.free_at.items()}
    release = unit_release_s(request.layout, free_at)
    model, variables = build_schedule(build_problem(request, hinted, release, [], starving=()))
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    assert solver.status_name(solver.solve(model)) == "OPTIMAL"
    return {s.key.removeprefix("team-a/"): s.start_s for s in extract(solver, variables)}


def test_waits_past_max_wait_come_first_the_longest_first() -> None:
    """One pool, three 1 h runs: o1 waited 34 h (priority 0), o2 25 h (priority 1000), h 1 h
    (priority 10000). Every second past `--max-wait` outweighs any wait, whatever the tier, so h
    runs last; the longest overshoot outweighs them all, so o1 runs first although o2's tier is
    higher and the sum of overshoots is the same either way (12 h); then o2 before h."""
    snap = _fleet({}, free=1)
    queue = [
        _timed(jobset("h", rjob(replicas=1), priority=10000), 1, 60),
        _timed(jobset("o2", rjob(replicas=1), priority=1000), 1, 25 * 60),
        _timed(jobset("o1", rjob(replicas=1), priority=0), 1, 34 * 60),
    ]
    assert _objective_starts(snap, queue) == {"o1": 0, "o2": 1 * H, "h": 2 * H}


def test_a_jobset_at_exactly_the_share_of_max_wait_is_starving() -> None:
    """A quarter of 24 h is 6 h: a JobSet that waited 6 h to the second is starving, one that
    waited a minute less is not."""
    snap = _fleet({}, free=1)
    at = [_timed(jobset("a", rjob(replicas=1)), 1, 6 * 60)]
    under = [_timed(jobset("a", rjob(replicas=1)), 1, 6 * 60 - 1)]
    assert starving(_request(snap, at, max_wait_s=24 * H)) == ("team-a/a",)
    assert starving(_request(snap, under, max_wait_s=24 * H)) == ()


@pytest.mark.parametrize(
    ("solver", "planner_stages"), [("best-fit", 0), ("cpsat", 4)], ids=["best-fit", "cpsat"]
)
def test_export_model_writes_the_schedule_before_the_planners_stages(
    tmp_path: Path, solver: str, planner_stages: int
) -> None:
    """`--export-model` with `--schedule cpsat`: the schedule's model as stage 00, objective and
    hint included; solved offline it reaches the objective the plan's note reports (the search
    proves these small models). A greedy planner of who starts now writes nothing else, and is
    no longer refused."""
    snap = _fleet({"a": 2, "b": 3}, free=1)
    queue = [
        _timed(jobset("wide", rjob(replicas=2)), 10, 13 * 60),
        _timed(jobset("short", rjob(replicas=1)), 1, 5),
    ]
    policy = TimePolicy(now=NOW, reservations="all", schedule="cpsat")
    target = tmp_path / "m.pbtxt"
    options = SolveOptions(workers=1, seed=0, time=policy, export_model_path=str(target))
    plan = get_solver(solver, time_policy=policy).solve(snap, queue, options)
    assert check(plan, snap, queue, options) == []
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written[0] == "m.00-schedule.pbtxt" and len(written) == 1 + planner_stages
    proto = text_format.Parse((tmp_path / written[0]).read_text(), cp_model_pb2.CpModelProto())
    assert (
        proto.name == "schedule" and proto.HasField("objective") and proto.HasField("solution_hint")
    )
    note = next(n for n in plan.solver.notes if n.startswith("schedule: "))
    assert f"model written to {tmp_path / written[0]}" in note
    offline = cp_model.CpModel()
    offline.proto.parse_text_format(text_format.MessageToString(proto))
    search = cp_model.CpSolver()
    search.parameters.num_workers = 1
    assert search.solve(offline) == cp_model.OPTIMAL
    assert f"objective {search.objective_value:.0f}," in note


@pytest.mark.parametrize("schedule", ["greedy", "cpsat"])
def test_a_jobset_starting_now_keeps_the_domain_the_pass_gave_it(schedule: ScheduleMode) -> None:
    """Two free pools. The pass starts the priority-10 hour-long JobSet and the older
    15-minute one now and reserves the other 15-minute one a pool from 15 min. Best-fit, placing
    the older one first in one tier, took the pool the hour-long one was given (the other is
    reserved from 15 min, too soon for an hour): the priority-10 JobSet was left out and a
    priority-0 one ran in its place, until solved again. Within the tier the priority-10 one now
    goes first, and the pass's plan stands in one solve."""
    snap = _fleet({}, free=2)
    queue = [
        _timed(jobset("high", rjob(replicas=1), priority=10), 1, 0),
        _timed(jobset("later", rjob(replicas=1)), 0.25, 0),
        _timed(jobset("older", rjob(replicas=1)), 0.25, 1),
    ]
    plan = _plan(snap, queue, schedule)  # the checker runs on it
    assert _starts(plan) == {"high": 0, "older": 0, "later": 0.25 * H}
    later = plan.outcome("team-a/later")
    older = plan.outcome("team-a/older")
    assert [d.value for d in later.reserved_domains] == [
        j.domain.value for j in older.jobs if j.domain
    ]
    assert older.backfill
    assert not any(n.startswith("start now: solved again") for n in plan.solver.notes)


def test_a_displaced_jobset_is_solved_again_onto_the_domain_the_pass_gave_it() -> None:
    """The pass orders by standing (priority plus aging), the tier by priority: a priority-0
    JobSet aged past a priority-10 one is given its pool first, and best-fit, placing the
    priority-10 one first, took that pool. The priority-0 one, an hour long, could not take the
    other (reserved from 15 min): solved again with it held to its pool, both start now."""
    snap = _fleet({}, free=2)
    queue = [
        _timed(jobset("high", rjob(replicas=1), priority=10), 0.25, 0),
        _timed(jobset("later", rjob(replicas=1)), 0.25, 0),
        _timed(jobset("older", rjob(replicas=1)), 1, 600),
    ]
    policy = TimePolicy(now=NOW, reservations="all", aging_per_hour=2.0)
    options = SolveOptions(workers=1, seed=0, time=policy)
    plan = get_solver("best-fit", time_policy=policy).solve(snap, queue, options)
    assert check(plan, snap, queue, options) == []
    assert _starts(plan) == {"high": 0, "older": 0, "later": 0.25 * H}
    assert any(n.startswith("start now: solved again") for n in plan.solver.notes)
    # the plan kept was first a trial solve without reasons: the one returned says why
    reason = plan.outcome("team-a/later").reason
    assert NOT_EXPLAINED not in reason and "needs 1 domain" in reason, reason


@settings(max_examples=25, deadline=None)
@given(case=_queues(), waited_h=st.integers(0, 14))
def test_the_model_charges_each_wait_at_the_ages_it_is_waited_at(
    case: tuple[ClusterSnapshot, list[JobSetRequest]], waited_h: int
) -> None:
    """Fixed to the greedy hint, the objective (no maximum wait, nothing kept) is the sum of the
    JobSets' `wait_cost` curves at their starts: a long run aging through a wait of hours is
    charged the weights it reaches, not its weight now throughout."""
    snap, queue = case
    queue = [
        js.model_copy(update={"creation_timestamp": NOW - timedelta(hours=waited_h)})
        for js in queue
    ]
    problem = _problem(snap, queue)
    if not problem.jobs:
        return
    model, _ = build_schedule(problem)
    solver = cp_model.CpSolver()
    solver.parameters.fix_variables_to_their_hinted_value = True
    solver.parameters.num_workers = 1
    assert solver.status_name(solver.solve(model)) == "OPTIMAL"
    assert solver.objective_value == sum(wait_cost(j, j.hint_start_s) for j in problem.jobs)
