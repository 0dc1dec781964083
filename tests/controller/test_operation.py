"""Operating the controller: metrics, structured logs, leadership loss."""

from __future__ import annotations

import json
import logging
import threading
from typing import Any

from prometheus_client import generate_latest

from placer.controller.act.leader import LeaderSettings, run_elected
from placer.controller.act.memory_adapter import MemoryCluster
from placer.controller.logs import JsonFormatter
from tests.controller.builders import add_jobset, controller, tpu_cluster


def sample(ctl: Any, name: str, **labels: str) -> float | None:
    value = ctl.metrics.registry.get_sample_value(name, labels or None)
    return None if value is None else float(value)


def test_metrics_follow_the_cycles() -> None:
    cluster = tpu_cluster(blocks=2)
    add_jobset(cluster, "a", jobs=1, pods=2)
    add_jobset(cluster, "b", jobs=2)
    ctl = controller(cluster)
    ctl.run_once()
    assert sample(ctl, "placer_placed_jobsets") == 1
    assert sample(ctl, "placer_unschedulable_jobsets") == 1
    assert sample(ctl, "placer_writes_total", kind="ungate") == 2
    assert sample(ctl, "placer_writes_total", kind="record") == 1
    assert sample(ctl, "placer_plan_duration_seconds_count") == 1
    assert sample(ctl, "placer_solver_gap") is not None
    cluster.inject("patch", "jobsets", 503, times=100)
    cluster.delete("jobsets", "b", namespace="default")
    add_jobset(cluster, "c", jobs=1, pods=1)
    ctl.run_once()
    assert sample(ctl, "placer_write_failures_total", kind="record") == 1
    text = generate_latest(ctl.metrics.registry).decode()
    assert "placer_reconcile_duration_seconds_bucket" in text


def test_json_logs_carry_extra_fields() -> None:
    record = logging.LogRecord("placer.x", logging.INFO, __file__, 1, "placed %s", ("a",), None)
    record.jobset = "ns/a"
    entry = json.loads(JsonFormatter().format(record))
    assert entry["msg"] == "placed a" and entry["level"] == "info" and entry["jobset"] == "ns/a"


class _LosingCluster(MemoryCluster):
    """Leads, then loses the lease while the work runs."""

    def lead(self, settings: Any, **kw: Any) -> None:
        started = threading.Thread(target=kw["on_started"], daemon=True)
        started.start()
        kw["on_stopped"]()


def test_losing_the_lease_stops_the_work() -> None:
    stop = threading.Event()
    ran = threading.Event()

    def work(s: threading.Event) -> None:
        ran.set()
        s.wait(5)

    lost = run_elected(_LosingCluster(), LeaderSettings(namespace="ns", identity="me"), work, stop)
    assert lost and stop.is_set()


def test_a_stopped_leader_is_not_a_loss() -> None:
    stop = threading.Event()

    def work(s: threading.Event) -> None:
        s.set()  # e.g. SIGTERM during work

    assert (
        run_elected(MemoryCluster(), LeaderSettings(namespace="ns", identity="me"), work, stop)
        is False
    )


def test_a_cycle_times_its_phases() -> None:
    cluster = tpu_cluster(blocks=2)
    add_jobset(cluster, "a", jobs=1)
    report = controller(cluster).run_once()
    assert list(report.phases) == [
        "observe",
        "survey",
        "snapshot",
        "review",
        "plan",
        "commit",
        "write planning",
        "writes",
    ]
    assert all(seconds >= 0 for seconds in report.phases.values())
    assert sum(report.phases.values()) <= report.wall_s
