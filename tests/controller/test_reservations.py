"""Time-aware planning in the controller: reservations in the ledger, backfill, restarts, events.

Three blocks of two nodes; every child Job takes a block. `run` holds b0 and b1 for 2 h; `a-wide`
needs all three blocks for 1 h, so it is reserved from 2 h on, b2 included. A JobSet may start on
b2 now only if it is expected to end within those 2 h (backfill).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from benchmarks import cluster_sim as sim
from placer.cli import build_parser, main
from placer.commands.controller import _config
from placer.controller.adapter import ClusterAdapter
from placer.controller.kube_adapter import KubeAdapter
from placer.controller.ledger import LedgerEntry, read_ledger
from placer.controller.memory_adapter import MemoryCluster
from placer.controller.reconcile import Controller, ControllerConfig
from placer.model.durations import EXPECTED_DURATION
from placer.model.options import SolveOptions, TimePolicy
from placer.solver.checker import check
from tests.controller.apiserver import ApiServer
from tests.controller.builders import BLOCK, TPU, block_of, events, record, tpu_cluster
from tests.controller.test_cli_deploy import kubeconfig

NS = "placer-system"
T0 = float(int(time.time()))
H = 3600.0


def _stamp(epoch_s: float) -> str:
    return datetime.fromtimestamp(epoch_s, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def add(cluster: MemoryCluster, name: str, jobs: int, duration: str) -> None:
    obj = sim.jobset_object(name, replicated_jobs=[("w", jobs, 2, {TPU: "4"})], exclusive_key=BLOCK)
    obj["metadata"]["annotations"][EXPECTED_DURATION] = duration
    obj["metadata"]["creationTimestamp"] = _stamp(T0 - 60)
    cluster.create("jobsets", obj)
    sim.create_pods(cluster, "default", name)


def start(cluster: MemoryCluster, name: str, at_s: float) -> None:
    """Bind the JobSet's pods (kube-scheduler's part) and date them."""
    sim.schedule(cluster)
    for pod in cluster.objects("pods"):
        if pod["metadata"]["labels"].get("jobset.sigs.k8s.io/jobset-name") != name:
            continue

        def started(obj: dict[str, Any]) -> None:
            obj["status"] = {**(obj.get("status") or {}), "startTime": _stamp(at_s)}

        cluster.mutate("pods", pod["metadata"]["name"], started, namespace="default")


def timed(adapter: ClusterAdapter, reservations: str = "head") -> Controller:
    policy = TimePolicy(reservations=reservations)  # type: ignore[arg-type]
    config = ControllerConfig(
        solver="best-fit", window_s=0.0, options=SolveOptions(time_limit_s=10.0, time=policy)
    )
    return Controller(adapter, config, sleep=lambda s: None, wall_clock=lambda: T0)


def reservations(cluster: MemoryCluster) -> dict[str, LedgerEntry]:
    obj = cluster.get("configmaps", "placer-ledger", namespace=NS)
    return {k: e for k, e in read_ledger(obj, NS).entries.items() if e.kind == "reservation"}


def reserved_blocks(cluster: MemoryCluster, owner: str) -> set[str]:
    entry = reservations(cluster)[f"reservation.{owner.replace('/', '.')}"]
    return {j.domain.value for j in entry.record.jobs.values() if j.domain is not None}


def running(cluster: MemoryCluster) -> None:
    add(cluster, "run", 2, "2h")
    report = timed(cluster).run_once()
    assert list(report.planned.placed) == ["default/run"]
    start(cluster, "run", T0)


@pytest.fixture(params=["memory", "http"])
def cluster_and_adapter(
    request: pytest.FixtureRequest,
) -> Iterator[tuple[MemoryCluster, ClusterAdapter]]:
    cluster = tpu_cluster(blocks=3)
    if request.param == "memory":
        yield cluster, cluster
        return
    with ApiServer(cluster) as server:
        yield cluster, KubeAdapter(server.client(), request_timeout_s=5)


def test_a_reserved_domain_goes_only_to_a_jobset_that_ends_before_the_reservation(
    cluster_and_adapter: tuple[MemoryCluster, ClusterAdapter],
) -> None:
    cluster, adapter = cluster_and_adapter
    running(cluster)
    add(cluster, "a-wide", 3, "1h")
    add(cluster, "b-long", 1, "5h")
    add(cluster, "c-short", 1, "30m")
    report = timed(adapter).run_once()
    for plan, snapshot, requests in report.planned.plans:
        assert check(plan, snapshot, requests, timed(cluster).config.options) == []
    wide = report.planned.plans[0][0].outcome("default/a-wide")
    assert (wide.status, wide.expected_start_seconds) == ("unschedulable", 2 * H)
    assert reserved_blocks(cluster, "default/a-wide") == {"b0", "b1", "b2"}
    # b-long (5 h) would delay the reservation from 2 h: it waits; c-short (30 m) backfills b2
    assert "default/b-long" in report.planned.unschedulable
    short = record(cluster, "c-short")
    assert short is not None and block_of(short, "c-short-w-0") == "b2"
    assert record(cluster, "b-long") is None
    [reserved] = events(cluster, "Reserved")
    assert reserved["involvedObject"]["name"] == "a-wide"
    assert "cloud.google.com/gce-topology-block=b2" in reserved["message"]


def test_a_restarted_controller_keeps_the_reservations_and_announces_nothing_again() -> None:
    cluster = tpu_cluster(blocks=3)
    running(cluster)
    add(cluster, "a-wide", 3, "1h")
    timed(cluster).run_once()
    before = reservations(cluster)
    version = cluster.get("configmaps", "placer-ledger", namespace=NS)["metadata"]
    # a new process: the same reservation, no commit (nothing changed), no second event
    report = timed(cluster).run_once()
    assert report.committed is None
    assert reservations(cluster) == before
    assert cluster.get("configmaps", "placer-ledger", namespace=NS)["metadata"] == version
    assert len(events(cluster, "Reserved")) == 1
    # even a controller that does not reserve itself honors what the ledger holds: a long
    # JobSet stays off b2, which a ledger-blind controller would give it
    add(cluster, "b-long", 1, "5h")
    report = timed(cluster, reservations="none").run_once()
    assert "default/b-long" in report.planned.unschedulable
    assert reservations(cluster) == before


def test_a_reservation_is_released_once_its_jobset_is_placed() -> None:
    cluster = tpu_cluster(blocks=3)
    running(cluster)
    add(cluster, "a-wide", 3, "1h")
    timed(cluster).run_once()
    assert reservations(cluster)
    sim.finish(cluster, "default", "run")
    report = timed(cluster).run_once()
    assert list(report.planned.placed) == ["default/a-wide"]
    assert reservations(cluster) == {}


def test_an_unreadable_expected_duration_is_a_warning_and_the_jobset_is_still_placed() -> None:
    cluster = tpu_cluster(blocks=3)
    add(cluster, "odd", 1, "soon")
    controller = timed(cluster)
    report = controller.run_once()
    assert list(report.planned.placed) == ["default/odd"]
    [warning] = events(cluster, "InvalidExpectedDuration")
    assert warning["type"] == "Warning" and EXPECTED_DURATION in warning["message"]
    controller.run_cycle(force_plan=True)
    assert len(events(cluster, "InvalidExpectedDuration")) == 1


def test_controller_flags_turn_reservations_on(tmp_path: Path, capsys: Any) -> None:
    args = build_parser().parse_args(
        [
            "controller",
            "--reservations",
            "all",
            "--reservation-head",
            "3",
            "--default-duration",
            "90m",
            "--aging-rate",
            "0.5",
            "--max-wait",
            "24h",
        ]
    )
    policy = _config(args, "me").options.time
    assert (policy.reservations, policy.head, policy.default_duration_s) == ("all", 3, 5400.0)
    assert (policy.aging_per_hour, policy.max_wait_s, policy.now) == (0.5, 86400.0, None)
    with ApiServer(tpu_cluster(blocks=3)) as api:
        running(api.cluster)
        add(api.cluster, "a-wide", 3, "1h")
        config = kubeconfig(tmp_path, api.url)
        flags = ["--kubeconfig", str(config), "--solver", "best-fit", "--reservations", "head"]
        assert main(["controller", "--once", *flags]) == 0
        assert reserved_blocks(api.cluster, "default/a-wide") == {"b0", "b1", "b2"}
    capsys.readouterr()
    for bad in (["--default-duration", "batch=2h"], ["--max-wait", "a while"]):
        assert main(["controller", "--once", *bad]) == 2
        assert capsys.readouterr().err.count("\n") == 1
