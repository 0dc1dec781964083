"""Benchmark of one reconcile cycle of the in-cluster controller on the simulated (memory) cluster.

Issue 5's target: with 10,000 nodes and 500 pending JobSets, one reconcile cycle (plan and
write-back calls) takes at most 5 s on 2 cores.

The fleet: TPU node pools of 4 hosts (4 chips each, tainted, labeled by pool, topology and
block), a share of them running unmanaged JobSets whose pods are bound there (so they hold their
pools and their nodes have less room). The queue: gated JobSets of 1, 2, 4 or 8 child Jobs of 4
pods of 4 chips, exclusive per node pool, with their pods already created (gated) as JobSet's
own controllers would; a few more child Jobs than free pools, so some JobSets stay pending with
an Unschedulable event. The controller lists the cluster as its watch loop does
(`Controller.relist`), plans them all in one cycle (`run_cycle(force_plan=True)`, no gather
window) and writes through the memory adapter, whose API-server work counts in the cycle.

Reported: the cycle's wall and CPU time and the wall time of its phases as the cycle reports them
(observe, survey, snapshot, review, plan, commit to the placement ledger, write planning, writes),
the solver's phases, the writes made, and a second cycle with nothing changed (the JobSets left
unschedulable are planned again). Both cycles plan at one fixed instant (`INSTANT_S`), and each
cycle's plans are printed as a digest, so a speed change shows it changed no plan by giving the
same digests on both trees. Run from the repository root:

    python -m benchmarks.controller_bench --solver cpsat --time-limit 10 [--reservations head]
        [--schedule cpsat]

With `--schedule cpsat` the time-aware pass decides every waiting JobSet's start with the CP-SAT
schedule (issue 21's target: the cycle at 10,000 nodes and 500 pending JobSets within 5 s).

`--shared N` and `--mixed M` make the queue's first N JobSets ones without an exclusive key and
the next M ones with a coordinator without one beside their exclusive workers (the world of
`benchmarks.shared_starts_bench`, through the whole cycle: the controller pauses the garbage
collector for its cycle, which that benchmark's bare plan does not); `--running-share` sets the
share of pools running. Running pods carry no start time unless `--started-apart H` dates each
running JobSet's start at random within the H hours before the planning instant: without one,
every running JobSet is expected to end at the same moment (the default run time from now), which
makes nodes and holds alike more than in a fleet whose JobSets started apart.

With `--kueue` the pending JobSets are suspended under Kueue instead (issue 19's target: quota
reserved to placer's check Ready at 10,000 nodes and 500 Workloads within 2 s at the median):
each has a Workload whose quota is reserved and whose placer check is Pending, and the first
cycle plans them and writes every check (Ready, or Pending with its expected start), so every
Workload's check is written within that cycle's wall time.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import platform
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks.reporting.measure import cpu_model
from benchmarks.simulate import cluster_sim as sim
from placer.controller.act.memory_adapter import MemoryCluster
from placer.controller.decide.observe.kueue import CONTROLLER_NAME
from placer.controller.decide.records.ledger import LEDGER_NAME
from placer.controller.reconcile import Clocks, Controller, ControllerConfig, CycleReport
from placer.model.durations import format_rfc3339
from placer.model.options import ReservationPolicy, ScheduleMode, SolveOptions, TimePolicy
from placer.model.plan import Plan
from placer.model.workload import EXCLUSIVE_TOPOLOGY, JOBSET_NAME_LABEL

__all__ = ["Fleet", "build_cluster", "main", "measure", "plan_digest"]

log = logging.getLogger(__name__)

NODEPOOL = "cloud.google.com/gke-nodepool"
BLOCK = "cloud.google.com/gce-topology-block"
TOPOLOGY = "cloud.google.com/gke-tpu-topology"
TPU = "google.com/tpu"
HOSTS_PER_POOL = 4
POOLS_PER_BLOCK = 25
INSTANT_S = 1_800_000_000.0
"""The controller's wall clock in both cycles (epoch seconds): a fixed planning instant makes the
plans of two trees comparable by digest (expected starts are seconds after it)."""


@dataclass(frozen=True)
class Fleet:
    nodes: int = 10_000
    pending: int = 500
    running_share: float = 0.3
    """Share of the node pools running an unmanaged JobSet."""
    seed: int = 1
    kueue: bool = False
    """The pending JobSets are suspended under Kueue instead: each has a Workload with quota
    reserved and placer's AdmissionCheck Pending (--kueue-admission-check), no pods yet."""
    kueue_later: int = 0
    """With `kueue`: the last this many Workloads wait for quota at first (Kueue's queue); after
    the first two cycles Kueue reserves theirs, and a third cycle decides them: QuotaReserved to
    check Ready when quota comes a few Workloads at a time, beside everything decided before."""
    shared: int = 0
    """The first this many pending JobSets have no exclusive key: their pods (the workers'
    shape) are placed node by node."""
    mixed: int = 0
    """The next this many keep their exclusive workers (the key on the workers' Job template)
    and gain a coordinator without one: one pod of the workers' shape, placed node by node."""
    started_apart_h: float = 0.0
    """Each running JobSet's pods started at one instant drawn within this many hours before
    the planning instant (their own random stream, so the rest of the fleet is the same); 0:
    no start time, so every running JobSet is expected to end together."""


