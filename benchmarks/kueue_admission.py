"""Through real Kueue: placer's admission check against Kueue's Topology-Aware Scheduling alone.

    python -m benchmarks.kueue_admission [--fleet racks|SCENARIO] [--size S] [--jobsets N]

One control plane (tests/cluster: etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
JobSet v0.12.0, Kueue v0.19.2; binaries from `python -m tests.cluster.build`) serves both modes
in turn, on the same fleet, running pods and queue (`benchmarks.kueue_setups`): `racks`, a
synthetic GPU fleet of blocks x racks x hosts with half-rack child Jobs, or a fleet of the
benchmark suite (`tpu-mixed`, `gb200-nvl72`, ... of `benchmarks.worlds.scenarios`) with its running
JobSets, notebooks and DaemonSets bound and its queue's exclusive JobSets (the first
`--jobsets`). JobSet's own exclusive placement stays on in both modes; the ClusterQueue's
accelerator quota is `--quota` of what the queue asks (over quota).

- **tas**: Kueue TAS alone: a Topology of the fleet's levels, a ResourceFlavor with
  `topologyName`, and per pod template `podset-slice-required-topology: <exclusive key>` with
  `podset-slice-size` = the child Job's pods (each child Job in one domain). TAS places one
  workload at a time and knows nothing of exclusivity.
- **placer**: the flavor without `topologyName`, the ClusterQueue lists placer's AdmissionCheck
  (deploy/kueue), `placer controller --kueue-admission-check` runs as shipped, JobSets carry
  placer's gate in their templates.

Sampled every second for `--observe` seconds from the first JobSet created: accelerators
admitted (the Workload's Admitted condition) and running (every pod of the JobSet bound),
admitted JobSets whose pods are not all bound and the quota they hold meanwhile
(accelerator-hours), and why their pods are not bound. At the end: domains of the exclusive key
per child Job, child Jobs sharing a domain, and for placer the time from QuotaReserved to its
check Ready per Workload (1 s resolution: Kueue's and placer's timestamps are whole seconds).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections import defaultdict
from typing import Any, cast

from kubernetes import client as k8s

from benchmarks.cluster_throughput import new_plane
from benchmarks.kueue_setups import FLEET_LABEL, Pending, Setup, queued, racks_setup, scenario_setup
from benchmarks.worlds import scenarios
from placer.model.durations import parse_rfc3339
from tests.cluster.controlplane import ControlPlane
from tests.cluster.kube import apply_all, ensure_namespace
from tests.cluster.scenario import REPO, Scenario, load_documents

KUEUE_GROUP, KUEUE_VERSION = "kueue.x-k8s.io", "v1beta2"
KUEUE = f"{KUEUE_GROUP}/{KUEUE_VERSION}"
JOBSET_LABEL = "jobset.sigs.k8s.io/jobset-name"
UNBOUNDED = {"memory": "1000000Gi"}
"""Quota of every resource but the accelerator (a million of its unit, memory a million Gi):
only the accelerator's quota binds."""


