"""Through real Kueue: placer's admission check against Kueue's Topology-Aware Scheduling alone.

    python -m benchmarks.kueue_admission [--blocks 4] [--racks 4] [--hosts 4] [--jobsets 30]

One control plane (tests/cluster: etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
JobSet v0.12.0, Kueue v0.19.2; binaries from `python -m tests.cluster.build`) serves both modes
in turn, on the same fake GPU fleet: blocks of racks of hosts (8 GPUs each, labels
`example.com/block`, `example.com/rack`, `kubernetes.io/hostname`), with one host in every third
rack taken by a bound 8-GPU pod of no JobSet (a notebook, a stray job: the fragmentation a real
fleet has). The same queue in both modes: `--jobsets` JobSets created at once, each 1 to 3 child
Jobs of half a rack's hosts, whole-host pods, every child Job wanting a rack to itself
(`alpha.jobset.sigs.k8s.io/exclusive-topology: example.com/rack`, JobSet's own mechanism on);
the ClusterQueue's GPU quota is `--quota` of what the queue asks (over quota, as the issue says).

- **tas**: Kueue TAS alone: a Topology (block, rack, hostname), a ResourceFlavor with
  `topologyName`, and per pod template `kueue.x-k8s.io/podset-slice-required-topology: rack` with
  `podset-slice-size` = the child Job's pods (each child Job in one rack). TAS places one workload
  at a time and knows nothing of exclusivity.
- **placer**: the flavor without `topologyName`, the ClusterQueue lists placer's AdmissionCheck
  (deploy/kueue), `placer controller --kueue-admission-check` runs as shipped, JobSets carry
  placer's gate in their templates.

Sampled every second for `--observe` seconds from the first JobSet created: GPUs admitted (the
Workload's Admitted condition) and GPUs running (every pod of the JobSet bound), admitted JobSets
whose pods are not all bound, and the quota they hold meanwhile (GPU-hours of admitted but not
running JobSets). At the end: racks spanned per running JobSet's child Job, child Jobs sharing a
rack, admitted JobSets still not running, and for placer the time from QuotaReserved to its check
Ready per Workload (1 s resolution: Kueue's and placer's timestamps are whole seconds).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from kubernetes import client as k8s

from benchmarks.cluster_throughput import GPU, gpu_node, new_plane
from placer.model.durations import parse_rfc3339
from tests.cluster.controlplane import ControlPlane
from tests.cluster.kube import apply_all, ensure_namespace
from tests.cluster.scenario import REPO, Scenario, load_documents

BLOCK, RACK, HOST, POOL = (
    "example.com/block",
    "example.com/rack",
    "kubernetes.io/hostname",
    "example.com/pool",
)
GPUS_PER_HOST = 8
KUEUE_GROUP, KUEUE_VERSION = "kueue.x-k8s.io", "v1beta2"
KUEUE = f"{KUEUE_GROUP}/{KUEUE_VERSION}"
GATE = "placer.dev/placement"
STRAY_NAMESPACE = "bench-stray"


def fleet(blocks: int, racks: int, hosts: int) -> list[dict[str, Any]]:
    return [
        gpu_node(f"gpu-b{b}-r{r}-h{h}", {BLOCK: f"b{b}", RACK: f"b{b}-r{r}", POOL: "gpu"})
        for b in range(blocks)
        for r in range(racks)
        for h in range(hosts)
    ]


def stray_pods(nodes: list[dict[str, Any]], hosts: int) -> list[dict[str, Any]]:
    """One bound whole-host pod of no JobSet on the first host of every third rack."""
    pods = []
    for index, node in enumerate(nodes[::hosts]):
        if index % 3 == 0:
            name = node["metadata"]["name"]
            pods.append(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": f"stray-{name}", "namespace": STRAY_NAMESPACE},
                    "spec": {
                        "nodeName": name,
                        "containers": [
                            {
                                "name": "c",
                                "image": "busybox",
                                "resources": {"limits": {GPU: str(GPUS_PER_HOST)}},
                            }
                        ],
                    },
                }
            )
    return pods


def jobset(name: str, replicas: int, pods: int, mode: str) -> dict[str, Any]:
    template_meta: dict[str, Any] = {}
    pod_spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "containers": [
            {
                "name": "train",
                "image": "busybox",
                "resources": {"limits": {GPU: str(GPUS_PER_HOST)}},
            }
        ],
    }
    if mode == "tas":
        template_meta["annotations"] = {
            "kueue.x-k8s.io/podset-slice-required-topology": RACK,
            "kueue.x-k8s.io/podset-slice-size": str(pods),
        }
    else:
        pod_spec["schedulingGates"] = [{"name": GATE}]
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {
            "name": name,
            "labels": {"kueue.x-k8s.io/queue-name": "training"},
            "annotations": {
                "alpha.jobset.sigs.k8s.io/exclusive-topology": RACK,
                "placer.dev/expected-duration": "2h",
            },
        },
        "spec": {
            "replicatedJobs": [
                {
                    "name": "w",
                    "replicas": replicas,
                    "template": {
                        "spec": {
                            "parallelism": pods,
                            "completions": pods,
                            "backoffLimit": 0,
                            "template": {"metadata": template_meta, "spec": pod_spec},
                        }
                    },
                }
            ]
        },
    }


def queue(count: int) -> list[tuple[str, int]]:
    """(name, child Jobs): 1, 2, 3, 1, 2, 3, ... deterministic."""
    return [(f"js-{i:03d}", 1 + i % 3) for i in range(count)]


def kueue_objects(case: Scenario, mode: str, quota: int) -> list[dict[str, Any]]:
    flavor: dict[str, Any] = {
        "apiVersion": KUEUE,
        "kind": "ResourceFlavor",
        "metadata": {"name": f"gpu-{mode}"},
        "spec": {"nodeLabels": {POOL: "gpu"}},
    }
    objects: list[dict[str, Any]] = []
    if mode == "tas":
        objects.append(
            {
                "apiVersion": KUEUE,
                "kind": "Topology",
                "metadata": {"name": "bench"},
                "spec": {
                    "levels": [{"nodeLabel": BLOCK}, {"nodeLabel": RACK}, {"nodeLabel": HOST}]
                },
            }
        )
        flavor["spec"]["topologyName"] = "bench"
    else:
        objects += [
            d
            for f in ("deploy/kueue/admissioncheck.yaml", "deploy/kueue/rbac.yaml")
            for d in load_documents(REPO / f)
            if d.get("kind") != "ClusterQueue"
        ]
    cq_spec: dict[str, Any] = {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": case.namespace}},
        "resourceGroups": [
            {
                "coveredResources": [GPU],
                "flavors": [
                    {"name": f"gpu-{mode}", "resources": [{"name": GPU, "nominalQuota": quota}]}
                ],
            }
        ],
    }
    if mode == "placer":
        cq_spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": "placer"}]}
    objects += [
        flavor,
        {
            "apiVersion": KUEUE,
            "kind": "ClusterQueue",
            "metadata": {"name": f"cq-{mode}"},
            "spec": cq_spec,
        },
        {
            "apiVersion": KUEUE,
            "kind": "LocalQueue",
            "metadata": {"name": "training", "namespace": case.namespace},
            "spec": {"clusterQueue": f"cq-{mode}"},
        },
    ]
    return objects


def _true(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == kind and c.get("status") == "True":
            return dict(c)
    return None


def observe(
    case: Scenario, wanted: dict[str, int], pods_per_job: int, seconds: float
) -> dict[str, Any]:
    """Sample once a second; `wanted`: JobSet -> its child Jobs."""
    custom = k8s.CustomObjectsApi(case._api)
    started = time.monotonic()
    held_gpu_s = 0.0
    last = started
    first_admitted: dict[str, float] = {}
    running_at: dict[str, float] = {}
    samples = []
    while time.monotonic() - started < seconds:
        now = time.monotonic()
        workloads = custom.list_namespaced_custom_object(
            KUEUE_GROUP, KUEUE_VERSION, case.namespace, "workloads"
        )["items"]
        admitted = set()
        for wl in workloads:
            owner = next((o["name"] for o in wl["metadata"].get("ownerReferences", [])), "")
            if owner in wanted and _true(wl, "Admitted"):
                admitted.add(owner)
                first_admitted.setdefault(owner, now - started)
        bound: dict[str, int] = defaultdict(int)
        for pod in case.core.list_namespaced_pod(case.namespace).items:
            owner = (pod.metadata.labels or {}).get("jobset.sigs.k8s.io/jobset-name", "")
            if pod.spec.node_name and not pod.metadata.deletion_timestamp:
                bound[owner] += 1
        running = {js for js in admitted if bound[js] >= wanted[js] * pods_per_job}
        for js in running:
            running_at.setdefault(js, now - started)
        stuck = admitted - running
        held_gpu_s += sum(wanted[js] * pods_per_job * GPUS_PER_HOST for js in stuck) * (now - last)
        last = now
        samples.append((round(now - started, 1), len(admitted), len(running)))
        time.sleep(max(0.0, 1.0 - (time.monotonic() - now)))
    gpus = {js: n * pods_per_job * GPUS_PER_HOST for js, n in wanted.items()}
    stuck_now = set(first_admitted) - set(running_at)
    stuck_for = {
        js: round(seconds - t, 1) for js, t in first_admitted.items() if js not in running_at
    }
    return {
        "gpus_admitted": sum(gpus[js] for js in first_admitted),
        "gpus_running": sum(gpus[js] for js in running_at),
        "jobsets_admitted": len(first_admitted),
        "jobsets_running": len(running_at),
        "admitted_not_running_at_end": len(stuck_for),
        "admitted_not_running_s": stuck_for,
        "admitted_to_running_s": [
            round(running_at[js] - first_admitted[js], 1) for js in sorted(running_at)
        ],
        "quota_gpu_hours_held_not_running": round(held_gpu_s / 3600, 3),
        "why_not_running": why_not_bound(case, stuck_now),
        "samples_every_10s": samples[::10],
    }


def why_not_bound(case: Scenario, jobsets: set[str]) -> dict[str, int]:
    """Unbound pods of `jobsets` by why: their scheduling gates, else the scheduler's message."""
    reasons: dict[str, int] = defaultdict(int)
    for pod in case.core.list_namespaced_pod(case.namespace).items:
        owner = (pod.metadata.labels or {}).get("jobset.sigs.k8s.io/jobset-name", "")
        if owner not in jobsets or pod.spec.node_name:
            continue
        gates = [g.name for g in pod.spec.scheduling_gates or []]
        if gates:
            reasons[f"gated: {', '.join(gates)}"] += 1
            continue
        said = [
            c.message or c.reason or ""
            for c in (pod.status.conditions or [])
            if c.type == "PodScheduled" and c.status == "False"
        ]
        reasons[(said[0] if said else "not tried by the scheduler yet")[:240]] += 1
    return dict(sorted(reasons.items()))


