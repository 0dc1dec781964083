"""Reasons at scale: what explaining every JobSet a plan leaves out costs on a large fleet.

`python -m benchmarks.reasons_bench --nodes 10000 --pending 1000` builds the scaling scenario
(`build_tpu_pool_fleet`), plans it with best-fit and largest-first without reasons (the CP-SAT
planner's hint), then times, on that plan: the occupancy (`occupancy_of`), the classifier over every
JobSet left out (`Classifier.diagnose`) and the one-line wording (`jobset_reason`, one `listings`
dict as the planners pass). Each is timed on a fresh context, as the planners meet it (the shape
facts of the greedy passes warm), and once more on the same context. Figures go to
benchmarks/RESULTS-reasons.md by hand, with the machine.

`--shared N` takes the first N JobSets of the queue out of exclusive placement (their pods are
then judged node by node); `--held F` runs that share of the pools; `--reservations all` plans
with time-aware best-fit instead, every reservation held, and classifies beside its plan on the
snapshot it planned on (`timeaware.planned_on`: domains reserved for later starts close nodes).
The digest line hashes every reason text, to compare two trees' reasons to the character.

Each run is timed with Python's garbage collector paused, as placer's commands and controller
run it (`--collector running`: on, as until round 53; paused, the full collection after the run
is timed apart, `benchmarks/reporting/collector.py`).
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import time
from collections.abc import Sequence

from benchmarks.reporting.collector import add_collector_argument, timed_call
from benchmarks.worlds.busy_fleet import NOW, add_fleet_arguments, busy_fleet
from placer.model.options import SolveOptions, TimePolicy
from placer.model.plan import Plan
from placer.model.workload import JobSetRequest
from placer.solver.context import PlacementContext
from placer.solver.greedy.baselines import greedy_plan
from placer.solver.reasons import Classifier, ReasonTally, jobset_reason, occupancy_of
from placer.solver.registry import get_solver
from placer.solver.time.timeaware import planned_on

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.reasons_bench")
    add_fleet_arguments(parser, pending=1_000, shared=0, held=0.30)
    parser.add_argument("--reservations", choices=["none", "all"], default="none")
    parser.add_argument(
        "--solvers",
        default="",
        help="comma-separated solvers to time end to end on the same scenario (reasons included)",
    )
    add_collector_argument(parser)
    args = parser.parse_args(argv)
    snapshot, requests = busy_fleet(args)
    if args.reservations == "all":
        timed = SolveOptions(workers=1, time=TimePolicy(now=NOW, reservations="all"))
        plan = get_solver("best-fit", time_policy=timed.time).solve(snapshot, requests, timed)
        ctx = PlacementContext(planned_on(snapshot, plan, requests, timed), requests, timed)
    else:
        ctx = PlacementContext(snapshot, requests, SolveOptions())
        greedy_plan(ctx, "best-fit", explain=False)
        plan = greedy_plan(ctx, "largest-first", explain=False)
    left_out = [js for js in ctx.jobsets if plan.outcome(js.key).status != "placed"]
    print(f"{len(snapshot.nodes)} nodes, {len(requests)} pending, {len(left_out)} left out")
    for run in ("first", "again"):
        explaining = timed_call(lambda: _explained(ctx, plan, left_out), args.collector)
        (occupied, classified, worded), texts = explaining.value
        mean = sum(map(len, texts)) / max(len(texts), 1)
        digest = hashlib.sha256("\n".join(texts).encode()).hexdigest()[:12]
        collect = explaining.collect_s
        after = "" if collect is None else f", then a collection {collect:.2f} s"
        print(
            f"{run}: occupancy {occupied:.2f} s, classify {classified:.2f} s, "
            f"word {worded:.2f} s, total {explaining.wall_s:.2f} s{after} "
            f"(mean reason {mean:.0f} characters, digest {digest})"
        )
    options = SolveOptions(workers=2, seed=args.seed, time_limit_s=10)
    for solver in filter(None, args.solvers.split(",")):
        solve = functools.partial(get_solver(solver).solve, snapshot, requests, options)
        solving = timed_call(solve, args.collector)
        solved = solving.value
        phases = ", ".join(f"{k} {v:.2f}" for k, v in solved.solver.phases.items())
        out = sum(1 for o in solved.jobsets if o.status != "placed")
        print(f"{solver}: {out} left out, wall {solving.wall_s:.2f} s ({phases})")


def _explained(
    ctx: PlacementContext, plan: Plan, left_out: Sequence[JobSetRequest]
) -> tuple[tuple[float, float, float], list[str]]:
    """The reason of every JobSet `left_out` of `plan`, and how long the occupancy, the
    classifier and the wording took."""
    started = time.perf_counter()
    occupancy = occupancy_of(ctx, plan.jobsets)
    counted = time.perf_counter()
    classifier = Classifier(ctx, occupancy)
    diagnoses = [classifier.diagnose(js) for js in left_out]
    classified = time.perf_counter()
    listings: dict[tuple[ReasonTally, ...], str] = {}
    texts = [jobset_reason(d, listings=listings) for d in diagnoses]
    worded = time.perf_counter()
    return (counted - started, classified - counted, worded - classified), texts


if __name__ == "__main__":
    main()
