"""Kueue TAS packing benchmark: non-exclusive JobSets with rack/block topology on H100/H200.

    python -m benchmarks.kueue_tas [--seeds 0 1 2] [--size 1.0] [--time-limit 30] [--workers 0]

For each seed, the `kueue_shared` scenario (benchmarks/scenarios.py) is planned by `best-fit`
(Kueue TAS BestFit, as Kueue would place each JobSet in queue order) and by `cpsat`; each plan is
checked by the independent checker. Printed per seed and solver, as a Markdown table: GPUs
admitted, JobSets placed, and per placed JobSet the average racks (sub-blocks), blocks and hosts
its pods span (racks and hosts also over only the JobSets both solvers placed, a like-for-like
figure).
Figures go to benchmarks/RESULTS.md with the command; timings on the shared machine are noisy.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence

from benchmarks.records import BLOCK, SUBBLOCK
from benchmarks.scenarios import kueue_shared
from placer.model.cluster import ClusterSnapshot
from placer.model.options import SolveOptions
from placer.model.plan import Plan
from placer.model.workload import JobSetRequest
from placer.solver.checker import check
from placer.solver.registry import get_solver

__all__ = ["main", "spans"]

SOLVERS = ("best-fit", "cpsat")


def spans(
    plan: Plan, snapshot: ClusterSnapshot, only: set[str] | None = None
) -> tuple[float, float, float]:
    """Average (racks, blocks, hosts) spanned per placed JobSet (of `only`, if given)."""
    nodes = snapshot.by_name()
    placed = [o for o in plan.jobsets if o.status == "placed" and (only is None or o.key in only)]
    if not placed:
        return 0.0, 0.0, 0.0
    racks = blocks = hosts = 0
    for o in placed:
        used = [nodes[p.node] for j in o.jobs for p in j.pods]
        racks += len({(n.labels[BLOCK], n.labels[SUBBLOCK]) for n in used})
        blocks += len({n.labels[BLOCK] for n in used})
        hosts += len({n.name for n in used})
    return racks / len(placed), blocks / len(placed), hosts / len(placed)


def _row(
    seed: int,
    solver: str,
    plan: Plan,
    snapshot: ClusterSnapshot,
    jobsets: Sequence[JobSetRequest],
    both: set[str],
) -> str:
    racks, blocks, hosts = spans(plan, snapshot)
    common_racks, _, common_hosts = spans(plan, snapshot, both)
    placed = sum(o.status == "placed" for o in plan.jobsets)
    gpus = sum(o.accelerators for o in plan.jobsets if o.status == "placed")
    demand = sum(js.accelerator_units for js in jobsets)
    return (
        f"| {seed} | {solver} | {plan.solver.status} | {gpus} / {demand} | {placed} / "
        f"{len(jobsets)} | {racks:.2f} | {common_racks:.2f} ({len(both)}) | {blocks:.2f} | "
        f"{hosts:.2f} | {common_hosts:.2f} | "
        f"{plan.solver.wall_seconds:.1f} |"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.kueue_tas")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--size", type=float, default=1.0)
    parser.add_argument("--time-limit", type=float, default=30.0)
    parser.add_argument("--workers", type=int, default=0)
    args = parser.parse_args(argv)
    print(
        "| seed | solver | status | GPUs admitted | JobSets placed | racks / JobSet | "
        "racks / JobSet placed by both (how many) | blocks / JobSet | hosts / JobSet | "
        "hosts / JobSet placed by both | wall s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for seed in args.seeds:
        scenario = kueue_shared(seed, args.size)
        snapshot, jobsets = scenario.snapshot, scenario.requests
        options = SolveOptions(time_limit_s=args.time_limit, workers=args.workers, seed=seed)
        plans: dict[str, Plan] = {}
        for solver in SOLVERS:
            started = time.perf_counter()
            plan = get_solver(solver).solve(snapshot, jobsets, options)
            plan = plan.model_copy(
                update={
                    "solver": plan.solver.model_copy(
                        update={"wall_seconds": time.perf_counter() - started}
                    )
                }
            )
            problems = check(plan, snapshot, jobsets, options)
            if problems:
                raise SystemExit(f"seed {seed} {solver}: invalid plan: {problems[:3]}")
            plans[solver] = plan
        placed = [{o.key for o in p.jobsets if o.status == "placed"} for p in plans.values()]
        both = set.intersection(*placed)
        for solver, plan in plans.items():
            print(_row(seed, solver, plan, snapshot, jobsets, both), flush=True)
        print(f"<!-- seed {seed}: {scenario.nodes} nodes -->", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