def _pool(i: int) -> str:
    return f"tpu-v5e-pool-{i:05d}"


def _running_pod(pool: int, host: int, started_s: float | None = None) -> dict[str, Any]:
    """A Running pod of the unmanaged JobSet that holds `pool`, bound to one of its hosts,
    started at `started_s` (epoch seconds; None: no start time)."""
    name = f"run-{pool:05d}"
    status: dict[str, Any] = {"phase": "Running"}
    if started_s is not None:
        status["startTime"] = format_rfc3339(started_s)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{name}-w-0-{host}",
            "namespace": "batch",
            "labels": {JOBSET_NAME_LABEL: name},
        },
        "spec": {
            "nodeName": f"{_pool(pool)}-{host}",
            "containers": [
                {
                    "name": "main",
                    "image": "x",
                    "resources": {"requests": {TPU: "4", "cpu": "1"}, "limits": {TPU: "4"}},
                }
            ],
        },
        "status": status,
    }


def build_cluster(fleet: Fleet) -> MemoryCluster:
    """The simulated cluster: nodes, running pods, and the pending JobSets with their gated pods."""
    rnd = random.Random(fleet.seed)
    starts = random.Random(fleet.seed + 1)
    cluster = MemoryCluster(history=1_000_000)
    taint = {"key": TPU, "value": "present", "effect": "NoSchedule"}
    pools = fleet.nodes // HOSTS_PER_POOL
    for p in range(pools):
        labels = {NODEPOOL: _pool(p), BLOCK: f"block-{p // POOLS_PER_BLOCK:03d}", TOPOLOGY: "4x4"}
        for h in range(HOSTS_PER_POOL):
            node = sim.node_object(f"{_pool(p)}-{h}", labels, allocatable={TPU: 4}, taints=[taint])
            cluster.create("nodes", node)
        if rnd.random() < fleet.running_share:
            started = None
            if fleet.started_apart_h > 0:
                started = INSTANT_S - starts.uniform(0, fleet.started_apart_h) * 3600
            for h in range(HOSTS_PER_POOL):
                cluster.create("pods", _running_pod(p, h, started))
    for j in range(fleet.pending):
        name = f"train-{j:04d}"
        replicas = rnd.choice([1, 2, 4, 8])
        obj = _pending_jobset(fleet, j, name, replicas)
        for rj in obj["spec"]["replicatedJobs"]:
            spec = rj["template"]["spec"]["template"]["spec"]
            spec["nodeSelector"] = {TOPOLOGY: "4x4"}
            spec["tolerations"] = [{"key": TPU, "operator": "Exists", "effect": "NoSchedule"}]
        if fleet.kueue:
            obj["spec"]["suspend"] = True
            cluster.create("jobsets", obj)
            reserved = j < fleet.pending - fleet.kueue_later
            cluster.create("workloads", _workload(name, replicas, reserved=reserved))
        else:
            cluster.create("jobsets", obj)
            sim.create_pods(cluster, "research", name)
    if fleet.kueue:
        cluster.create(
            "admissionchecks",
            {"metadata": {"name": "placer"}, "spec": {"controllerName": CONTROLLER_NAME}},
        )
    return cluster


