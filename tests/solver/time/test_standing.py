"""A waiting JobSet's standing: its wait, whether it is past `--max-wait`, the reservation order."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from placer.model.options import TimePolicy
from placer.model.workload import JobSetRequest
from placer.solver.time.standing import past_max_wait, reservation_order, waited_s
from tests.strategies import jobset

NOW = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)
H = 3600.0
POLICY = TimePolicy(now=NOW, max_wait_s=24 * H, aging_per_hour=100.0)


def _created(name: str, ago_s: float, priority: int = 0) -> JobSetRequest:
    return jobset(name, priority=priority).model_copy(
        update={"creation_timestamp": NOW - timedelta(seconds=ago_s)}
    )


def test_past_max_wait_means_longer_than_it() -> None:
    at = _created("at", 24 * H)
    after = _created("after", 24 * H + 1)
    assert past_max_wait([at, after], POLICY, NOW) == {"team-a/after"}


def test_jobsets_past_max_wait_go_first_the_longest_waiting_first() -> None:
    """Past `--max-wait`, priority and aging no longer order them: the one that waited longest
    is reserved first, then the others by standing."""
    queue = [
        _created("fresh-high", 1 * H, priority=10_000),
        _created("past-25h", 25 * H),
        _created("past-30h", 30 * H),
    ]
    ordered = sorted(queue, key=lambda js: reservation_order(js, POLICY, NOW))
    assert [js.name for js in ordered] == ["past-30h", "past-25h", "fresh-high"]


def test_a_creation_time_in_the_future_counts_as_no_wait() -> None:
    """A JobSet stamped by a clock ahead of ours has not waited: never a negative wait, which
    would lower its standing below its priority."""
    assert waited_s(_created("skewed", -600), NOW) == 0.0
    assert waited_s(_created("waited", 600), NOW) == 600.0
