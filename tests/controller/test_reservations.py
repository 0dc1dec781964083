"""Time-aware planning in the controller: reservations in the ledger, backfill, restarts, events.

Three blocks of two nodes; every child Job takes a block. `run` holds b0 and b1 for 2 h; `a-wide`
needs all three blocks for 1 h, so it is reserved from 2 h on, b2 included. A JobSet may start on
b2 now only if it is expected to end within those 2 h (backfill).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import pytest

from benchmarks.simulate import cluster_sim as sim
from placer.cli import build_parser, main
from placer.commands.controller import _config
from placer.controller.act.kube_adapter import KubeAdapter
from placer.controller.act.memory_adapter import MemoryCluster
from placer.controller.adapter import ClusterAdapter
from placer.controller.decide.records.ledger import LedgerEntry, read_ledger
from placer.controller.reconcile import Clocks, Controller, ControllerConfig
from placer.model.durations import EXPECTED_DURATION
from placer.model.errors import InputError
from placer.model.options import SolveOptions, TimePolicy
from placer.solver.check.checker import check
from tests.controller.apiserver import ApiServer, kubeconfig
from tests.controller.builders import BLOCK, TPU, block_of, events, record, tpu_cluster

NS = "placer-system"
T0 = float(int(time.time()))
H = 3600.0


def _stamp(epoch_s: float) -> str:
    return datetime.fromtimestamp(epoch_s, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def add(
    cluster: MemoryCluster, name: str, jobs: int, duration: str | None, priority_class: str = ""
) -> None:
    """A JobSet of `jobs` child Jobs, a block each, expected to run `duration` (None: it states
    none), its pods of `priority_class` when given."""
    obj = sim.jobset_object(name, replicated_jobs=[("w", jobs, 2, {TPU: "4"})], exclusive_key=BLOCK)
    if duration is not None:
        obj["metadata"]["annotations"][EXPECTED_DURATION] = duration
    if priority_class:
        for rj in obj["spec"]["replicatedJobs"]:
            rj["template"]["spec"]["template"]["spec"]["priorityClassName"] = priority_class
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


def timed(
    adapter: ClusterAdapter, reservations: str = "head", policy: TimePolicy | None = None
) -> Controller:
    policy = (policy or TimePolicy()).model_copy(update={"reservations": reservations})
    config = ControllerConfig(
        solver="best-fit", window_s=0.0, options=SolveOptions(time_limit_s=10.0, time=policy)
    )
    return Controller(adapter, config, clocks=Clocks(sleep=lambda s: None, wall=lambda: T0))


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


def test_the_controller_runs_the_cpsat_schedule_and_records_every_reservation() -> None:
    """`--schedule cpsat`: the same case decided jointly. a-wide (1 h, all three blocks) keeps
    its start at 2 h; c-short backfills b2; b-long (5 h) would push a-wide to 5 h, so the
    schedule starts it when a-wide ends, at 3 h, and that start is a reservation too."""
    cluster = tpu_cluster(blocks=3)
    running(cluster)
    add(cluster, "a-wide", 3, "1h")
    add(cluster, "b-long", 1, "5h")
    add(cluster, "c-short", 1, "30m")
    controller = timed(cluster, "all", TimePolicy(schedule="cpsat"))
    report = controller.run_once()
    for plan, snapshot, requests in report.planned.plans:
        assert check(plan, snapshot, requests, controller.config.options) == []
        assert any(n.startswith("schedule: OPTIMAL") for n in plan.solver.notes)
    plan = report.planned.plans[0][0]
    assert plan.outcome("default/a-wide").expected_start_seconds == 2 * H
    assert plan.outcome("default/b-long").expected_start_seconds == 3 * H
    assert reserved_blocks(cluster, "default/a-wide") == {"b0", "b1", "b2"}
    assert len(reserved_blocks(cluster, "default/b-long")) == 1
    short = record(cluster, "c-short")
    assert short is not None and block_of(short, "c-short-w-0") == "b2"
    assert sorted(e["involvedObject"]["name"] for e in events(cluster, "Reserved")) == [
        "a-wide",
        "b-long",
    ]
    # the next cycle keeps both reservations where they are
    before = reservations(cluster)
    assert timed(cluster, "all", TimePolicy(schedule="cpsat")).run_once().committed is None
    assert reservations(cluster) == before


@pytest.mark.parametrize("schedule", ["greedy", "cpsat"])
def test_a_jobset_queued_ahead_but_reserved_later_never_takes_the_earlier_reservation(
    schedule: Literal["greedy", "cpsat"],
) -> None:
    """`long` arrives once `wide` is reserved, but in the same second, so it is queued ahead of
    it by name. It is reserved after `wide`, and stays there round after round: re-timed first,
    it took one of `wide`'s blocks from `wide`'s start, pushed `wide` back by 5 h and then started
    now on b2, inside `wide`'s promise (found on the real control plane:
    tests/cluster/test_time_aware.py)."""
    cluster = tpu_cluster(blocks=3)
    running(cluster)
    add(cluster, "wide", 3, "1h")
    policy = TimePolicy(schedule=schedule)
    timed(cluster, "all", policy).run_once()
    promised = reservations(cluster)["reservation.default.wide"].start
    assert promised == T0 + 2 * H
    add(cluster, "long", 1, "5h")
    for _ in range(3):
        report = timed(cluster, "all", policy).run_once()
        for plan, snapshot, requests in report.planned.plans:
            assert check(plan, snapshot, requests, timed(cluster).config.options) == []
        assert record(cluster, "long") is None
        entries = reservations(cluster)
        assert entries["reservation.default.wide"].start == promised
        assert reserved_blocks(cluster, "default/wide") == {"b0", "b1", "b2"}
        long_start = entries["reservation.default.long"].start
        assert long_start is not None and long_start >= promised + H


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


def priority_class(cluster: MemoryCluster, name: str, value: int) -> None:
    cluster.create(
        "priorityclasses",
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": value,
        },
    )


def test_default_durations_per_priority_class_date_each_reservation(
    cluster_and_adapter: tuple[MemoryCluster, ClusterAdapter],
) -> None:
    """`--default-duration 3h --default-duration gold=1h --default-duration silver=30m`: two
    wide JobSets stating no duration wait for `run` (2 h). gold (the higher class) is reserved
    from 2 h for its class's 1 h, so silver follows at 3 h (not at 5 h, as the plain 3 h would
    have it), for 30 m."""
    cluster, adapter = cluster_and_adapter
    priority_class(cluster, "gold", 1000)
    priority_class(cluster, "silver", 10)
    running(cluster)
    add(cluster, "a-silver", 3, None, priority_class="silver")
    add(cluster, "b-gold", 3, None, priority_class="gold")
    policy = TimePolicy(
        default_duration_s=3 * H, default_duration_by_class={"gold": H, "silver": 0.5 * H}
    )
    controller = timed(adapter, reservations="all", policy=policy)
    report = controller.run_once()
    for plan, snapshot, requests in report.planned.plans:
        options = controller._options(snapshot)
        assert options.time.default_duration_by_priority == {1000: H, 10: 0.5 * H}
        assert check(plan, snapshot, requests, options) == []
    assert report.planned.placed == {}
    ledger = reservations(cluster)
    gold, silver = ledger["reservation.default.b-gold"], ledger["reservation.default.a-silver"]
    assert (gold.start, gold.end) == (T0 + 2 * H, T0 + 3 * H)
    assert (silver.start, silver.end) == (T0 + 3 * H, T0 + 3.5 * H)
    messages = {e["involvedObject"]["name"]: e["message"] for e in events(cluster, "Reserved")}
    assert messages["b-gold"].startswith(f"reserved from {_stamp(T0 + 2 * H)}")
    assert messages["a-silver"].startswith(f"reserved from {_stamp(T0 + 3 * H)}")


def test_a_default_duration_for_an_unknown_priority_class_stops_the_controller() -> None:
    """As `placer plan` exits 2 for it: `--once` raises the usage error, a running loop stops
    with it (and `placer controller` exits 2, see test_controller_flags_turn_reservations_on)."""
    cluster = tpu_cluster(blocks=3)
    priority_class(cluster, "gold", 1000)
    add(cluster, "a", 1, "1h")
    policy = TimePolicy(default_duration_by_class={"bronze": H})
    unknown = r"--default-duration: unknown PriorityClass 'bronze' \(known: gold\)"
    with pytest.raises(InputError, match=unknown):
        timed(cluster, policy=policy).run_once()
    controller = timed(cluster, policy=policy)
    stop = threading.Event()
    thread = threading.Thread(target=controller.run, args=(stop,), daemon=True)
    thread.start()
    thread.join(timeout=30)
    assert not thread.is_alive() and stop.is_set()
    assert controller.misconfigured is not None and controller.misconfigured.code == "usage"
    assert record(cluster, "a") is None  # nothing planned with the duration dropped


def _deadline(cluster: MemoryCluster, name: str, seconds: int) -> None:
    def set_deadline(obj: dict[str, Any]) -> None:
        for rj in obj["spec"]["replicatedJobs"]:
            rj["template"]["spec"]["activeDeadlineSeconds"] = seconds

    cluster.mutate("jobsets", name, set_deadline, namespace="default")


BAD_DURATIONS = [
    pytest.param("soon", None, f"metadata.annotations[{EXPECTED_DURATION}]", id="unparsable"),
    pytest.param("-1h", None, f"metadata.annotations[{EXPECTED_DURATION}]", id="negative"),
    pytest.param(
        None,
        -60,
        "spec.replicatedJobs[0].template.spec.activeDeadlineSeconds",
        id="negative-deadline",
    ),
]


@pytest.mark.parametrize(("annotation", "deadline", "field"), BAD_DURATIONS)
def test_a_bad_expected_duration_is_a_warning_and_the_jobset_is_planned_with_the_default(
    annotation: str | None,
    deadline: int | None,
    field: str,
    cluster_and_adapter: tuple[MemoryCluster, ClusterAdapter],
) -> None:
    """Issue 11's bad input in the controller: one Warning event on that JobSet naming the
    field, and the JobSet planned as if it stated nothing: placed when it fits, and when it
    waits, reserved for the default duration (3 h here), not dropped."""
    cluster, adapter = cluster_and_adapter
    policy = TimePolicy(default_duration_s=3 * H)
    add(cluster, "odd", 1, annotation)
    if deadline is not None:
        _deadline(cluster, "odd", deadline)
    controller = timed(adapter, policy=policy)
    report = controller.run_once()
    assert list(report.planned.placed) == ["default/odd"]
    [warning] = events(cluster, "InvalidExpectedDuration")
    assert warning["type"] == "Warning" and warning["involvedObject"]["name"] == "odd"
    assert f"cluster: default/odd: {field}: " in warning["message"]
    assert warning["message"].endswith("; planned with the default duration")
    controller.run_cycle(force_plan=True)
    assert len(events(cluster, "InvalidExpectedDuration")) == 1  # once per message
    # a wide one that must wait behind odd (1 block) and run (2 h on two blocks)
    running(cluster)
    add(cluster, "wide", 3, annotation)
    if deadline is not None:
        _deadline(cluster, "wide", deadline)
    timed(adapter, policy=policy).run_once()
    entry = reservations(cluster)["reservation.default.wide"]
    assert entry.start is not None and entry.end == entry.start + 3 * H
    warned = {e["involvedObject"]["name"] for e in events(cluster, "InvalidExpectedDuration")}
    assert warned == {"odd", "wide"}


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
            "--schedule",
            "cpsat",
        ]
    )
    policy = _config(args, "me").options.time
    assert (policy.reservations, policy.head, policy.default_duration_s) == ("all", 3, 5400.0)
    assert policy.schedule == "cpsat"
    assert (policy.aging_per_hour, policy.max_wait_s, policy.now) == (0.5, 86400.0, None)
    with ApiServer(tpu_cluster(blocks=3)) as api:
        running(api.cluster)
        add(api.cluster, "a-wide", 3, "1h")
        config = kubeconfig(tmp_path, api.url)
        flags = ["--kubeconfig", str(config), "--solver", "best-fit", "--reservations", "head"]
        assert main(["controller", "--once", *flags]) == 0
        assert reserved_blocks(api.cluster, "default/a-wide") == {"b0", "b1", "b2"}
    capsys.readouterr()
    # flags refused before any connection (no kubeconfig needed), one line naming the flag
    for bad, field in (
        (["--default-duration", "batch=soon"], "--default-duration: invalid duration 'soon'"),
        (["--default-duration=-1h"], "--default-duration: negative duration"),
        (["--max-wait", "a while"], "--max-wait: invalid duration"),
    ):
        assert main(["controller", "--once", "--kubeconfig", "/nonexistent", *bad]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and field in err, err


@pytest.mark.parametrize("mode", [["--once"], ["--no-leader-elect", "--metrics-port", "0"]])
def test_the_controller_command_takes_class_defaults_and_exits_2_on_an_unknown_class(
    mode: list[str], tmp_path: Path, capsys: Any
) -> None:
    """`--default-duration CLASS=DURATION` over HTTP: a class the cluster has is taken (the
    reservation ends its class's duration after its start); one it lacks exits 2 with plan's
    one line, in `--once` and in the long-running loop alike, having written nothing."""
    with ApiServer(tpu_cluster(blocks=3)) as api:
        priority_class(api.cluster, "gold", 1000)
        running(api.cluster)
        add(api.cluster, "a-wide", 3, None, priority_class="gold")
        flags = ["--kubeconfig", str(kubeconfig(tmp_path, api.url)), "--solver", "best-fit"]
        flags += ["--reservations", "head", "--window", "0", *mode]
        before = reservations(api.cluster)
        assert main(["controller", *flags, "--default-duration", "bronze=1h"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert err[-1] == (
            "placer: error: --default-duration: unknown PriorityClass 'bronze' (known: gold)"
        )
        assert reservations(api.cluster) == before and record(api.cluster, "a-wide") is None
        if mode == ["--once"]:
            assert main(["controller", *flags, "--default-duration", "gold=90m"]) == 0
            entry = reservations(api.cluster)["reservation.default.a-wide"]
            assert (entry.start, entry.end) == pytest.approx((T0 + 2 * H, T0 + 3.5 * H))
