"""Kueue TAS packing benchmark: non-exclusive JobSets with rack/block topology on H100/H200.

    python -m benchmarks.kueue_tas [--seeds 0 1 2] [--size 1.0] [--time-limit 30] [--workers 0]
                                   [--floor]

For each seed, the `kueue_shared` scenario (benchmarks/worlds/kueue_shared.py) is planned by
`best-fit` (Kueue TAS BestFit, as Kueue would place each JobSet in queue order) and by `cpsat`; each
plan is checked by the independent checker. Printed per seed and solver, as a Markdown table: GPUs
admitted, JobSets placed, and per placed JobSet the average racks (sub-blocks), blocks and hosts its
pods span (racks and hosts also over only the JobSets both solvers placed, a like-for-like figure).
With `--floor`, per plan also the fewest racks per placed JobSet that any plan admitting as many
GPUs per priority tier can span, proven with CP-SAT on the planner's model (`racks_floor`): what
packing alone can reach at that admission.
Figures go to benchmarks/RESULTS.md with the command; timings on the shared machine are noisy.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence

from benchmarks.worlds.kueue_shared import kueue_shared
from benchmarks.worlds.records import BLOCK, SUBBLOCK
from placer.model.cluster import ClusterSnapshot
from placer.model.options import SolveOptions
from placer.model.plan import Plan
from placer.model.workload import JobSetRequest
from placer.solver.check.checker import check
from placer.solver.context import PlacementContext
from placer.solver.cpsat import aggregate, build_model, make_solver
from placer.solver.registry import get_solver

__all__ = ["main", "racks_floor", "spans"]

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


def racks_floor(
    snapshot: ClusterSnapshot, jobsets: Sequence[JobSetRequest], options: SolveOptions, plan: Plan
) -> float | None:
    """The fewest racks per placed JobSet of any plan that admits as many accelerator units per
    priority tier as `plan`, proven on the planner's own model (its shared-pod room is a
    relaxation of the nodes, so no real plan does better); None when a step is not proven.

    Racks as the packing stage counts them: each Kueue replicated job's rack-level domains, one
    for a rack-required one (the benchmark's JobSets have one replicated job each). Dinkelbach's
    iteration: from the plan's own ratio p/q, minimize q * racks - p * placed; a negative optimum
    is a plan with a lower ratio, which becomes the next p/q; zero proves p/q the floor.
    """
    ctx = PlacementContext(snapshot, jobsets, options)
    problem = aggregate(ctx)
    built = build_model(problem)
    model, v = built.model, built.variables
    units: dict[int, int] = {}
    for o in plan.jobsets:
        if o.status == "placed":
            units[o.priority] = units.get(o.priority, 0) + o.accelerators
    for tier in {js.priority for js in ctx.jobsets}:
        admitted = [
            js.accelerator_units * v.admit[js.key] for js in ctx.jobsets if js.priority == tier
        ]
        model.add(sum(admitted) >= units.get(tier, 0))
    racks = [x for (_, level, _), x in v.used.items() if level == SUBBLOCK]
    racks += [
        v.admit[jc.jobset.key] for jc in problem.shared if jc.rjob.required_topology == SUBBLOCK
    ]
    placed = list(v.admit.values())
    p = round(spans(plan, snapshot)[0] * sum(o.status == "placed" for o in plan.jobsets))
    q = sum(o.status == "placed" for o in plan.jobsets)
    while q:
        model.minimize(q * sum(racks) - p * sum(placed))
        solver = make_solver(options, "stage")
        if solver.status_name(solver.solve(model)) != "OPTIMAL":
            return None
        if round(solver.objective_value) >= 0:
            return p / q
        p = sum(solver.value(x) for x in racks)
        q = sum(solver.value(x) for x in placed)
    return None


def _row(
    seed: int,
    solver: str,
    plan: Plan,
    snapshot: ClusterSnapshot,
    jobsets: Sequence[JobSetRequest],
    both: set[str],
    floor: float | None,
) -> str:
    racks, blocks, hosts = spans(plan, snapshot)
    common_racks, _, common_hosts = spans(plan, snapshot, both)
    placed = sum(o.status == "placed" for o in plan.jobsets)
    gpus = sum(o.accelerators for o in plan.jobsets if o.status == "placed")
    demand = sum(js.accelerator_units for js in jobsets)
    return (
        f"| {seed} | {solver} | {plan.solver.status} | {gpus} / {demand} | {placed} / "
        f"{len(jobsets)} | {racks:.2f} | {common_racks:.2f} ({len(both)}) | {blocks:.2f} | "
        f"{hosts:.2f} | {common_hosts:.2f} | {'' if floor is None else f'{floor:.2f}'} | "
        f"{plan.solver.wall_seconds:.1f} |"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.kueue_tas")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--size", type=float, default=1.0)
    parser.add_argument("--time-limit", type=float, default=30.0)
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument(
        "--floor",
        action="store_true",
        help="also prove the fewest racks per JobSet of any plan admitting as much per tier",
    )
    args = parser.parse_args(argv)
    print(
        "| seed | solver | status | GPUs admitted | JobSets placed | racks / JobSet | "
        "racks / JobSet placed by both (how many) | blocks / JobSet | hosts / JobSet | "
        "hosts / JobSet placed by both | fewest racks / JobSet at this admission | wall s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    # resolved before any timed plan: cpsat's first would otherwise pay OR-Tools' import (0.4 s)
    solvers = {name: get_solver(name) for name in SOLVERS}
    for seed in args.seeds:
        scenario = kueue_shared(seed, args.size)
        snapshot, jobsets = scenario.snapshot, scenario.requests
        options = SolveOptions(time_limit_s=args.time_limit, workers=args.workers, seed=seed)
        plans: dict[str, Plan] = {}
        for solver in SOLVERS:
            started = time.perf_counter()
            plan = solvers[solver].solve(snapshot, jobsets, options)
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
            floor = racks_floor(snapshot, jobsets, options, plan) if args.floor else None
            print(_row(seed, solver, plan, snapshot, jobsets, both, floor), flush=True)
        print(f"<!-- seed {seed}: {scenario.nodes} nodes -->", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
