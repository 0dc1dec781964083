"""The schedule's wait cost: each second charged at the age it is waited at, convex, exact."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from placer.solver.time.schedule.problem import ScheduleJob
from placer.solver.time.schedule.wait_cost import (
    WEIGHT_CAP,
    peak_weight,
    pieces,
    wait_cost,
    wait_weight,
    weight_at,
)

H = 3600


def _job(duration_s: int, waited_s: int, rank: int = 0) -> ScheduleJob:
    return ScheduleJob(
        key="ns/js",
        duration_s=duration_s,
        needs=(),
        rank=rank,
        waited_s=waited_s,
        hint_start_s=0,
        hint_counts=(),
    )


jobs = st.builds(
    _job,
    duration_s=st.integers(60, 72 * H),
    waited_s=st.integers(0, 30 * H),
    rank=st.integers(0, 5),
)


def _by_minutes(job: ScheduleJob, start_s: int) -> int:
    """The cost summed minute by minute, each minute at the weight of its age (ages here move
    in whole minutes, so every minute has one weight)."""
    return sum(60 * weight_at(job, job.waited_s + t) for t in range(0, start_s, 60))


@settings(max_examples=60, deadline=None)
@given(
    job=st.builds(
        _job,
        duration_s=st.integers(60, 72 * H),
        waited_s=st.integers(0, 20 * 60).map(lambda m: 60 * m),
        rank=st.integers(0, 5),
    ),
    minutes=st.integers(0, 20 * 60),
)
def test_the_cost_is_every_second_at_the_weight_of_its_age(job: ScheduleJob, minutes: int) -> None:
    assert wait_cost(job, 60 * minutes) == _by_minutes(job, 60 * minutes)


@settings(max_examples=100, deadline=None)
@given(job=jobs, horizon=st.integers(0, 60 * H), data=st.data())
def test_the_largest_line_of_the_pieces_is_the_cost_at_every_start(
    job: ScheduleJob, horizon: int, data: st.DataObject
) -> None:
    """What the model charges (`schedule.model.add_waits`: the cost at least every piece's line)
    is the curve itself, since the pieces' weights never fall."""
    curve = pieces(job, horizon)
    assert [p.weight for p in curve] == sorted(p.weight for p in curve)
    assert curve[0].from_s == 0
    assert curve[0].weight == wait_weight(job)
    start = data.draw(st.integers(0, horizon))
    lines = max(p.cost + p.weight * (start - p.from_s) for p in curve)
    assert lines == wait_cost(job, start, horizon) == wait_cost(job, start)


@settings(max_examples=100, deadline=None)
@given(job=jobs, horizon=st.integers(0, 60 * H))
def test_a_piece_per_hour_while_the_weight_still_ages_and_none_past_the_cap(
    job: ScheduleJob, horizon: int
) -> None:
    curve = pieces(job, horizon)
    assert len(curve) <= WEIGHT_CAP // 4 + 2
    assert all(p.from_s < max(horizon, 1) for p in curve)
    assert peak_weight(job, horizon) == max(weight_at(job, job.waited_s + p.from_s) for p in curve)
    ages = [job.waited_s + p.from_s for p in curve[1:]]
    assert all(a % H == 0 for a in ages)


def test_a_fresh_two_day_run_pushed_back_a_day_costs_what_its_aged_weight_says() -> None:
    """Twelve hours in, the two-day run weighs as any JobSet of its tier: a day's wait costs
    it 1 + 5 + ... + 45 for its first twelve hours and 48 for each of the next twelve (852
    weighted hours), not the 24 a flat weight would charge."""
    run = _job(48 * H, 0)
    assert wait_weight(run) == 1
    assert wait_cost(run, 24 * H) == (sum(1 + 4 * h for h in range(12)) + 48 * 12) * H
    short = _job(H // 2, 0)
    assert wait_cost(short, 24 * H) == 48 * 24 * H
