"""The controller under faults: transient API errors, failing watches, and SIGTERM in every mode."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from placer.cli import main
from placer.controller.act.cache import ClusterCache, Stream
from placer.controller.act.kube_adapter import KubeAdapter
from placer.controller.act.memory_adapter import MemoryCluster
from tests.controller.apiserver import ApiServer, kubeconfig
from tests.controller.builders import (
    add_jobset,
    controller,
    eventually,
    gated,
    jobset_pods,
    record,
    tpu_cluster,
)

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize(
    "fault",
    [
        pytest.param(("list", "nodes", 503), id="list-503"),
        pytest.param(("list", "jobsets", 429), id="list-429"),
        pytest.param(("list", "pods", 500), id="list-500"),
        pytest.param(("reset", "GET", "nodes"), id="connection-reset"),
    ],
)
def test_once_retries_transient_api_errors_over_http(fault: tuple[str, str, Any]) -> None:
    with ApiServer(tpu_cluster(blocks=3)) as api:
        add_jobset(api.cluster, "train", jobs=2)
        if fault[0] == "reset":
            api.reset(fault[1], fault[2], times=3)
        else:
            api.cluster.inject(fault[0], fault[1], fault[2], times=3)
        ctl = controller(KubeAdapter(api.client(), request_timeout_s=5), list_retry_s=10.0)
        ctl.sleep = lambda s: None
        report = ctl.run_once()
        assert list(report.planned.placed) == ["default/train"]
        assert not any(gated(p) for p in jobset_pods(api.cluster, "train"))


def test_once_exits_3_when_the_api_server_stays_unavailable(tmp_path: Path, capsys: Any) -> None:
    start = time.monotonic()
    code = main(
        [
            "controller",
            "--once",
            "--retry-timeout",
            "0.6",
            "--kubeconfig",
            str(kubeconfig(tmp_path, "http://127.0.0.1:9")),
        ]
    )
    assert code == 3
    assert time.monotonic() - start >= 0.5  # it did retry
    err = capsys.readouterr().err
    assert (
        err.startswith("placer: error: the API server stayed unavailable") and err.count("\n") == 1
    )


def test_once_exits_2_at_once_on_an_error_no_retry_fixes(tmp_path: Path, capsys: Any) -> None:
    with ApiServer(tpu_cluster(blocks=1)) as api:
        api.cluster.inject("list", "jobsets", 403, times=100)
        code = main(["controller", "--once", "--kubeconfig", str(kubeconfig(tmp_path, api.url))])
        assert code == 2
        assert sum(1 for m, p in api.requests if m == "GET" and "jobsets" in p) == 1
    assert capsys.readouterr().err.count("\n") == 1


def test_the_watch_backoff_starts_over_once_a_watch_connects() -> None:
    cluster = MemoryCluster()
    cache = ClusterCache(cluster, watch_timeout_s=0.02)
    stream = Stream("nodes")
    stop = threading.Event()
    delays: list[float] = []

    def sleep(seconds: float) -> None:
        delays.append(seconds)
        if len(delays) == 4:
            # After four failures, the next watch connects (the fault is used up); a later
            # failure must start again from the shortest delay.
            threading.Timer(0.2, lambda: cluster.inject("watch", "nodes", 503)).start()
        if len(delays) == 5:
            stop.set()

    cluster.inject("watch", "nodes", 503, times=4)
    thread = threading.Thread(target=cache.watch_forever, args=(stream, stop, sleep))
    thread.start()
    thread.join(timeout=10)
    assert delays == [0.5, 1.0, 2.0, 4.0, 0.5]
    assert stream in cache.unhealthy


def test_a_controller_whose_watch_keeps_failing_relists_every_replan_interval() -> None:
    cluster = tpu_cluster(blocks=2)
    cluster.inject("watch", "jobsets", 503, times=1000)  # the JobSet watch never connects
    ctl = controller(cluster, replan_s=0.3, debounce_s=0.0, watch_timeout_s=0.5)
    stop = threading.Event()
    thread = threading.Thread(target=ctl.run, args=(stop,), daemon=True)
    thread.start()
    try:
        time.sleep(0.2)
        add_jobset(cluster, "late", jobs=1)
        eventually(lambda: record(cluster, "late") is not None, timeout_s=5)
        assert ctl.cache.relists >= 2
    finally:
        stop.set()
        thread.join(timeout=5)


def _start(args: list[str]) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "placer.cli", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_sigterm_stops_a_running_controller_within_a_second_in_every_mode(
    tmp_path: Path,
) -> None:
    """Three processes at once: the two long-running modes (two API servers), each having placed
    its JobSet and waiting for the next event, up to its 60 s replan interval; and a `--once` run
    retrying an unreachable API server for up to 60 s."""
    modes = {
        "no-leader-elect": ["--no-leader-elect"],
        "leader-elect": ["--leader-elect", "--lease-namespace", "placer-system"],
    }
    with ApiServer(tpu_cluster(blocks=2)) as one, ApiServer(tpu_cluster(blocks=2)) as two:
        apis = dict(zip(modes, (one, two), strict=True))
        procs = {}
        for mode, api in apis.items():
            add_jobset(api.cluster, "train", jobs=1)
            procs[mode] = _start(
                [
                    "controller",
                    "--kubeconfig",
                    str(kubeconfig(_dir(tmp_path / mode), api.url)),
                    "--solver",
                    "best-fit",
                    "--metrics-port",
                    "0",
                    "--window",
                    "0",
                    "--replan-interval",
                    "60",
                    "--ledger-namespace",
                    "placer-system",
                    *modes[mode],
                ]
            )
        procs["once"] = _start(
            [
                "controller",
                "--once",
                "--retry-timeout",
                "60",
                "--kubeconfig",
                str(kubeconfig(_dir(tmp_path / "once"), "http://127.0.0.1:9")),
            ]
        )
        try:
            for api in apis.values():
                eventually(partial(_recorded, api.cluster, "train"), timeout_s=60)
            time.sleep(0.3)
            assert procs["once"].poll() is None  # still retrying
            elapsed, codes = {}, {}
            for mode, proc in procs.items():
                sent = time.monotonic()
                proc.send_signal(signal.SIGTERM)
                codes[mode] = proc.wait(timeout=10)
                elapsed[mode] = time.monotonic() - sent
        finally:
            for proc in procs.values():
                if proc.poll() is None:
                    proc.kill()
    # The long-running modes stop cleanly; --once keeps the default action (nothing to clean up:
    # every write is idempotent) and ends at once.
    assert codes == {**dict.fromkeys(modes, 0), "once": -signal.SIGTERM}
    assert all(seconds < 1.0 for seconds in elapsed.values()), elapsed


def _recorded(cluster: MemoryCluster, name: str) -> bool:
    return record(cluster, name) is not None


def _dir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path
