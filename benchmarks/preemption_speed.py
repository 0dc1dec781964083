"""`python -m benchmarks.preemption_speed`: one preemption decision at fleet scale (issue 20).

Target: one preemption decision at 10,000 nodes and 500 pending JobSets in at most 2 s. On the
scaling benchmark's TPU fleet (`build_tpu_pool_fleet`: `--held` of the node pools, default 30%,
held by running JobSets of the trace's priorities), it plans the same queue twice in this
process, in this order: `--preemption none` (the baseline) and `--preemption lower-priority`,
with the CP-SAT planner at its default time limit. Per run it records the wall time of `solve`
(the whole planner: finding victims, aggregation, greedy, model, solve, materialize, check), the
phases, each CP-SAT search of the solve phase (stage, status, wall seconds), the status,
accelerator units admitted per priority tier, and the victims (count, chip-hours).

The solver is resolved once before the first timed plan: resolving it imports OR-Tools (0.43-0.45
s on round 36's Intel Xeon, with the scenario's modules already imported), a cost a running
controller pays once at start, not per decision; until round 36 the first mode timed, the
baseline, paid it. `--repeat N` plans each mode N times in turn (baseline, preempting, baseline,
...), so the spread of one machine's timing shows.

Each plan runs with Python's garbage collector paused, as `placer plan` and the controller run it
(`--collector running`: on, as until round 52); the full collection after it is recorded apart
(`collect_s`).

Running JobSets in the scenario are not dated, so they are taken to have started now: an eviction
costs its restart only (`--restart-cost`, 5 minutes of its accelerators). The load average is
recorded before and after: the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import partial
from typing import Any

from benchmarks.reporting.collector import CollectorMode, add_collector_argument, timed_call
from benchmarks.reporting.measure import machine_info
from benchmarks.scaling import HOSTS_PER_POOL
from benchmarks.worlds.scenarios import build_tpu_pool_fleet
from placer.model.options import SolveOptions, TimePolicy
from placer.model.plan import Plan
from placer.model.preemption import PreemptionMode, PreemptionPolicy
from placer.solver.registry import get_solver

__all__ = ["main", "measure"]

NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)
MODES: tuple[PreemptionMode, ...] = ("none", "lower-priority")
STAGE_LOG = "placer.solver.cpsat"
"""The CP-SAT planner's loggers: each search (`StageRunner.run`) logs a debug record naming the
stage, its status and its wall seconds: where a decision's solve phase goes."""


class _Stages(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.found: list[tuple[str, str, float]] = []

    def emit(self, record: logging.LogRecord) -> None:
        args = record.args
        if not (isinstance(record.msg, str) and record.msg.startswith("stage ")):
            return
        if isinstance(args, tuple) and len(args) == 5 and isinstance(args[4], float):
            self.found.append((str(args[0]), str(args[1]), round(args[4], 3)))


@contextmanager
def _stages() -> Iterator[_Stages]:
    """Each CP-SAT search of the plan made inside, as (stage, status, wall seconds)."""
    logger = logging.getLogger(STAGE_LOG)
    handler, level = _Stages(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def _per_tier(plan: Plan) -> dict[int, int]:
    tiers: dict[int, int] = {}
    for o in plan.jobsets:
        tiers.setdefault(o.priority, 0)
        if o.status == "placed":
            tiers[o.priority] += o.accelerators
    return dict(sorted(tiers.items(), reverse=True))


def measure(
    nodes: int,
    pending: int,
    seed: int,
    workers: int,
    held: float = 0.30,
    repeat: int = 1,
    collector: CollectorMode = "paused",
) -> list[dict[str, Any]]:
    """Both modes on one scenario, baseline first, `repeat` times in turn; one record each."""
    pools = max(3, round(nodes / HOSTS_PER_POOL))
    sc = build_tpu_pool_fleet(seed, pools, pending, held=held)
    snapshot, jobsets = sc.snapshot, sc.requests
    solver = get_solver("cpsat")
    rows = []
    for run, mode in ((r, m) for r in range(1, repeat + 1) for m in MODES):
        options = SolveOptions(
            workers=workers,
            seed=seed,
            time=TimePolicy(now=NOW),
            preemption=PreemptionPolicy(mode=mode),
        )
        with _stages() as stages:
            timed = timed_call(partial(solver.solve, snapshot, jobsets, options), collector)
        plan = timed.value
        rows.append(
            {
                "nodes": len(snapshot.nodes),
                "pending": len(jobsets),
                "running": len({k for n in snapshot.nodes for k in n.jobsets}),
                "held": held,
                "mode": mode,
                "run": run,
                "wall_s": round(timed.wall_s, 3),
                "collector": collector,
                "collect_s": None if timed.collect_s is None else round(timed.collect_s, 3),
                "status": plan.solver.status,
                "phases": {k: round(v, 3) for k, v in plan.solver.phases.items()},
                "stages": stages.found,
                "admitted_per_tier": _per_tier(plan),
                "victims": len(plan.preempted),
                "victim_chip_hours": round(sum(p.cost_chip_hours for p in plan.preempted), 1),
                "notes": plan.solver.notes,
            }
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.preemption_speed")
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--pending", type=int, default=500)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=0, help="CP-SAT workers (0: default 8)")
    parser.add_argument(
        "--held",
        type=float,
        default=0.30,
        help="share of the pools held by running JobSets (0.5: JobSets of priority 1000 wait, so "
        "running ones of priority 100 may be evicted; at 0.3 only priority 100 waits)",
    )
    parser.add_argument(
        "--repeat", type=int, default=1, help="plan each mode this many times, in turn"
    )
    add_collector_argument(parser)
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    load_before = os.getloadavg()
    rows = measure(
        args.nodes, args.pending, args.seed, args.workers, args.held, args.repeat, args.collector
    )
    load_after = os.getloadavg()
    info = machine_info()
    print(json.dumps({"machine": info, "load_before": load_before, "load_after": load_after}))
    for row in rows:
        print(json.dumps(row))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
