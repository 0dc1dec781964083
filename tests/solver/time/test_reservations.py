"""The reservation pass: earliest starts in queue order, no two holds overlapping on one unit."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from placer.solver.time.calendar import Calendar, UnitLayout
from placer.solver.time.reservations import Candidate, Need, Reservation, Unit, UnitId, reserve
from tests.strategies import ReservationCase, reservation_cases

KEY = "pool"


def _units(*free_at: float) -> list[Unit]:
    return [Unit((KEY, f"d{i}"), frozenset({f"n{i}"})) for i in range(len(free_at))]


def _free(*free_at: float) -> dict[str, float]:
    return {f"n{i}": t for i, t in enumerate(free_at)}


def _all(units: list[Unit]) -> frozenset[UnitId]:
    return frozenset(u.id for u in units)


def _wide(name: str, count: int, duration: float, units: list[Unit]) -> Candidate:
    return Candidate(name, duration, (Need("w", count, _all(units)),))


def test_a_jobset_that_fits_now_starts_now() -> None:
    units = _units(0, 0, 100)
    [r] = reserve(units, [_wide("a", 2, 50, units)], free_at=_free(0, 0, 100))
    assert (r.start_s, r.end_s) == (0, 50)
    assert r.units == {"w": ((KEY, "d0"), (KEY, "d1"))}


def test_wide_jobset_waits_for_enough_domains_then_holds_them() -> None:
    units = _units(0, 30, 100, 200)
    [r] = reserve(units, [_wide("wide", 3, 10, units)], free_at=_free(0, 30, 100, 200))
    assert r.start_s == 100
    assert set(r.units["w"]) == {(KEY, "d0"), (KEY, "d1"), (KEY, "d2")}


def test_later_candidates_see_earlier_reservations_as_busy() -> None:
    units = _units(0, 0, 100)
    wide = _wide("wide", 3, 50, units)
    long_narrow = _wide("long", 1, 500, units)
    short_narrow = _wide("short", 1, 80, units)
    result = reserve(units, [wide, long_narrow, short_narrow], free_at=_free(0, 0, 100))
    by_name = {r.jobset: r for r in result}
    assert by_name["wide"].start_s == 100
    # the long one cannot run before the wide reservation ends: it waits until 150
    assert by_name["long"].start_s == 150
    # the short one fits in the gap before the wide reservation: it starts now (backfill)
    assert by_name["short"].start_s == 0


def test_limit_stops_after_that_many_delayed_candidates() -> None:
    units = _units(0, 100)
    cands = [_wide("now", 1, 10, units), _wide("head", 2, 10, units), _wide("next", 2, 10, units)]
    result = reserve(units, cands, free_at=_free(0, 100), limit=1)
    assert [r.jobset for r in result] == ["now", "head"]
    forced = reserve(units, cands, free_at=_free(0, 100), limit=1, always={"next"})
    assert [r.jobset for r in forced] == ["now", "head", "next"]


def test_never_fitting_candidate_has_no_start() -> None:
    units = [*_units(0), Unit((KEY, "broken"), frozenset({"broken"}))]
    [r] = reserve(units, [_wide("big", 2, 10, units)], free_at={"broken": math.inf})
    assert r == Reservation("big", None, None)


def test_overlapping_needs_are_matched_not_greedily_blocked() -> None:
    # need "a" may use d0 or d1, need "b" only d0: a greedy pick of d0 for "a" would block "b"
    units = _units(0, 0)
    cand = Candidate(
        "x",
        10,
        (
            Need("a", 1, frozenset({(KEY, "d0"), (KEY, "d1")})),
            Need("b", 1, frozenset({(KEY, "d0")})),
        ),
    )
    [r] = reserve(units, [cand])
    assert r.start_s == 0
    assert r.units == {"a": ((KEY, "d1"),), "b": ((KEY, "d0"),)}


def test_gap_filling_prefers_the_unit_busy_soonest_after_the_run() -> None:
    units = _units(0, 0, 100)
    wide = Candidate("wide", 50, (Need("w", 2, frozenset({(KEY, "d1"), (KEY, "d2")})),))
    short = Candidate("short", 50, (Need("w", 1, frozenset({(KEY, "d0"), (KEY, "d1")})),))
    _, r = reserve(units, [wide, short], free_at=_free(0, 0, 100))
    # d1 is reserved from 100: running the short one there keeps d0 free for long stretches
    assert (r.start_s, r.units) == (0, {"w": ((KEY, "d1"),)})


def test_a_block_and_a_pool_inside_it_are_never_held_at_once() -> None:
    # exclusive keys of two JobSets overlap: pool p1 lies inside block b0
    pool = Unit(("pool", "p1"), frozenset({"n1", "n2"}))
    block = Unit(("block", "b0"), frozenset({"n0", "n1", "n2", "n3"}))
    on_pool = Candidate("pool-job", 100, (Need("w", 1, frozenset({pool.id})),))
    on_block = Candidate("block-job", 50, (Need("w", 1, frozenset({block.id})),))
    first, second = reserve([pool, block], [on_pool, on_block])
    assert (first.start_s, second.start_s) == (0, 100)


@st.composite
def _scenarios(draw: st.DrawFn) -> tuple[list[Unit], dict[str, float], list[Candidate]]:
    n_nodes = draw(st.integers(1, 6))
    free_at = {
        f"n{i}": draw(st.sampled_from([0.0, 10.0, 25.0, 60.0, math.inf])) for i in range(n_nodes)
    }
    nodes = sorted(free_at)
    units = [Unit(("pool", n), frozenset({n})) for n in nodes]
    if n_nodes > 1 and draw(st.booleans()):  # an overlapping coarser key
        units.append(Unit(("block", "b"), frozenset(nodes[:2])))
    ids = [u.id for u in units]
    cands = []
    for c in range(draw(st.integers(1, 5))):
        needs = []
        for r in range(draw(st.integers(1, 2))):
            eligible = draw(st.sets(st.sampled_from(ids), min_size=1))
            needs.append(Need(f"r{r}", draw(st.integers(1, 3)), frozenset(eligible)))
        cands.append(Candidate(f"j{c}", draw(st.sampled_from([5.0, 20.0, 40.0])), tuple(needs)))
    return units, free_at, cands


@settings(max_examples=150, deadline=None)
@given(_scenarios())
def test_reservations_are_consistent(
    scenario: tuple[list[Unit], dict[str, float], list[Candidate]],
) -> None:
    units, free_at, cands = scenario
    result = reserve(units, cands, free_at=free_at)
    assert [r.jobset for r in result] == [c.jobset for c in cands]
    nodes_of = {u.id: u.nodes for u in units}
    held: dict[str, list[tuple[float, float]]] = {n: [] for n in free_at}
    for cand, r in zip(cands, result, strict=True):
        if r.start_s is None:
            assert r.units == {}
            continue
        assert r.end_s == r.start_s + cand.duration_s
        taken = [u for group in r.units.values() for u in group]
        for need in cand.needs:
            assert len(r.units[need.name]) == need.count
            assert set(r.units[need.name]) <= need.eligible
        nodes = [n for u in taken for n in nodes_of[u]]
        assert len(nodes) == len(set(nodes)), "two child Jobs share a node"
        for n in nodes:
            assert free_at[n] <= r.start_s, "reserved before its running JobSets end"
            for s, e in held[n]:
                assert e <= r.start_s or r.end_s <= s, "two reservations overlap on one node"
            held[n].append((r.start_s, r.end_s))


def test_kept_units_stay_the_candidates_own_and_are_held_against_earlier_ones() -> None:
    units = _units(0, 100, 200, 300)
    free = _free(0, 100, 200, 300)
    kept = {"late": frozenset({(KEY, "d2"), (KEY, "d3")})}
    first = _wide("first", 2, 50, units)
    late = _wide("late", 2, 50, units)
    by_name = {r.jobset: r for r in reserve(units, [first, late], free_at=free, kept=kept)}
    # late keeps d2 and d3 (re-timed to when both are free), though d0 and d1 free up sooner
    assert (by_name["late"].start_s, set(by_name["late"].units["w"])) == (300, set(kept["late"]))
    # first, ahead in the queue, plans around the kept reservation
    assert by_name["first"].start_s == 100
    assert set(by_name["first"].units["w"]) == {(KEY, "d0"), (KEY, "d1")}


def test_kept_reservations_are_re_timed_in_the_order_they_were_promised_not_queue_order() -> None:
    """`long` is queued ahead of `wide` (created in the same second, queued by name) but was
    reserved after it: re-timed first, it would take d0 from 100, push `wide` back to 400 and
    leave d2 open to a 300-second run now, inside `wide`'s promise."""
    units = _units(100, 100, 0)
    wide = _wide("wide", 3, 200, units)
    long_ = Candidate("long", 300, (Need("w", 1, _all(units)),))
    kept = {"wide": _all(units), "long": frozenset({(KEY, "d0")})}
    starts = {"wide": 100.0, "long": 300.0}
    found = reserve(units, [long_, wide], free_at=_free(100, 100, 0), kept=kept, kept_starts=starts)
    by_name = {r.jobset: r for r in found}
    assert (by_name["wide"].start_s, set(by_name["wide"].units["w"])) == (100, set(kept["wide"]))
    assert (by_name["long"].start_s, by_name["long"].units["w"]) == (300, ((KEY, "d0"),))


