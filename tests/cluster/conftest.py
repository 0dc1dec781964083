"""Fixtures for the scenarios on the real control plane (tests/cluster/controlplane.py).

One control plane per test session (starting it costs about half a minute); each scenario gets
its own namespace, the nodes it asks for (every other node deleted), an empty placer ledger and
Lease, and placer's processes started with the ServiceAccount token deploy/ defines, so a verb the
shipped Roles lack fails the scenario. The binaries are built on first use (tests/cluster/build.py);
a machine that cannot build them fails these tests, it never skips them.

When a scenario fails, every component's log (and placer's) is copied to
`$PLACER_CLUSTER_LOGS` (default /tmp/placer-cluster-logs/<test>) and their tails are added to the
report.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

from tests.cluster import build
from tests.cluster.controlplane import ControlPlane, Versions
from tests.cluster.scenario import Scenario


def _versions() -> Versions:
    pinned = build.module_versions()
    return Versions(
        kubernetes=pinned["k8s.io/kubernetes"],
        etcd=pinned["go.etcd.io/etcd/server/v3"],
        jobset=pinned["sigs.k8s.io/jobset"],
        kueue=pinned["sigs.k8s.io/kueue"],
    )


def _run_directory() -> Path:
    """A directory of this run's certificates, data and logs, kept after the run for reading;
    only the newest few runs are kept."""
    base = Path(os.environ.get("PLACER_CLUSTER_RUNS", "/tmp/placer-cluster-runs"))
    base.mkdir(parents=True, exist_ok=True)
    for old in sorted(base.glob("run-*"), key=lambda p: p.stat().st_mtime)[:-2]:
        shutil.rmtree(old, ignore_errors=True)
    return Path(tempfile.mkdtemp(prefix="run-", dir=base))


@pytest.fixture(scope="session")
def control_plane() -> Iterator[ControlPlane]:
    binaries = build.ensure()
    sources = {
        "jobset": build.module_source("sigs.k8s.io/jobset"),
        "kueue": build.module_source("sigs.k8s.io/kueue"),
    }
    plane = ControlPlane(
        root=_run_directory(),
        binaries=binaries,
        sources=sources,
        versions=_versions(),
    )
    try:
        plane.start()
        yield plane
    finally:
        plane.stop()


@pytest.fixture
def scenario(
    control_plane: ControlPlane, request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[Scenario]:
    case = Scenario(control_plane, tmp_path, request.node.name)
    try:
        case.set_up()
        yield case
    finally:
        failed = getattr(request.node, "rep_call", None)
        if failed is not None and failed.failed:
            _keep_logs(control_plane, case, request.node.name)
        case.tear_down()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    setattr(item, f"rep_{report.when}", report)
    return report


def _keep_logs(plane: ControlPlane, case: Scenario, test_name: str) -> None:
    root = Path(os.environ.get("PLACER_CLUSTER_LOGS", "/tmp/placer-cluster-logs"))
    target = root / "".join(c if c.isalnum() or c in "-_." else "_" for c in test_name)
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True, exist_ok=True)
    for component in [*plane.components.values(), *case.processes.values()]:
        if component.log_path.is_file():
            shutil.copy(component.log_path, target / component.log_path.name)
    print(f"\ncomponent logs kept in {target}\n{case.log_tails()}")