def kueue_objects(case: Scenario, mode: str, setup: Setup, quota: int) -> list[dict[str, Any]]:
    """The Topology (tas), placer's check and RBAC as shipped (placer), a flavor, a ClusterQueue
    over every resource the queue asks (only the accelerator's quota binds) and a LocalQueue."""
    flavor: dict[str, Any] = {
        "apiVersion": KUEUE,
        "kind": "ResourceFlavor",
        "metadata": {"name": f"fleet-{mode}"},
        "spec": {"nodeLabels": {FLEET_LABEL[0]: FLEET_LABEL[1]}},
    }
    objects: list[dict[str, Any]] = []
    if mode == "tas":
        levels = [{"nodeLabel": level} for level in setup.levels]
        objects.append(
            {
                "apiVersion": KUEUE,
                "kind": "Topology",
                "metadata": {"name": f"bench-{setup.name}"},
                "spec": {"levels": levels},
            }
        )
        flavor["spec"]["topologyName"] = f"bench-{setup.name}"
    else:
        objects += [
            d
            for f in ("deploy/kueue/admissioncheck.yaml", "deploy/kueue/rbac.yaml")
            for d in load_documents(REPO / f)
        ]
    resources = sorted(
        {
            name
            for pending in setup.queue
            for rj in pending.manifest["spec"]["replicatedJobs"]
            for c in rj["template"]["spec"]["template"]["spec"]["containers"]
            for part in ("requests", "limits")
            for name in (c.get("resources") or {}).get(part) or {}
        }
    )
    quotas = [
        {
            "name": r,
            "nominalQuota": quota if r == setup.accelerator else UNBOUNDED.get(r, "1000000"),
        }
        for r in resources
    ]
    cq_spec: dict[str, Any] = {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": case.namespace}},
        "resourceGroups": [
            {
                "coveredResources": resources,
                "flavors": [{"name": f"fleet-{mode}", "resources": quotas}],
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


def observe(case: Scenario, queue: list[Pending], seconds: float) -> dict[str, Any]:
    """Sample once a second while the queue is worked on."""
    wanted = {p.name: p for p in queue}
    custom = k8s.CustomObjectsApi(case._api)
    started = time.monotonic()
    held_s = 0.0
    last = started
    first_admitted: dict[str, float] = {}
    running_at: dict[str, float] = {}
    samples = []
    while time.monotonic() - started < seconds:
        now = time.monotonic()
        listing = custom.list_namespaced_custom_object(
            KUEUE_GROUP, KUEUE_VERSION, case.namespace, "workloads"
        )
        workloads = cast(dict[str, Any], listing)["items"]  # the JSON, typed `object`
        admitted = set()
        for wl in workloads:
            owner = next((o["name"] for o in wl["metadata"].get("ownerReferences", [])), "")
            if owner in wanted and _true(wl, "Admitted"):
                admitted.add(owner)
                first_admitted.setdefault(owner, now - started)
        bound: dict[str, int] = defaultdict(int)
        pods: list[Any] = case.core.list_namespaced_pod(case.namespace).items
        for pod in pods:
            owner = (pod.metadata.labels or {}).get(JOBSET_LABEL, "")
            if pod.spec.node_name and not pod.metadata.deletion_timestamp:
                bound[owner] += 1
        running = {js for js in admitted if bound[js] >= wanted[js].pods}
        for js in running:
            running_at.setdefault(js, now - started)
        stuck = admitted - running
        held_s += sum(wanted[js].accelerators for js in stuck) * (now - last)
        last = now
        samples.append((round(now - started, 1), len(admitted), len(running)))
        time.sleep(max(0.0, 1.0 - (time.monotonic() - now)))
    units = {js: p.accelerators for js, p in wanted.items()}
    stuck_now = set(first_admitted) - set(running_at)
    stuck_for = {
        js: round(seconds - t, 1) for js, t in first_admitted.items() if js not in running_at
    }
    return {
        "accelerators_asked": sum(units.values()),
        "accelerators_admitted": sum(units[js] for js in first_admitted),
        "accelerators_running": sum(units[js] for js in running_at),
        "jobsets_admitted": len(first_admitted),
        "jobsets_running": len(running_at),
        "admitted_not_running_at_end": len(stuck_for),
        "admitted_not_running_s": stuck_for,
        "admitted_to_running_s": [
            round(running_at[js] - first_admitted[js], 1) for js in sorted(running_at)
        ],
        "quota_accelerator_hours_held_not_running": round(held_s / 3600, 3),
        "why_not_running": why_not_bound(case, stuck_now),
        "samples_every_10s": samples[::10],
    }


def why_not_bound(case: Scenario, jobsets: set[str]) -> dict[str, int]:
    """Unbound pods of `jobsets` by why: their scheduling gates, else the scheduler's message."""
    reasons: dict[str, int] = defaultdict(int)
    pods: list[Any] = case.core.list_namespaced_pod(case.namespace).items
    for pod in pods:
        owner = (pod.metadata.labels or {}).get(JOBSET_LABEL, "")
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


def domains(case: Scenario, queue: list[Pending]) -> dict[str, Any]:
    """Domains of its JobSet's exclusive key per child Job with pods bound, and domains shared."""
    key_of = {p.name: p.exclusive_key for p in queue}
    nodes: list[Any] = case.core.list_node().items
    labels = {n.metadata.name: n.metadata.labels for n in nodes}
    per_job: dict[str, set[str]] = defaultdict(set)
    job_key: dict[str, str] = {}
    pods: list[Any] = case.core.list_namespaced_pod(case.namespace).items
    for pod in pods:
        meta = pod.metadata.labels or {}
        job, jobset = meta.get("batch.kubernetes.io/job-name"), meta.get(JOBSET_LABEL, "")
        if pod.spec.node_name and job and jobset in key_of:
            per_job[job].add(labels[pod.spec.node_name].get(key_of[jobset], "?"))
            job_key[job] = key_of[jobset]
    owners: dict[str, int] = defaultdict(int)
    for held in per_job.values():
        for domain in held:
            owners[domain] += 1
    # pods of the JobSets already running when the queue came (another namespace) by domain
    running: dict[tuple[str, str], int] = defaultdict(int)
    everywhere: list[Any] = case.core.list_pod_for_all_namespaces().items
    for pod in everywhere:
        owner = (pod.metadata.labels or {}).get(JOBSET_LABEL)
        if owner and pod.spec.node_name and pod.metadata.namespace != case.namespace:
            for key in set(key_of.values()):
                running[(key, labels[pod.spec.node_name].get(key, "?"))] += 1
    spans = [len(v) for v in per_job.values()]
    return {
        "child_jobs_with_pods_bound": len(per_job),
        "domains_per_child_job": round(statistics.mean(spans), 3) if spans else None,
        "domains_shared_by_child_jobs": sum(1 for n in owners.values() if n > 1),
        "child_jobs_in_a_domain_a_running_jobset_uses": sum(
            1 for job, held in per_job.items() if any(running[(job_key[job], d)] for d in held)
        ),
    }


def not_admitted(case: Scenario) -> dict[str, int]:
    """Workloads not admitted at the end, by what Kueue's QuotaReserved condition and placer's
    check say (status, reason and message, cut to 160 characters): whether each waits for
    Kueue's quota or for placer."""
    custom = k8s.CustomObjectsApi(case._api)
    said: dict[str, int] = defaultdict(int)
    listing = custom.list_namespaced_custom_object(
        KUEUE_GROUP, KUEUE_VERSION, case.namespace, "workloads"
    )
    for wl in cast(dict[str, Any], listing)["items"]:  # the JSON, typed `object`
        if _true(wl, "Admitted"):
            continue
        status = wl.get("status") or {}
        quota: dict[str, Any] = next(
            (c for c in status.get("conditions") or [] if c.get("type") == "QuotaReserved"), {}
        )
        check: dict[str, Any] = next(
            (c for c in status.get("admissionChecks") or [] if c.get("name") == "placer"), {}
        )
        line = (
            f"QuotaReserved={quota.get('status', '-')} {quota.get('reason', '')}: "
            f"{(quota.get('message') or '')[:160]} | check {check.get('state', '-')}: "
            f"{(check.get('message') or '')[:160]}"
        )
        said[line] += 1
    return dict(sorted(said.items()))


def ready_latency(case: Scenario) -> dict[str, Any]:
    """Per Workload: its placer check's Ready transition minus its QuotaReserved transition."""
    custom = k8s.CustomObjectsApi(case._api)
    times = []
    listing = custom.list_namespaced_custom_object(
        KUEUE_GROUP, KUEUE_VERSION, case.namespace, "workloads"
    )
    for wl in cast(dict[str, Any], listing)["items"]:  # the JSON, typed `object`
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
    plane: ControlPlane, mode: str, setup: Setup, args: argparse.Namespace, first: bool
) -> dict[str, Any]:
    case = Scenario(plane, plane.root / mode, f"kueue-{mode}")
    (plane.root / mode).mkdir()
    case.set_up()
    try:
        if first:
            case.use_nodes(setup.nodes)
            for namespace in sorted({p["metadata"]["namespace"] for p in setup.pods}):
                ensure_namespace(case.admin, namespace)
            apply_all(case.admin, setup.priority_classes)
            apply_all(case.admin, setup.pods)
        queue = setup.queue[: args.jobsets]
        asked = sum(p.accelerators for p in queue)
        quota = int(asked * args.quota)
        apply_all(case.admin, kueue_objects(case, mode, setup, quota))
        time.sleep(3)  # Kueue marks the ClusterQueue active
        if mode == "placer":
            case.start_controller("--kueue-admission-check", "--replan-interval=2")
        case.start_pod_reaper()
        for pending in queue:
            case.create_jobset(queued(pending, mode, setup.accelerator))
        result: dict[str, Any] = {
            "mode": mode,
            "jobsets": len(queue),
            "accelerator_quota": quota,
        }
        result.update(observe(case, queue, args.observe))
        result.update(domains(case, queue))
        result["not_admitted"] = not_admitted(case)
        if mode == "placer":
            result.update(ready_latency(case))
        return result
    finally:
        case.tear_down()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.kueue_admission", description=__doc__
    )
    parser.add_argument(
        "--fleet",
        default="racks",
        choices=("racks", *scenarios.STATIC_BUILDERS),
        help="racks (synthetic, below) or a benchmark scenario's fleet and queue",
    )
    parser.add_argument("--size", type=float, default=1.0, help="scenario size")
    parser.add_argument("--seed", type=int, default=0, help="scenario seed")
    parser.add_argument("--blocks", type=int, default=4, help="racks fleet: blocks")
    parser.add_argument("--racks", type=int, default=4, help="racks fleet: racks per block")
    parser.add_argument("--hosts", type=int, default=4, help="racks fleet: hosts per rack")
    parser.add_argument("--jobsets", type=int, default=30, help="the first N of the queue")
    parser.add_argument("--quota", type=float, default=0.6, help="quota / accelerators asked")
    parser.add_argument("--observe", type=float, default=180.0, help="seconds per mode")
    parser.add_argument("--modes", default="tas,placer")
    args = parser.parse_args(argv)

    if args.fleet == "racks":
        setup = racks_setup(args.blocks, args.racks, args.hosts, args.jobsets)
    else:
        setup = scenario_setup(args.fleet, args.seed, args.size)
    plane = new_plane("placer-kueue-bench-")
    print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()}", file=sys.stderr)
    results = []
    try:
        plane.start()
        for index, mode in enumerate(args.modes.split(",")):
            results.append(run_mode(plane, mode, setup, args, first=index == 0))
            print(json.dumps(results[-1]), file=sys.stderr)
    finally:
        plane.stop()
    summary = {
        "fleet": setup.name,
        "nodes": len(setup.nodes),
        "bound_pods_of_no_queued_jobset": len(setup.pods),
        "accelerator": setup.accelerator,
        "load_after": os.getloadavg(),
        "results": results,
    }
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