def _pending_jobset(fleet: Fleet, j: int, name: str, replicas: int) -> dict[str, Any]:
    """Pending JobSet `j`: exclusive per node pool, or one of `fleet.shared` without a key, or
    one of `fleet.mixed` with a coordinator beside its exclusive workers."""
    shape = {TPU: "4", "cpu": "1"}
    workers = ("workers", replicas, HOSTS_PER_POOL, shape)
    if j < fleet.shared:
        return sim.jobset_object(name, namespace="research", replicated_jobs=[workers])
    if j < fleet.shared + fleet.mixed:
        obj = sim.jobset_object(
            name, namespace="research", replicated_jobs=[workers, ("coordinator", 1, 1, shape)]
        )
        template = obj["spec"]["replicatedJobs"][0]["template"]
        template["metadata"] = {"annotations": {EXCLUSIVE_TOPOLOGY: NODEPOOL}}
        return obj
    return sim.jobset_object(
        name, namespace="research", replicated_jobs=[workers], exclusive_key=NODEPOOL
    )


def _workload(jobset: str, replicas: int, *, reserved: bool = True) -> dict[str, Any]:
    """Kueue's Workload of a queued JobSet: quota reserved at the planning instant (unless not
    `reserved`: it waits in Kueue's queue), placer's check Pending (Kueue now waits for placer;
    Kueue adds the entry before it reserves)."""
    at = format_rfc3339(INSTANT_S)
    conditions = (
        [{"type": "QuotaReserved", "status": "True", "lastTransitionTime": at}] if reserved else []
    )
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": f"jobset-{jobset}",
            "namespace": "research",
            "ownerReferences": [{"kind": "JobSet", "name": jobset, "controller": True}],
        },
        "spec": {"podSets": [{"name": "workers", "count": replicas * HOSTS_PER_POOL}]},
        "status": {
            "conditions": conditions,
            "admissionChecks": [{"name": "placer", "state": "Pending", "lastTransitionTime": at}],
        },
    }


def _cycle(controller: Controller) -> tuple[CycleReport, dict[str, tuple[float, float]]]:
    """One cycle; (wall, CPU) seconds of the whole, and the wall seconds of each phase the cycle
    reports (`CycleReport.phases`; their CPU time is not measured, shown as 0).

    The whole is timed around the call, so it also holds the collection the garbage collector
    catches up with when the cycle re-enables it (the cycle's own `wall_s` does not)."""
    wall, cpu = time.perf_counter(), time.process_time()
    report = controller.run_cycle(force_plan=True)
    total = (time.perf_counter() - wall, time.process_time() - cpu)
    parts = {"cycle": total}
    parts.update({name: (seconds, 0.0) for name, seconds in report.phases.items()})
    parts["outside the phases (GC catch-up)"] = (total[0] - sum(report.phases.values()), 0.0)
    return report, parts


def plan_digest(plans: Sequence[Plan]) -> str:
    """A short hash of every outcome of the plans (placements, reasons, expected starts, reserved
    domains, backfill, waits-for): equal digests on two trees, identical plans."""
    outcomes = [o.model_dump(mode="json") for p in plans for o in p.jobsets]
    return hashlib.sha256(json.dumps(outcomes, sort_keys=True).encode()).hexdigest()[:16]


def _ledger_bytes(cluster: MemoryCluster, config: ControllerConfig) -> int:
    """Size of the ledger's data after the first cycle: what the 1 MiB ConfigMap limit bounds."""
    obj = cluster.get("configmaps", LEDGER_NAME, namespace=config.ledger_namespace)
    return sum(len(k) + len(v) for k, v in (obj.get("data") or {}).items())