def test_kept_units_that_no_longer_fit_give_a_fresh_reservation() -> None:
    units = _units(0, 0, 0)
    never = _free(0, 0, math.inf)
    kept = {"a": frozenset({(KEY, "d1"), (KEY, "d2")})}
    [r] = reserve(units, [_wide("a", 2, 50, units)], free_at=never, kept=kept)
    assert (r.start_s, set(r.units["w"])) == (0, {(KEY, "d0"), (KEY, "d1")})
    gone = {"a": frozenset({(KEY, "d1"), (KEY, "d9")})}
    [r] = reserve(units, [_wide("a", 2, 50, units)], free_at=_free(0, 0, 0), kept=gone)
    assert r.start_s == 0 and len(r.units["w"]) == 2


def test_the_units_ever_free_are_asked_again_after_a_hold() -> None:
    """`Calendar.ever_free` is kept between holds: a hold that never ends takes its unit out."""
    layout = UnitLayout(_units(0, 0, 0))
    calendar = Calendar(layout, {})
    assert calendar.ever_free() == 0b111
    calendar.hold(1, 0.0, math.inf)
    assert calendar.ever_free() == 0b101
    calendar.hold(0, 5.0, 10.0)  # ends: still free before and after
    assert calendar.ever_free() == 0b101


def test_a_hold_from_outside_inside_a_busy_period_does_not_free_the_unit_early() -> None:
    """d0 runs until 300 and another controller reserved it over [100, 200); d1 frees at 200.
    Before, the calendar kept the two intervals of d0 side by side and read only the last one
    starting before a run's end, so d0 looked free from 200 (a property test found it, with a
    coordinator beside: tests/solver/time/test_mixed_starts.py)."""
    units = _units(300, 200)
    [r] = reserve(
        units,
        [_wide("a", 1, 100, units)],
        free_at=_free(300, 200),
        holds=[((KEY, "d0"), 100.0, 200.0)],
    )
    assert (r.start_s, r.units) == (200, {"w": ((KEY, "d1"),)})


