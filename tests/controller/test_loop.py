"""When cycles run (loop.py): what stops the watch loop, what only delays it, and how a first list
retries. The cycle itself is replaced here; the real one is exercised by every other test."""

from __future__ import annotations

import threading

import pytest

from placer.controller import loop
from placer.controller.decide.records.ledger import Deposed
from placer.controller.reconcile import Controller, CycleReport
from placer.model.errors import ClusterError, InputError
from tests.controller.builders import controller, tpu_cluster


def _looping(**config: float) -> Controller:
    """A controller whose loop wakes at once (no replan wait, no debounce)."""
    return controller(tpu_cluster(), replan_s=0.01, debounce_s=0.0, **config)


def test_a_cycle_that_crashes_is_retried_and_the_loop_goes_on() -> None:
    ctl = _looping()
    stop = threading.Event()
    calls: list[int] = []
    real_cycle = ctl.run_cycle

    def cycle(*, force_plan: bool = False) -> CycleReport:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("a bug in one cycle")
        stop.set()
        return real_cycle(force_plan=force_plan)

    ctl.run_cycle = cycle  # type: ignore[method-assign]  # a stub cycle: the loop is tested
    loop.run_loop(ctl, stop)
    assert len(calls) == 2
    assert not ctl.deposed and ctl.misconfigured is None
    assert ctl.metrics.registry.get_sample_value("placer_leader") == 0


def test_a_deposed_leader_stops_and_says_so() -> None:
    ctl = _looping()
    stop = threading.Event()

    def cycle(*, force_plan: bool = False) -> CycleReport:
        raise Deposed("term 3 claimed by another replica")

    ctl.run_cycle = cycle  # type: ignore[method-assign]  # a stub cycle: the loop is tested
    loop.run_loop(ctl, stop)
    assert ctl.deposed and stop.is_set()


def test_a_flag_the_cluster_contradicts_stops_the_loop_with_the_error() -> None:
    ctl = _looping()
    stop = threading.Event()
    error = InputError("--default-duration names PriorityClass gold: not found", code="usage")

    def cycle(*, force_plan: bool = False) -> CycleReport:
        raise error

    ctl.run_cycle = cycle  # type: ignore[method-assign]  # a stub cycle: the loop is tested
    loop.run_loop(ctl, stop)
    assert ctl.misconfigured is error and stop.is_set()


def test_a_first_list_retries_temporary_errors_with_backoff() -> None:
    waits: list[float] = []
    ctl = controller(tpu_cluster(), list_retry_s=60.0)
    ctl.sleep = waits.append
    failures = [ClusterError("429", status=429, temporary=True)] * 3

    def relist() -> None:
        if failures:
            raise failures.pop()

    ctl.relist = relist  # type: ignore[method-assign]  # a stub list: the retries are tested
    loop.relist_with_retries(ctl)
    assert waits == [0.5, 1.0, 2.0]


def test_a_first_list_gives_up_at_once_on_an_error_no_retry_fixes() -> None:
    waits: list[float] = []
    ctl = controller(tpu_cluster(), list_retry_s=60.0)
    ctl.sleep = waits.append
    calls: list[int] = []

    def relist() -> None:
        calls.append(1)
        raise ClusterError("403 forbidden", status=403)

    ctl.relist = relist  # type: ignore[method-assign]  # a stub list: the retries are tested
    with pytest.raises(ClusterError, match="403"):
        loop.relist_with_retries(ctl)
    assert calls == [1] and waits == []
