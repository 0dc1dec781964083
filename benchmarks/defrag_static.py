"""`python -m benchmarks.defrag_static`: defragmentation on the static fragmented GPU fleets.

Target (issue 20): on the fragmented GPU scenarios, `placer defrag` admits what the best plan
with moves admits, moving at most 2% of the running JobSets. For each scenario tagged
`fragmented` (H100 and H200 sub-blocks, GB200 NVL72 racks), in one process:

1. the plan without moves (`cpsat`), the baseline;
2. the defrag plan: the same queue plus every running JobSet given as movable. The scenarios'
   running JobSets have no manifests, so each is rebuilt from what it holds: one child Job per
   domain it holds, as many pods per child Job as its largest domain holds (one per host), each
   pod asking what its pods use on a node; a move must find domains that roomy.

Reported: accelerator units admitted (pending JobSets only), the defrag plan's status and proven
bound (OPTIMAL means no plan with moves admits more), moves and their share of running JobSets,
chip-hours the moves restart, wall seconds. The machine and load average are printed with them.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections import Counter
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from benchmarks.reporting.measure import machine_info
from benchmarks.worlds.scenarios import STATIC_BUILDERS
from placer.model.cluster import ClusterSnapshot
from placer.model.options import SolveOptions, TimePolicy
from placer.model.preemption import PreemptionPolicy
from placer.model.workload import JobSetRequest, PodShape, ReplicatedJobRequest
from placer.solver.registry import get_solver

__all__ = ["main", "movable_requests"]

NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)


def movable_requests(snapshot: ClusterSnapshot, key: str) -> list[JobSetRequest]:
    """Each running JobSet holding domains of `key`, rebuilt as a request to place again."""
    held: dict[str, Counter[str]] = {}
    usage: dict[str, Any] = {}
    for n in snapshot.nodes:
        domain = n.labels.get(key)
        for js in n.jobsets:
            u = n.jobset_usage.get(js)
            if domain is None or u is None:
                continue
            held.setdefault(js, Counter())[domain] += 1
            usage.setdefault(js, u)
    requests = []
    for i, (js, domains) in enumerate(sorted(held.items())):
        u = usage[js]
        pods = Decimal(u.requests.get("pods", 1)) or Decimal(1)
        per_pod = {r: q / pods for r, q in u.requests.items() if r != "pods"}
        namespace, _, name = js.partition("/")
        rjob = ReplicatedJobRequest(
            name="workers",
            replicas=len(domains),
            pods_per_job=max(domains.values()),
            pod=PodShape(requests=per_pod),
            exclusive_key=key,
        )
        requests.append(
            JobSetRequest(
                namespace=namespace,
                name=name,
                priority=u.priority or 0,
                order=10_000 + i,
                replicated_jobs=(rjob,),
            )
        )
    return requests


def measure(name: str, seed: int, time_limit_s: float, size: float = 1.0) -> dict[str, Any]:
    sc = STATIC_BUILDERS[name](seed, size)
    snapshot, queue = sc.snapshot, sc.requests
    key = Counter(r.exclusive_key for js in queue for r in js.replicated_jobs).most_common(1)[0][0]
    assert key is not None
    movable = movable_requests(snapshot, key)
    base = SolveOptions(time_limit_s=time_limit_s, seed=seed, time=TimePolicy(now=NOW))
    started = time.perf_counter()
    plain = get_solver("cpsat").solve(snapshot, queue, base)
    plain_s = time.perf_counter() - started
    options = base.model_copy(update={"preemption": PreemptionPolicy(mode="defrag")})
    started = time.perf_counter()
    defrag = get_solver("cpsat").solve(snapshot, [*queue, *movable], options)
    defrag_s = time.perf_counter() - started
    pending = {js.key for js in queue}

    def admitted(plan: Any) -> int:
        return sum(
            o.accelerators for o in plan.jobsets if o.status == "placed" and o.key in pending
        )

    running = len({k for n in snapshot.nodes for k in n.jobsets})
    return {
        "scenario": name,
        "nodes": len(snapshot.nodes),
        "pending": len(queue),
        "running": running,
        "movable": len(movable),
        "admitted_without_moves": admitted(plain),
        "admitted_with_moves": admitted(defrag),
        "defrag_status": defrag.solver.status,
        "defrag_bound": defrag.solver.bound,
        "moves": len(defrag.preempted),
        "moved_share": round(len(defrag.preempted) / max(running, 1), 4),
        "restart_chip_hours": round(sum(p.cost_chip_hours for p in defrag.preempted), 1),
        "wall_s": {"plan": round(plain_s, 2), "defrag": round(defrag_s, 2)},
        "notes": defrag.solver.notes,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.defrag_static")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--time-limit", type=float, default=10.0)
    parser.add_argument("--size", type=float, default=1.0, help="fleet scale (1: the static's)")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()
    for name in ("h100-subblocks", "h200-subblocks", "gb200-nvl72"):
        print(json.dumps(measure(name, args.seed, args.time_limit, args.size)), flush=True)
    print(
        json.dumps(
            {"machine": machine_info(), "load_before": load_before, "load_after": os.getloadavg()}
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