def test_holds_overlapping_in_any_order_keep_a_unit_busy_over_their_union() -> None:
    """[20, 30) inside [10, 60), and [65, 72) overlapping [70, 80): busy over [10, 60) and
    [65, 80), whatever the order they came in (before, [20, 30) hid the end of [10, 60))."""
    layout = UnitLayout(_units(0))
    calendar = Calendar(layout, {})
    for start, end in [(10.0, 60.0), (20.0, 30.0), (70.0, 80.0), (65.0, 72.0)]:
        calendar.hold(0, start, end)
    busy = [t for t in range(0, 90, 5) if not calendar.is_free(0, t, t + 1)]
    assert busy == [10, 15, 20, 25, 30, 35, 40, 45, 50, 55, 65, 70, 75]
    assert calendar.next_busy_after(0, 61) == 65


_LATER_HOLDS = st.lists(
    st.tuples(
        st.integers(0, 20), st.sampled_from([0.0, 5.0, 30.0]), st.sampled_from([0.0, 5.0, 40.0])
    ),
    max_size=6,
)
"""Holds to add to a case's calendar: (unit number modulo the units, start, length)."""


def _held(case: ReservationCase) -> tuple[UnitLayout, Calendar]:
    """The case's units and a calendar of them with its running JobSets and its holds."""
    layout = UnitLayout(case.units)
    calendar = Calendar(layout, case.free_at)
    for uid, start, end in case.holds:
        calendar.hold(layout.number[uid], start, end)
    return layout, calendar


