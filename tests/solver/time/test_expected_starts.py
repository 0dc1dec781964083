"""Expected starts of JobSets queued behind a planned round (a Kueue Workload without quota)."""

from __future__ import annotations

from placer.model.options import SolveOptions, TimePolicy
from placer.model.plan import Plan
from placer.model.workload import JobSetRequest
from placer.solver.check.checker import check
from placer.solver.registry import get_solver
from placer.solver.time.behind import expected_starts_behind
from placer.solver.time.timeaware import TimeAwareSolver, reservations_of
from tests.solver.time.test_timeaware import NOW, H, _fleet, _queue
from tests.strategies import jobset, rjob

OPTIONS = SolveOptions(workers=1, time=TimePolicy(now=NOW, reservations="head"))


def _late(name: str, pools: int) -> JobSetRequest:
    return jobset(name, rjob(replicas=pools)).model_copy(
        update={"expected_duration_s": 1 * H, "duration_source": "annotation"}
    )


def _planned() -> tuple[Plan, list[JobSetRequest]]:
    snap, queue = _fleet(), _queue()
    plan = TimeAwareSolver(get_solver("best-fit")).solve(snap, queue, OPTIONS)
    assert check(plan, snap, queue, OPTIONS) == []
    # the round: short placed now for 0.5 h on one free pool; wide reserved on all four at 2 h
    assert plan.outcome("team-a/short").status == "placed"
    assert plan.outcome("team-a/wide").expected_start_seconds == 2 * H
    return plan, queue


def test_behind_the_round_a_jobset_waits_for_what_it_placed_and_reserved() -> None:
    snap = _fleet()
    found = expected_starts_behind(snap, [_late("two", 2), _late("four", 4)], OPTIONS, _planned())
    assert len(found) == 2
    two, four = (next(o for o in found if o.name == n) for n in ("two", "four"))
    # two pools: both free ones once short ends (0.5 h), done by 1.5 h, before wide's 2 h
    assert (two.key, two.status, two.expected_start_seconds) == (
        "team-a/two",
        "unschedulable",
        0.5 * H,
    )
    assert {d.value for d in two.reserved_domains} == set()  # an estimate reserves nothing
    # four pools: only after wide's reservation ends (2 h + 1 h)
    assert (four.key, four.expected_start_seconds) == ("team-a/four", 3 * H)
    assert four.waits_for  # it names running JobSets it waits for


def test_without_a_round_only_running_jobsets_and_reservations_count() -> None:
    [two] = expected_starts_behind(_fleet(), [_late("two", 2)], OPTIONS)
    assert two.expected_start_seconds == 0.0  # pool-2 and pool-3 are free now


def test_a_jobset_that_fits_nowhere_even_empty_has_no_expected_start() -> None:
    [huge] = expected_starts_behind(_fleet(), [_late("huge", 5)], OPTIONS, _planned())
    assert huge.expected_start_seconds is None


def test_a_planned_jobsets_earlier_reservation_is_not_held_twice() -> None:
    """The snapshot still carries wide's reservation from the round before (here on every pool
    from now to 1.5 h); this round planned wide anew (all four pools at 2 h), so only the new one
    holds: two still starts when short ends, as without the old one."""
    plan, queue = _planned()
    policy = OPTIONS.time
    before = [
        r.model_copy(update={"start_s": 0.0, "end_s": 1.5 * H})
        for r in reservations_of(plan, queue, policy)
        if r.jobset == "team-a/wide"
    ]
    assert len(before) == 4
    snap = _fleet().model_copy(update={"reservations": tuple(before)})
    [two] = expected_starts_behind(snap, [_late("two", 2)], OPTIONS, (plan, queue))
    assert two.expected_start_seconds == 0.5 * H
