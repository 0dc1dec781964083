"""Seeded multi-controller trials on the real control plane: never two child Jobs in one domain.

    python -m benchmarks.cluster_trials [--trials 200] [--seed 0]

One control plane (tests/cluster), the TPU example cluster's nodes, and three controllers that
run for the whole benchmark: two replicas electing a leader over a real Lease for namespace A,
and one controller of namespace B under its own Lease, all committing to the one ledger. A
supervisor restarts any controller that exits, as a Deployment's kubelet would. Each trial, from
its own seed: create 1-5 JobSets of 1-3 slices in random namespaces at random moments, kill a
random controller (SIGKILL) in a third of the trials, wait until every JobSet is placed with its
pods bound or refused with an Unschedulable event, then check every bound pod and every record:
no domain holds two child Jobs, no child Job spans two domains, every pod is in its recorded
domain. Then the trial's JobSets are deleted and the next trial starts. The summary counts the
kills and the restarts the supervisor made: a restart beyond the kills is a controller that exited
on its own (deposed, lost its lease).

Prints one JSON line per trial and a summary; exits 1 if any trial saw a double placement.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import sys
import tempfile
import threading
import time
from pathlib import Path

from tests.cluster import build
from tests.cluster.conftest import _versions
from tests.cluster.controlplane import ControlPlane
from tests.cluster.processes import Component, ComponentExited, wait_until
from tests.cluster.scenario import JOBSET_GROUP, JOBSET_VERSION, JOBSETS, Scenario
from tests.cluster.test_gate_binding import multislice
from tests.cluster.test_resilience import assert_one_child_job_per_domain, settled


def supervise(
    components: list[Component], stop: threading.Event, restarts: list[str]
) -> threading.Thread:
    """Restart any component that exits, until `stop` (the Deployment's restart policy); each
    restart is appended to `restarts`."""

    def loop() -> None:
        while not stop.wait(1.0):
            for component in components:
                if not component.running:
                    restarts.append(component.name)
                    # Killed again while starting: the next round restarts it once more.
                    with contextlib.suppress(ComponentExited, TimeoutError):
                        component.start(ready_timeout_s=60)

    thread = threading.Thread(target=loop, name="supervisor", daemon=True)
    thread.start()
    return thread


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.cluster_trials", description=__doc__
    )
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    arguments = parser.parse_args(argv)

    binaries = build.ensure()
    modules = ("sigs.k8s.io/jobset", "sigs.k8s.io/kueue")
    sources = {m.split("/")[-1]: build.module_source(m) for m in modules}
    root = Path(tempfile.mkdtemp(prefix="placer-trials-"))
    plane = ControlPlane(root=root, binaries=binaries, sources=sources, versions=_versions())
    stop = threading.Event()
    doubles = kills = 0
    restarts: list[str] = []
    started = time.monotonic()
    print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()}", file=sys.stderr)
    try:
        plane.start()
        case = Scenario(plane, root, "bench-trials")
        case.set_up()
        case.use_example_cluster("tpu-v5e-v6e.yaml")
        case.start_pod_reaper()
        case.start_webhook()
        other = case.add_namespace("b")
        controllers = [
            case.start_controller(identity="a0"),
            case.start_controller(identity="a1"),
            case.start_controller(
                "--lease-name=placer-controller-b", identity="b0", namespaces=[other]
            ),
        ]
        supervise(controllers, stop, restarts)
        for trial in range(arguments.trials):
            rng = random.Random(arguments.seed * 100_000 + trial)
            t0 = time.monotonic()
            count = rng.randint(1, 5)
            kill_at = rng.randrange(count) if rng.random() < 1 / 3 else -1
            for index in range(count):
                namespace = rng.choice(case.namespaces)
                case.create_jobset(multislice(f"t{trial}-{index}", rng.randint(1, 3)), namespace)
                if index == kill_at:
                    rng.choice(controllers).kill()
                    kills += 1
                time.sleep(rng.uniform(0, 1.5))
            wait_until(lambda: settled(case), timeout_s=240, what=f"trial {trial} to settle")
            try:
                placed = assert_one_child_job_per_domain(case)
                ok = True
            except AssertionError as error:
                placed, ok = -1, False
                doubles += 1
                print(f"trial {trial}: {error}", file=sys.stderr)
            line = {
                "trial": trial,
                "jobsets": count,
                "killed": kill_at >= 0,
                "child_jobs_placed": placed,
                "ok": ok,
                "seconds": round(time.monotonic() - t0, 1),
            }
            print(json.dumps(line), flush=True)
            for namespace in case.namespaces:
                for jobset in case.list_jobsets(namespace):
                    case.custom.delete_namespaced_custom_object(
                        JOBSET_GROUP,
                        JOBSET_VERSION,
                        namespace,
                        JOBSETS,
                        jobset["metadata"]["name"],
                    )
            wait_until(
                lambda: not any(case.core.list_namespaced_pod(n).items for n in case.namespaces),
                timeout_s=120,
                what="the trial's pods to be gone",
            )
        stop.set()
        case.tear_down()
    finally:
        stop.set()
        plane.stop()
    summary = {
        "trials": arguments.trials,
        "double_placements": doubles,
        "kills": kills,
        "restarts": len(restarts),
        "restarts_beyond_kills": len(restarts) - kills,
        "minutes": round((time.monotonic() - started) / 60, 1),
        "load": os.getloadavg(),
    }
    print(json.dumps(summary))
    return 1 if doubles else 0


if __name__ == "__main__":
    sys.exit(main())
