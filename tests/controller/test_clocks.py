"""A round has one instant: the events the controller writes are dated on the wall clock it is
given (`Clocks.wall`), the clock its plans and reservations read, not on the system's."""

from __future__ import annotations

from datetime import UTC, datetime

from placer.controller import ControllerConfig
from placer.controller.clocks import Clocks
from placer.controller.reconcile import Controller
from placer.model.durations import format_rfc3339
from tests.controller.builders import add_jobset, events, tpu_cluster

T0 = datetime(2031, 7, 4, 9, 30, 15, tzinfo=UTC).timestamp()


def test_format_rfc3339_gives_whole_seconds_in_utc() -> None:
    assert format_rfc3339(0) == "1970-01-01T00:00:00Z"
    assert format_rfc3339(T0 + 0.9) == "2031-07-04T09:30:15Z"


def test_events_are_dated_on_the_controllers_wall_clock() -> None:
    cluster = tpu_cluster(blocks=2)
    add_jobset(cluster, "too-wide", jobs=3)  # three child Jobs, two blocks: never placed
    config = ControllerConfig(solver="best-fit", window_s=0.0)
    clocks = Clocks(sleep=lambda s: None, wall=lambda: T0)
    Controller(cluster, config, clocks=clocks).run_once()
    [event] = events(cluster, "Unschedulable")
    assert event["firstTimestamp"] == event["lastTimestamp"] == "2031-07-04T09:30:15Z"
