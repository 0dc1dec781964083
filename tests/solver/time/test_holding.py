"""Which of the schedule's future reservations hold their domains (`holding`)."""

from __future__ import annotations

from placer.solver.time.holding import held_reservations
from placer.solver.time.reservations import Reservation


def _r(key: str, start_s: float) -> Reservation:
    return Reservation(key, start_s, start_s + 3600, {"w": ((("rack", key),))})


def test_unstated_reservations_hold_only_at_the_head_or_past_max_wait() -> None:
    """Queue order now, a, b, c, d, e: `now` starts now (always kept, and not a waiting head),
    `a` is the head, `b` states its run, `c` waited past the maximum, `d` and `e` neither."""
    found = {k: _r(k, 0.0 if k == "now" else 3600.0) for k in ("now", "a", "b", "c", "d", "e")}
    order = ["now", "a", "b", "c", "d", "e"]
    held, note = held_reservations(found, order, stated={"b"}, late={"c"}, head=1)
    assert sorted(held) == ["a", "b", "c", "now"]
    assert note == (
        "schedule: 2 JobSets without a stated run time behind the head hold no domains"
        " (expected start only)"
    )
    wider, _ = held_reservations(found, order, stated={"b"}, late={"c"}, head=4)
    assert sorted(wider) == ["a", "b", "c", "d", "now"]


def test_when_every_jobset_states_its_run_everything_holds_and_nothing_is_said() -> None:
    found = {k: _r(k, 3600.0) for k in ("a", "b")}
    assert held_reservations(found, ["a", "b"], stated={"a", "b"}, late=(), head=1) == (found, "")
