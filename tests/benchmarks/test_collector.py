"""Benchmarks time a call with the garbage collector as placer's entry points run it."""

from __future__ import annotations

import gc

import pytest

from benchmarks.reporting.collector import CollectorMode, timed_call


@pytest.mark.parametrize(("mode", "enabled_inside"), [("paused", False), ("running", True)])
def test_the_call_runs_with_the_collector_as_asked_and_it_is_left_as_found(
    mode: CollectorMode, enabled_inside: bool
) -> None:
    assert gc.isenabled()
    timed = timed_call(gc.isenabled, mode)
    assert timed.value is enabled_inside
    assert gc.isenabled()
    assert timed.wall_s >= 0


def test_paused_the_collection_owed_after_the_call_is_timed_apart() -> None:
    paused = timed_call(lambda: None, "paused")
    running = timed_call(lambda: None, "running")
    assert paused.collect_s is not None and paused.collect_s >= 0
    assert running.collect_s is None


def test_a_call_that_raises_leaves_the_collector_on() -> None:
    def fails() -> None:
        raise RuntimeError("planner failed")

    with pytest.raises(RuntimeError):
        timed_call(fails, "paused")
    assert gc.isenabled()