def measure(
    fleet: Fleet,
    solver: str,
    time_limit_s: float,
    reservations: ReservationPolicy = "none",
    schedule: ScheduleMode = "greedy",
) -> dict[str, Any]:
    """Build the cluster, list it, run two cycles; the figures of both. `reservations` and
    `schedule`: the controller's time-aware planning (`--reservations`, `--schedule`)."""
    start = time.perf_counter()
    cluster = build_cluster(fleet)
    built = time.perf_counter() - start
    if fleet.kueue and reservations == "none":
        reservations = "head"  # what --kueue-admission-check runs with
    policy = TimePolicy(reservations=reservations, schedule=schedule)
    options = SolveOptions(time_limit_s=time_limit_s, time=policy)
    config = ControllerConfig(
        solver=solver, options=options, window_s=0.0, kueue_admission_check=fleet.kueue
    )
    controller = Controller(
        cluster, config, clocks=Clocks(sleep=lambda s: None, wall=lambda: INSTANT_S)
    )
    start = time.perf_counter()
    controller.relist()
    listed = time.perf_counter() - start
    first, parts = _cycle(controller)
    second, again = _cycle(controller)
    plans = [p for p, _, _ in first.planned.plans]
    arrival = _arrival(cluster, controller, fleet) if fleet.kueue_later else {}
    return {
        **arrival,
        "build_s": built,
        "relist_s": listed,
        "nodes": len(first.snapshot.nodes),
        "targets": len(first.review.targets),
        "placed": len(first.planned.placed),
        "placed_keys": sorted(first.planned.placed),
        "unschedulable": len(first.planned.unschedulable),
        "writes": len(first.writes),
        "failed_writes": len(first.executed.failed) if first.executed else 0,
        "solver": [
            (p.solver.name, p.solver.status, p.solver.wall_seconds, p.solver.phases) for p in plans
        ],
        "first": parts,
        "second": again,
        "second_writes": len(second.writes),
        "ledger_bytes": _ledger_bytes(cluster, config),
        "ledger_entries": len(first.ledger.entries) if first.ledger else 0,
        "reserved": sum(1 for p in plans for o in p.jobsets if o.reserved_domains),
        "digests": (
            plan_digest(plans),
            plan_digest([p for p, _, _ in second.planned.plans]),
        ),
        "checks": _check_states(cluster),
    }


def _arrival(cluster: MemoryCluster, controller: Controller, fleet: Fleet) -> dict[str, Any]:
    """Kueue reserves quota for the `kueue_later` Workloads that waited; the controller's cache
    learns it as from its watch (one MODIFIED event each, untimed); one cycle decides them,
    timed."""
    names = {
        f"jobset-train-{j:04d}" for j in range(fleet.pending - fleet.kueue_later, fleet.pending)
    }
    at = format_rfc3339(INSTANT_S)

    def reserve(obj: dict[str, Any]) -> None:
        obj["status"]["conditions"] = [
            {"type": "QuotaReserved", "status": "True", "lastTransitionTime": at}
        ]

    for name in sorted(names):
        changed = cluster.mutate("workloads", name, reserve, namespace="research")
        controller.cache.apply("workloads", "MODIFIED", changed)  # the watch's event
    report, parts = _cycle(controller)
    return {
        "arrival": parts,
        "arrival_targets": len(report.review.targets),
        "arrival_writes": len(report.writes),
        "arrival_checks": _check_states(cluster, names),
    }


def _check_states(cluster: MemoryCluster, names: set[str] | None = None) -> dict[str, int]:
    """How many Workloads' placer checks are in each state (of `names`, else of all)."""
    states: dict[str, int] = {}
    for wl in cluster.objects("workloads"):
        if names is not None and wl["metadata"]["name"] not in names:
            continue
        for entry in wl["status"].get("admissionChecks") or []:
            states[entry["state"]] = states.get(entry["state"], 0) + 1
    return dict(sorted(states.items()))


def machine() -> str:
    return f"{os.cpu_count()} CPUs ({cpu_model()}), Python {platform.python_version()}"


