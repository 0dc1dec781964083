"""The bitmask calendar changes no reservation: the pass before it is the oracle.

`placer.solver.time.calendar` answers "which units are free, by preference" from grouped bitmasks
instead of checking every unit (benchmarks/RESULTS-controller.md). The previous pass, kept in
`tests/solver/time/reservations_before.py`, runs beside it on random cases, including the quirks of
its rules: overlapping held periods, blocks over pools, empty runs, kept units that are gone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypedDict

from hypothesis import given, settings

from placer.solver.time.calendar import UnitLayout
from placer.solver.time.reservations import UnitId, reserve
from tests.solver.time import reservations_before
from tests.strategies import ReservationCase, reservation_cases


class _Keywords(TypedDict):
    """The keyword arguments both passes take."""

    free_at: Mapping[str, float]
    limit: int | None
    always: frozenset[str]
    holds: list[tuple[UnitId, float, float]]
    kept: Mapping[str, frozenset[UnitId]]


@settings(max_examples=600, deadline=None)
@given(case=reservation_cases())
def test_reservations_equal_the_previous_pass(case: ReservationCase) -> None:
    args: _Keywords = {
        "free_at": case.free_at,
        "limit": case.limit,
        "always": case.always,
        "holds": case.holds,
        "kept": case.kept,
    }
    expected = reservations_before.reserve(case.units, case.candidates, **args)
    assert reserve(case.units, case.candidates, **args) == expected
    # a layout built once and shared between passes answers the same
    layout = UnitLayout(case.units)
    assert reserve(layout, case.candidates, **args) == expected
    assert reserve(layout, case.candidates, **args) == expected
