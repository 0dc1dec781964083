"""Pods bound per second on the real control plane: placer's gate binding against JobSet's own
exclusive placement, in JobSet issue #174's setup (250 JobSets of 15 pods on 5,000 nodes).

    python -m benchmarks.cluster_throughput [--nodes 5000] [--jobsets 250] [--pods 15]
    python -m benchmarks.cluster_throughput --latency --nodes 1000 --jobsets 20

One control plane (tests/cluster: etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
JobSet, Kueue; binaries from `python -m tests.cluster.build`) serves both runs in turn, on the
same fake nodes: racks of 20 nodes (label `example.com/rack`), 8 GPUs a node, no taints. Every
JobSet is one child Job of `--pods` pods of 8 GPUs (a whole node each), exclusive per rack
(`alpha.jobset.sigs.k8s.io/exclusive-topology: example.com/rack`).

- **native**: JobSet's webhook alone: leader pods get pod affinity and anti-affinity by job-key,
  followers wait for their leader and follow its rack.
- **placer**: the same JobSets in a namespace labeled `placer.dev/managed=true`, with `placer
  webhook` (gates the pods) and `placer controller` (plans all, writes node affinity, ungates);
  JobSet's webhook stays on too (the JobSets carry the same annotation).

Reported per run: pods bound per second (all pods over the time from the first JobSet created to
the last pod bound), time until all are bound, and pods outside their planned rack (placer) or
child Jobs sharing a rack (both). `--latency` instead creates JobSets one at a time under placer
and reports each one's time from creation to its last pod bound (median and max).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from kubernetes import client as k8s

from tests.cluster import build
from tests.cluster.conftest import _versions
from tests.cluster.controlplane import ControlPlane
from tests.cluster.kube import api_client
from tests.cluster.scenario import Scenario, assignment_of

RACK = "example.com/rack"
GPU = "nvidia.com/gpu"
NODES_PER_RACK = 20


def gpu_node(name: str, labels: dict[str, str]) -> dict[str, Any]:
    """A Ready fake node of 8 GPUs (no kubelet behind it), labeled `labels` and its hostname."""
    resources = {"cpu": "96", "memory": "1000Gi", GPU: "8", "pods": "110"}
    return {
        "metadata": {"name": name, "labels": {**labels, "kubernetes.io/hostname": name}},
        "spec": {},
        "status": {
            "allocatable": resources,
            "capacity": resources,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def fleet(nodes: int) -> list[dict[str, Any]]:
    return [
        gpu_node(f"gpu-{index:05d}", {RACK: f"rack-{index // NODES_PER_RACK:04d}"})
        for index in range(nodes)
    ]


def jobset(name: str, pods: int) -> dict[str, Any]:
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {
            "name": name,
            "annotations": {"alpha.jobset.sigs.k8s.io/exclusive-topology": RACK},
        },
        "spec": {
            "replicatedJobs": [
                {
                    "name": "w",
                    "replicas": 1,
                    "template": {
                        "spec": {
                            "parallelism": pods,
                            "completions": pods,
                            "backoffLimit": 0,
                            "template": {
                                "spec": {
                                    "restartPolicy": "Never",
                                    "containers": [
                                        {
                                            "name": "train",
                                            "image": "busybox",
                                            "resources": {"limits": {GPU: "8"}},
                                        }
                                    ],
                                }
                            },
                        }
                    },
                }
            ]
        },
    }


def bound_count(core: k8s.CoreV1Api, namespace: str) -> tuple[int, list[Any]]:
    pods: list[Any] = core.list_namespaced_pod(namespace).items
    return sum(1 for p in pods if p.spec.node_name), pods


def racks_check(case: Scenario, pods: list[Any], planned: bool) -> dict[str, int]:
    """Child Jobs sharing a rack, child Jobs spanning racks, pods outside their planned rack."""
    labels = case.node_labels()
    racks: dict[str, set[str]] = defaultdict(set)
    for pod in pods:
        if pod.spec.node_name:
            racks[pod.metadata.labels["batch.kubernetes.io/job-name"]].add(
                labels[pod.spec.node_name][RACK]
            )
    owners: dict[str, int] = defaultdict(int)
    for held in racks.values():
        for rack in held:
            owners[rack] += 1
    outside = 0
    if planned:
        records = {
            job: entry["domain"]["value"]
            for js in case.list_jobsets()
            for job, entry in assignment_of(js).get("jobs", {}).items()
        }
        outside = sum(
            1
            for pod in pods
            if pod.spec.node_name
            and labels[pod.spec.node_name][RACK]
            != records.get(pod.metadata.labels["batch.kubernetes.io/job-name"])
        )
    return {
        "racks_shared": sum(1 for n in owners.values() if n > 1),
        "jobs_spanning_racks": sum(1 for held in racks.values() if len(held) > 1),
        "pods_outside_planned_rack": outside,
    }


def throughput(
    case: Scenario, mode: str, jobsets: int, pods: int, timeout_s: float
) -> dict[str, Any]:
    total = jobsets * pods
    started = time.monotonic()
    for index in range(jobsets):
        case.create_jobset(jobset(f"{mode}-{index:04d}", pods))
    created_s = time.monotonic() - started
    last, done_s = -1, None
    while time.monotonic() - started < timeout_s:
        bound, listed = bound_count(case.core, case.namespace)
        if bound != last:
            last = bound
            print(
                f"  {mode}: {bound}/{total} bound at {time.monotonic() - started:.1f} s",
                file=sys.stderr,
            )
        if bound == total:
            done_s = time.monotonic() - started
            break
        time.sleep(1.0)
    _, listed = bound_count(case.core, case.namespace)
    result: dict[str, Any] = {
        "mode": mode,
        "jobsets": jobsets,
        "pods": total,
        "created_in_s": round(created_s, 1),
        "bound": last,
        "all_bound_s": None if done_s is None else round(done_s, 1),
        "pods_per_s": round(last / (done_s or (time.monotonic() - started)), 1),
    }
    result.update(racks_check(case, listed, planned=mode == "placer"))
    return result


def latency(case: Scenario, jobsets: int, pods: int) -> dict[str, Any]:
    times = []
    for index in range(jobsets):
        name = f"lat-{index:04d}"
        started = time.monotonic()
        case.create_jobset(jobset(name, pods))
        case.wait_pods_bound(name, pods, timeout_s=120)
        times.append(time.monotonic() - started)
    return {
        "mode": "placer-latency",
        "jobsets": jobsets,
        "pods_per_jobset": pods,
        "median_s": round(statistics.median(times), 2),
        "max_s": round(max(times), 2),
        "all_s": [round(t, 2) for t in times],
    }


def new_plane(prefix: str) -> ControlPlane:
    """A control plane of the cached upstream binaries (built first if missing) in a new
    temporary directory named `prefix...`, not started yet."""
    binaries = build.ensure()
    sources = {
        m.split("/")[-1]: build.module_source(m)
        for m in ("sigs.k8s.io/jobset", "sigs.k8s.io/kueue")
    }
    root = Path(tempfile.mkdtemp(prefix=prefix))
    return ControlPlane(root=root, binaries=binaries, sources=sources, versions=_versions())


def plane_pods(plane: ControlPlane) -> list[Any]:
    """Every pod of the cluster: a run starts only when the previous one left none."""
    with api_client(plane.admin_kubeconfig) as api:
        return list(k8s.CoreV1Api(api).list_pod_for_all_namespaces().items)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.cluster_throughput", description=__doc__
    )
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--jobsets", type=int, default=250)
    parser.add_argument("--pods", type=int, default=15)
    parser.add_argument("--timeout", type=float, default=900.0, help="per run, seconds")
    parser.add_argument("--modes", default="native,placer")
    parser.add_argument("--latency", action="store_true")
    parser.add_argument(
        "--window", default="2", help="the controller's --window (gather time; its default 2 s)"
    )
    arguments = parser.parse_args(argv)

    plane = new_plane("placer-throughput-")
    root = plane.root
    results = []
    print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()}", file=sys.stderr)
    try:
        plane.start()
        first = True
        modes = ["latency"] if arguments.latency else arguments.modes.split(",")
        for mode in modes:
            case = Scenario(plane, root / mode, f"bench-{mode}")
            (root / mode).mkdir()
            case.set_up()
            if first:
                t0 = time.monotonic()
                case.use_nodes(fleet(arguments.nodes))
                print(
                    f"  {arguments.nodes} nodes created in {time.monotonic() - t0:.0f} s",
                    file=sys.stderr,
                )
                first = False
            if mode == "native":
                case.core.patch_namespace(
                    case.namespace, {"metadata": {"labels": {"placer.dev/managed": "false"}}}
                )
            else:
                case.start_webhook()
                case.start_controller(f"--window={arguments.window}")
            case.start_pod_reaper()
            try:
                if mode == "latency":
                    results.append(latency(case, arguments.jobsets, arguments.pods))
                else:
                    results.append(
                        throughput(case, mode, arguments.jobsets, arguments.pods, arguments.timeout)
                    )
            finally:
                case.tear_down()
            print(json.dumps(results[-1]), file=sys.stderr)
            left = len(plane_pods(plane))
            if left:
                raise SystemExit(f"{left} pods of the previous run are still there")
    finally:
        plane.stop()
    print(
        json.dumps(
            {"nodes": arguments.nodes, "load": os.getloadavg(), "results": results}, indent=2
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