def racks(case: Scenario) -> dict[str, Any]:
    labels = {n.metadata.name: n.metadata.labels for n in case.core.list_node().items}
    per_job: dict[str, set[str]] = defaultdict(set)
    for pod in case.core.list_namespaced_pod(case.namespace).items:
        if pod.spec.node_name and pod.metadata.labels.get("batch.kubernetes.io/job-name"):
            per_job[pod.metadata.labels["batch.kubernetes.io/job-name"]].add(
                labels[pod.spec.node_name][RACK]
            )
    owners: dict[str, int] = defaultdict(int)
    for held in per_job.values():
        for rack in held:
            owners[rack] += 1
    spans = [len(v) for v in per_job.values()]
    return {
        "child_jobs_with_pods_bound": len(per_job),
        "racks_per_child_job": round(statistics.mean(spans), 3) if spans else None,
        "racks_shared_by_child_jobs": sum(1 for n in owners.values() if n > 1),
    }


def ready_latency(case: Scenario) -> dict[str, Any]:
    """Per Workload: its placer check's Ready transition minus its QuotaReserved transition."""
    custom = k8s.CustomObjectsApi(case._api)
    times = []
    for wl in custom.list_namespaced_custom_object(
        KUEUE_GROUP, KUEUE_VERSION, case.namespace, "workloads"
    )["items"]:
        reserved = _true(wl, "QuotaReserved")
        check = next(
            (
                c
                for c in (wl.get("status") or {}).get("admissionChecks") or []
                if c["name"] == "placer"
            ),
            None,
        )
        if reserved and check and check.get("state") == "Ready":
            start = parse_rfc3339(reserved["lastTransitionTime"]).timestamp()
            end = parse_rfc3339(check["lastTransitionTime"]).timestamp()
            times.append(end - start)
    return {
        "workloads_ready": len(times),
        "quota_reserved_to_ready_median_s": statistics.median(times) if times else None,
        "quota_reserved_to_ready_max_s": max(times) if times else None,
    }


