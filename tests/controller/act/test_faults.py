"""The controller under faults: transient API errors, failing watches, SIGTERM while retrying."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
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


def test_sigterm_ends_a_once_run_retrying_an_unreachable_server_at_once(tmp_path: Path) -> None:
    """`--once` retrying a closed local port for up to 60 s: SIGTERM ends it at once with the
    default action (nothing to clean up: every write is idempotent). The long-running modes
    stop on it too, on the real control plane (tests/cluster/test_resilience.py)."""
    proc = _start(
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
        time.sleep(0.5)
        assert proc.poll() is None  # still retrying
        proc.send_signal(signal.SIGTERM)
        # far less than the 60 s it would retry for
        assert proc.wait(timeout=10) == -signal.SIGTERM
    finally:
        if proc.poll() is None:
            proc.kill()


def _dir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path