@settings(max_examples=300, deadline=None)
@given(
    case=reservation_cases(),
    later=_LATER_HOLDS,
    asked=st.lists(
        st.tuples(st.sampled_from([0.0, 5.0, 20.0, 45.0]), st.sampled_from([0.0, 5.0, 30.0])),
        min_size=1,
        max_size=4,
    ),
)
def test_free_mask_answers_as_every_unit_asked_alone(
    case: ReservationCase,
    later: list[tuple[int, float, float]],
    asked: list[tuple[float, float]],
) -> None:
    """`Calendar.free_mask` checks one unit per group of units busy over the same periods; after
    any holds, its answer is each unit's own `is_free` (a group not split by a hold on one of
    its units answers for a unit no longer like the others)."""
    layout, calendar = _held(case)
    count = len(layout.ids)
    everyone = (1 << count) - 1
    for step in range(len(later) + 1):
        if step:
            unit, start, length = later[step - 1]
            calendar.hold(unit % count, start, start + length)
        for t, run in asked:
            within = everyone if step % 2 else everyone & ~(1 << (step % count))
            alone = [u for u in range(count) if within >> u & 1 and calendar.is_free(u, t, t + run)]
            assert calendar.free_mask(t, t + run, within) == sum(1 << u for u in alone)


@settings(max_examples=300, deadline=None)
@given(
    case=reservation_cases(),
    later=_LATER_HOLDS,
    times=st.sets(st.sampled_from([0.0, 5.0, 10.0, 20.0, 25.0, 35.0, 45.0, 60.0]), min_size=1),
    duration=st.sampled_from([0.0, 5.0, 15.0, 30.0]),
    left_out=st.integers(0, 20),
    least=st.lists(st.tuples(st.integers(1, 2**21 - 1), st.integers(0, 4)), max_size=2),
)
def test_free_masks_answer_as_free_mask_at_each_instant(
    case: ReservationCase,
    later: list[tuple[int, float, float]],
    times: set[float],
    duration: float,
    left_out: int,
    least: list[tuple[int, int]],
) -> None:
    """`Calendar.free_masks` reads each unit's busy intervals once for all the instants a
    JobSet is asked at; at each it answers as `free_mask` does, empty runs included, from the
    first instant where every (mask, count) of `least` has that many free units (at every
    instant before, some has not)."""
    layout, calendar = _held(case)
    count = len(layout.ids)
    for unit, start, length in later:
        calendar.hold(unit % count, start, start + length)
    within = ((1 << count) - 1) & ~(1 << (left_out % count))
    instants = sorted(times)
    expected = [calendar.free_mask(t, t + duration, within) for t in instants]
    given = dict(calendar.free_masks(instants, duration, within, least))
    assert sorted(given) == list(given)

    def enough(mask: int) -> bool:
        return all((mask & m).bit_count() >= c for m, c in least)

    empty_run = instants[0] + duration <= 0
    first = next((i for i, mask in enumerate(expected) if enough(mask)), len(instants))
    if empty_run:
        assert given.get(0) == expected[0]
        first = next((i for i in range(1, len(instants)) if enough(expected[i])), len(instants))
    starts = [i for i in given if not (empty_run and i == 0)]
    # none before the first instant given has enough free units; from it on, the mask last
    # given holds between the instants given
    assert first >= starts[0] if starts else first == len(instants)
    if not starts:
        return
    if all(start <= 0 for _, start, _ in [*case.holds, *later]):
        # no hold for later: every unit is free for good from some instant on, and the
        # first instant given is the first with enough
        assert starts[0] == first
    carried = {starts[0]: given[starts[0]]}
    for i in range(starts[0] + 1, len(instants)):
        carried[i] = given.get(i, carried[i - 1])
    assert all(carried[i] == expected[i] for i in carried)


def test_free_masks_refuse_a_calendar_held_while_they_are_read() -> None:
    layout = UnitLayout(_units(0, 0))
    calendar = Calendar(layout, {})
    calendar.hold(1, 0.0, 10.0)
    masks = calendar.free_masks([0.0, 10.0], 5.0, 0b11)
    assert next(masks) == (0, 0b01)
    calendar.hold(0, 10.0, 20.0)
    with pytest.raises(RuntimeError, match="held while"):
        next(masks)


@pytest.mark.parametrize("count", [1, 2, 3, 4, 5])
def test_free_masks_start_where_enough_units_are_free(count: int) -> None:
    """Four pools free for good at 10, 20, 30 and 40: asked for `count` of them, the first
    instant given is the one by which that many are free (none: nothing given)."""
    layout = UnitLayout(_units(0, 0, 0, 0))
    calendar = Calendar(layout, _free(10, 20, 30, 40))
    times = [0.0, 10.0, 20.0, 30.0, 40.0, 50.0]
    given = list(calendar.free_masks(times, 5.0, 0b1111, [(0b1111, count)]))
    if count > 4:
        assert given == []
    else:
        assert given[0] == (count, (1 << count) - 1)