def run_mode(
    plane: ControlPlane,
    root: Path,
    mode: str,
    args: argparse.Namespace,
    nodes: list[dict[str, Any]],
    first: bool,
) -> dict[str, Any]:
    case = Scenario(plane, root / mode, f"kueue-{mode}")
    (root / mode).mkdir()
    case.set_up()
    try:
        if first:
            case.use_nodes(nodes)
            ensure_namespace(case.admin, STRAY_NAMESPACE)
            apply_all(case.admin, stray_pods(nodes, args.hosts))
        pods_per_job = max(1, args.hosts // 2)
        wanted = dict(queue(args.jobsets))
        asked = sum(wanted.values()) * pods_per_job * GPUS_PER_HOST
        quota = int(asked * args.quota) // GPUS_PER_HOST * GPUS_PER_HOST
        apply_all(case.admin, kueue_objects(case, mode, quota))
        time.sleep(3)  # Kueue marks the ClusterQueue active
        if mode == "placer":
            case.start_controller("--kueue-admission-check", "--replan-interval=2")
        case.start_pod_reaper()
        for name, replicas in wanted.items():
            case.create_jobset(jobset(name, replicas, pods_per_job, mode))
        result: dict[str, Any] = {
            "mode": mode,
            "jobsets": len(wanted),
            "gpus_asked": asked,
            "gpu_quota": quota,
        }
        result.update(observe(case, wanted, pods_per_job, args.observe))
        result.update(racks(case))
        if mode == "placer":
            result.update(ready_latency(case))
        return result
    finally:
        case.tear_down()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.kueue_admission", description=__doc__
    )
    parser.add_argument("--blocks", type=int, default=4)
    parser.add_argument("--racks", type=int, default=4, help="racks per block")
    parser.add_argument("--hosts", type=int, default=4, help="hosts per rack")
    parser.add_argument("--jobsets", type=int, default=30)
    parser.add_argument("--quota", type=float, default=0.6, help="GPU quota / GPUs asked")
    parser.add_argument("--observe", type=float, default=180.0, help="seconds per mode")
    parser.add_argument("--modes", default="tas,placer")
    args = parser.parse_args(argv)

    plane = new_plane("placer-kueue-bench-")
    root = plane.root
    nodes = fleet(args.blocks, args.racks, args.hosts)
    print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()}", file=sys.stderr)
    results = []
    try:
        plane.start()
        for index, mode in enumerate(args.modes.split(",")):
            results.append(run_mode(plane, root, mode, args, nodes, first=index == 0))
            print(json.dumps(results[-1]), file=sys.stderr)
    finally:
        plane.stop()
    print(
        json.dumps(
            {
                "nodes": len(nodes),
                "gpus": len(nodes) * GPUS_PER_HOST,
                "load_after": os.getloadavg(),
                "results": results,
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
