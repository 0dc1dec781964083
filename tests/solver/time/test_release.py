"""The release timeline: expected ends of running JobSets, overdue and undated runs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from placer.model.cluster import ClusterSnapshot, JobSetUsage, Node, RunningJobSet
from placer.solver.time.release import OVERDUE_FLOOR_S, ReleaseTimeline, expected_end_s

NOW = datetime(2026, 12, 1, 6, 0, tzinfo=UTC)


def test_remaining_time_is_duration_minus_elapsed() -> None:
    assert expected_end_s(NOW - timedelta(minutes=30), 3600, NOW) == (1800, False)


def test_undated_run_is_taken_to_start_now() -> None:
    assert expected_end_s(None, 3600, NOW) == (3600, False)


@pytest.mark.parametrize(
    ("duration_s", "expected"), [(600, OVERDUE_FLOOR_S), (36000, 3600)], ids=["floor", "share"]
)
def test_overdue_run_ends_soon_never_never(duration_s: float, expected: float) -> None:
    started = NOW - timedelta(seconds=duration_s * 3)
    assert expected_end_s(started, duration_s, NOW) == (expected, True)


def test_a_start_stamped_in_the_future_counts_as_now() -> None:
    """A start from a clock ahead of ours: the run has not begun, so it is not expected to end
    later than its whole duration from now."""
    assert expected_end_s(NOW + timedelta(minutes=10), 3600, NOW) == (3600, False)


def _node(name: str, *jobsets: str, priority: int | None = None) -> Node:
    usage = {k: JobSetUsage(priority=priority) for k in jobsets}
    return Node(name=name, jobsets=tuple(sorted(jobsets)), jobset_usage=usage)


def test_domain_frees_when_its_last_jobset_ends_and_names_who_it_waits_for() -> None:
    snap = ClusterSnapshot(
        nodes=(_node("a", "ns/short"), _node("b", "ns/long"), _node("c")),
        running={
            "ns/short": RunningJobSet(started_at=NOW, expected_duration_s=600),
            "ns/long": RunningJobSet(started_at=NOW, expected_duration_s=7200),
        },
    )
    timeline = ReleaseTimeline.build(snap, NOW, default_duration_s=3600)
    assert timeline.free_at_s(snap.nodes) == 7200
    assert timeline.node_free_at_s(snap.nodes[2]) == 0
    assert timeline.waiting_for(snap.nodes) == ["ns/long", "ns/short"]
    assert timeline.defaulted == frozenset()


def test_default_duration_applies_per_priority_when_the_source_says_nothing() -> None:
    snap = ClusterSnapshot(nodes=(_node("a", "ns/x", priority=1000), _node("b", "ns/y")))
    timeline = ReleaseTimeline.build(
        snap, NOW, default_duration_s=3600, default_for_priority={1000: 600}
    )
    assert timeline.ends_s == {"ns/x": 600, "ns/y": 3600}
    assert timeline.defaulted == {"ns/x", "ns/y"}


def test_a_raised_priority_keeps_the_default_duration_of_the_declared_one() -> None:
    """The time-aware pass lifts the JobSets it starts now above every tier; the default
    duration of their PriorityClass must still apply (found with --schedule cpsat: a 30 min
    backfill became a 6 h run and lost its gap)."""
    from placer.model.options import TimePolicy
    from placer.solver.time.release import expected_duration_s
    from tests.strategies import jobset

    policy = TimePolicy(default_duration_s=6 * 3600.0, default_duration_by_priority={100: 1800.0})
    low = jobset("smoke", priority=100)
    lifted = low.model_copy(update={"priority": 1001, "declared_priority": 100})
    assert expected_duration_s(low, policy) == expected_duration_s(lifted, policy) == 1800.0


def test_pods_of_several_priorities_take_the_highest_ones_default() -> None:
    """A running JobSet whose pods report two priorities is expected to run as long as the
    default of the higher one."""
    snap = ClusterSnapshot(
        nodes=(_node("a", "ns/mixed", priority=10), _node("b", "ns/mixed", priority=100))
    )
    timeline = ReleaseTimeline.build(snap, NOW, 60, default_for_priority={10: 3600, 100: 5 * 3600})
    assert timeline.ends_s == {"ns/mixed": 5 * 3600}