def _print(fleet: Fleet, solver: str, limit: float, schedule: str, r: dict[str, Any]) -> None:
    print(f"machine: {machine()}")
    apart = f" (started within {fleet.started_apart_h:g} h)" if fleet.started_apart_h else ""
    print(
        f"fleet: {r['nodes']} nodes, {fleet.running_share:.0%} of pools running{apart}, "
        f"{fleet.pending} pending JobSets ({fleet.shared} without an exclusive key, "
        f"{fleet.mixed} with a coordinator); solver {solver}, "
        f"time limit {limit:g} s, schedule {schedule}; cluster built in {r['build_s']:.1f} s, "
        f"listed in {r['relist_s']:.2f} s"
    )
    print(
        f"first cycle: {r['targets']} targets, {r['placed']} placed, {r['unschedulable']} "
        f"unschedulable, {r['writes']} writes ({r['failed_writes']} failed)"
    )
    for name, status, wall, phases in r["solver"]:
        shown = ", ".join(f"{k} {v:.2f}" for k, v in phases.items())
        print(f"  solver {name}: {status}, {wall:.2f} s ({shown})")
    for name, (wall, cpu) in r["first"].items():
        print(f"  {name}: {wall:.2f} s wall" + (f", {cpu:.2f} s CPU" if cpu else ""))
    print(f"placement ledger: {r['ledger_bytes']:,} bytes of data (ConfigMap limit 1 MiB)")
    print(f"reservations: {r['reserved']} JobSets reserved for")
    print(f"plan digests (first cycle, second cycle): {r['digests'][0]} {r['digests'][1]}")
    if r["checks"]:
        print(f"placer's Kueue checks after both cycles: {r['checks']}")
    print(f"second cycle (nothing changed): {r['second_writes']} writes")
    for name, (wall, cpu) in r["second"].items():
        print(f"  {name}: {wall:.2f} s wall" + (f", {cpu:.2f} s CPU" if cpu else ""))
    if "arrival" in r:
        print(
            f"Kueue reserves {fleet.kueue_later} more: {r['arrival_targets']} targets, "
            f"{r['arrival_writes']} writes; their checks: {r['arrival_checks']}"
        )
        for name, (wall, cpu) in r["arrival"].items():
            print(f"  {name}: {wall:.2f} s wall" + (f", {cpu:.2f} s CPU" if cpu else ""))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--nodes", type=int, default=Fleet.nodes)
    parser.add_argument("--pending", type=int, default=Fleet.pending)
    parser.add_argument("--solver", default="cpsat")
    parser.add_argument("--time-limit", type=float, default=10.0, help="solver time limit, s")
    parser.add_argument("--seed", type=int, default=Fleet.seed)
    parser.add_argument("--reservations", choices=("none", "head", "all"), default="none")
    parser.add_argument("--schedule", choices=("greedy", "cpsat"), default="greedy")
    parser.add_argument(
        "--kueue",
        action="store_true",
        help="the pending JobSets wait under Kueue for placer's admission check (Workloads with "
        "quota reserved); the first cycle's wall time is QuotaReserved to check Ready",
    )
    parser.add_argument(
        "--kueue-later",
        type=int,
        default=0,
        metavar="N",
        help="with --kueue: the last N Workloads get quota only after two cycles; a third "
        "cycle, timed, decides them (quota reserved a few at a time)",
    )
    parser.add_argument(
        "--running-share",
        type=float,
        default=Fleet.running_share,
        help="share of the node pools running an unmanaged JobSet",
    )
    parser.add_argument(
        "--shared", type=int, default=0, help="pending JobSets without an exclusive key"
    )
    parser.add_argument(
        "--mixed",
        type=int,
        default=0,
        help="pending JobSets after those given a coordinator without an exclusive key",
    )
    parser.add_argument(
        "--started-apart",
        type=float,
        default=0.0,
        metavar="H",
        help="running JobSets started at random within the H hours before the planning instant "
        "(default 0: no start time, all expected to end together)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    fleet = Fleet(
        nodes=args.nodes,
        pending=args.pending,
        running_share=args.running_share,
        seed=args.seed,
        shared=args.shared,
        mixed=args.mixed,
        started_apart_h=args.started_apart,
        kueue=args.kueue,
        kueue_later=args.kueue_later if args.kueue else 0,
    )
    result = measure(fleet, args.solver, args.time_limit, args.reservations, args.schedule)
    _print(fleet, args.solver, args.time_limit, args.schedule, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
