"""Over time with reservations: `python -m benchmarks.backfill --out DIR [--quick]`.

Compares, on the same arrivals, the queueing policies of issue 11 (`policies.POLICIES`): best-fit
BestEffortFIFO, best-fit StrictFIFO, EASY and conservative backfill (greedy) and cpsat with
reservations none/head/all, at several offered loads and under four kinds of runtime estimate:

- `exact`: every JobSet announces its real run time;
- `over`: user-style over-estimates, real x U[1, 5] (what Slurm users type as time limits);
- `noisy`: real x lognormal(0, 1), under- and over-estimates alike;
- `none`: nothing announced, the planner's default duration only.

Reported per run: p50/p95/max queueing delay, mean bounded slowdown (10 min floor), utilization
over the arrival window, JobSets waiting past 24 h, the p95 delay of the widest and narrowest
quarters (by accelerators held), and wall time per round. Writes `backfill.md`, `backfill.json`
and plots (delay CDF per policy, utilization over time) into `--out` (a scratch directory by
default; `--out benchmarks/` to update the committed results). With `--seeds 1,2,...` the run
repeats for each arrival seed into `OUT/seed-N/`, and `OUT/seeds.md` sets the CP-SAT schedule
against the baseline seed by seed (`seed_spread`): one seed's p95 and max are chaotic.
"""

from __future__ import annotations

import argparse
import random
import shlex
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal, get_args

from benchmarks.backfill_report import write_report, write_spread
from benchmarks.reporting.progress import Progress
from benchmarks.reporting.schedule_targets import SCHEDULE
from benchmarks.reporting.stats import percentile
from benchmarks.simulate.overtime import simulate
from benchmarks.simulate.policies import CPSAT, GREEDY
from benchmarks.simulate.results import SimResult
from benchmarks.worlds.simworld import (
    HOUR,
    SimConfig,
    SimWorld,
    build_world,
    one_priority,
    shape_pools,
)
from placer.model.options import ScheduleSearch, SolveOptions, TimePolicy

__all__ = ["ESTIMATES", "Matrix", "estimates_for", "main", "run_matrix", "summarize"]

Priorities = Literal["drawn", "one"]
"""`drawn`: the queue's three priority classes; `one`: every JobSet in one
(`simworld.one_priority`), to see what the tiers cost every policy."""

ESTIMATES = ("exact", "over", "noisy", "none")
SLOWDOWN_FLOOR_S = 600.0
LONG_WAIT_S = 24 * HOUR
BASELINE = "easy-aging"
"""Issue 21's greedy policy with the same rules as `cpsat-schedule`, named before any run."""


def estimates_for(world: SimWorld, mode: str, seed: int) -> dict[str, float | None]:
    """The run time each JobSet announces under `mode`; seeded, so every policy sees the same."""
    rng = random.Random(f"estimates:{world.name}:{mode}:{seed}")
    out: dict[str, float | None] = {}
    for js in world.queue:
        if mode == "exact":
            out[js.key] = js.duration_s
        elif mode == "over":
            out[js.key] = js.duration_s * rng.uniform(1, 5)
        elif mode == "noisy":
            out[js.key] = js.duration_s * rng.lognormvariate(0, 1)
        elif mode == "none":
            out[js.key] = None
        else:
            raise ValueError(f"unknown estimate mode {mode!r}")
    return out


def summarize(world: SimWorld, result: SimResult, estimate: str, load: float) -> dict[str, Any]:
    """The issue's measures from one simulation (delays are in `world.queue` order)."""
    delays = result.delays_s
    runs = [js.duration_s for js in world.queue]
    widths = [js.held_units for js in world.queue]
    order = sorted(range(len(widths)), key=lambda i: (widths[i], i))
    quarter = max(1, len(order) // 4)
    narrow = [delays[i] for i in order[:quarter]]
    wide = [delays[i] for i in order[-quarter:]]
    slowdowns = [(d + r) / max(r, SLOWDOWN_FLOOR_S) for d, r in zip(delays, runs, strict=True)]
    walls = result.round_wall_s
    pools = shape_pools(world)
    backlog = [p.fluid_backlog_s for p in pools.values() if p.capacity > 0]
    return {
        "world": world.name,
        "policy": result.policy,
        "estimate": estimate,
        "load": load,
        "p50_delay_h": percentile(delays, 50) / HOUR,
        "p95_delay_h": percentile(delays, 95) / HOUR,
        "max_delay_h": max(delays, default=0.0) / HOUR,
        "bounded_slowdown": statistics.fmean(slowdowns) if slowdowns else 0.0,
        "window_utilization": result.window_utilization,
        "waited_over_24h": sum(1 for d in delays if d > LONG_WAIT_S),
        "never_started": result.never_started,
        "p95_wide_h": percentile(wide, 95) / HOUR,
        "p95_narrow_h": percentile(narrow, 95) / HOUR,
        "round_wall_median_s": statistics.median(walls) if walls else 0.0,
        "round_wall_max_s": max(walls, default=0.0),
        "rounds": result.rounds,
        "checked_plans": result.checked_plans,
        "fluid_backlog_h": max(backlog, default=0.0) / HOUR,
        "shapes": {
            label: {
                "domains": p.domains,
                "work_share": p.work_share,
                "fluid_backlog_h": p.fluid_backlog_s / HOUR,
            }
            for label, p in pools.items()
        },
    }


@dataclass(frozen=True)
class Matrix:
    fleets: tuple[str, ...] = ("tpu", "gb200")
    loads: tuple[float, ...] = (0.7, 0.9, 1.1)
    estimates: tuple[str, ...] = ESTIMATES
    full_matrix_load: float = 0.9
    """Every estimate kind runs at this load; the other loads run with `over` only."""
    policies: tuple[str, ...] = (*GREEDY, *CPSAT, SCHEDULE)
    jobsets: int = 300
    time_limit_s: float = 5.0
    size: float = 1.0
    """Fleet scale (`SimConfig.size`): 1 is 152 TPU / 288 GB200 hosts, 2 doubles them."""
    schedule_search: ScheduleSearch = "repeatable"
    """The CP-SAT schedule's search (`TimePolicy.schedule_search`): repeatable by default, so a
    cell's figures repeat from run to run and two commits' runs can be compared; `fast` is what
    the controller runs, bounded by wall time."""
    priorities: Priorities = "drawn"


QUICK = Matrix(
    fleets=("tpu",), loads=(0.9,), estimates=("over", "none"), jobsets=60, time_limit_s=2.0
)


def cells(matrix: Matrix) -> list[tuple[str, float, str]]:
    """(fleet, load, estimate) runs, most telling first: the targets' cell (full load, over-
    estimates) on every fleet, then no estimates, then the other estimates, then other loads."""
    order = ["over", "none", *(m for m in matrix.estimates if m not in ("over", "none"))]
    first = [
        (fleet, matrix.full_matrix_load, mode)
        for mode in order
        if mode in matrix.estimates
        for fleet in matrix.fleets
    ]
    rest = [
        (fleet, load, "over")
        for load in matrix.loads
        if load != matrix.full_matrix_load
        for fleet in matrix.fleets
    ]
    return first + rest


def run_matrix(
    matrix: Matrix,
    seed: int,
    progress: Progress | None = None,
    on_cell: Callable[[list[dict[str, Any]], list[tuple[str, SimResult]]], None] | None = None,
) -> tuple[list[dict[str, Any]], list[tuple[str, SimResult]]]:
    """Every cell; `on_cell` sees the results so far after each (a long run reports as it goes)."""
    rows: list[dict[str, Any]] = []
    kept: list[tuple[str, SimResult]] = []
    options = SolveOptions(
        time_limit_s=matrix.time_limit_s,
        workers=2,
        seed=seed,
        time=TimePolicy(schedule_search=matrix.schedule_search),
    )
    worlds: dict[tuple[str, float], tuple[SimWorld, SimConfig]] = {}
    for fleet, load, mode in cells(matrix):
        if (fleet, load) not in worlds:
            cfg = replace(SimConfig(), jobsets=matrix.jobsets, load=load, size=matrix.size)
            world = build_world(fleet, seed, cfg)
            if matrix.priorities == "one":
                world = one_priority(world)
            worlds[(fleet, load)] = (world, cfg)
        world, cfg = worlds[(fleet, load)]
        announced = estimates_for(world, mode, seed)
        results = simulate(
            world, matrix.policies, options, cfg, progress=progress, estimates=announced
        )
        for r in results:
            rows.append(summarize(world, r, mode, load))
            if load == matrix.full_matrix_load and mode == "over":
                kept.append((world.name, r))
        if on_cell is not None:
            on_cell(rows, kept)
    return rows, kept


def _names(allowed: Sequence[str]) -> Callable[[str], tuple[str, ...]]:
    def parse(text: str) -> tuple[str, ...]:
        names = tuple(n.strip() for n in text.split(",") if n.strip())
        unknown = [n for n in names if n not in allowed]
        if unknown or not names:
            raise argparse.ArgumentTypeError(
                f"unknown {', '.join(unknown) or 'empty list'}; choose from {', '.join(allowed)}"
            )
        return names

    return parse


def _loads(text: str) -> tuple[float, ...]:
    try:
        loads = tuple(float(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of numbers: {text!r}") from None
    if not loads or any(not 0 < x <= 2 for x in loads):
        raise argparse.ArgumentTypeError(f"loads must be in (0, 2]: {text!r}")
    return loads


def _seeds(text: str) -> tuple[int, ...]:
    try:
        seeds = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of whole numbers: {text!r}") from None
    if any(x < 0 for x in seeds) or len(set(seeds)) != len(seeds):
        raise argparse.ArgumentTypeError(f"seeds must be distinct and not negative: {text!r}")
    return seeds


def _run_seed(
    matrix: Matrix, seed: int, out: Path, command: str, progress: Progress, baseline: str
) -> list[dict[str, Any]]:
    """One seed's matrix, its report written into `out` after every cell and at the end."""
    started = time.perf_counter()
    rows, kept = run_matrix(
        matrix,
        seed,
        progress,
        on_cell=lambda r, k: write_report(out, command, started, r, k, False, baseline),
    )
    write_report(out, command, started, rows, kept, True, baseline)
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.backfill", description=__doc__)
    parser.add_argument("--out", type=Path, help="output directory (default: a scratch directory)")
    parser.add_argument("--quick", action="store_true", help="one fleet, one load, 60 JobSets")
    seeds = parser.add_mutually_exclusive_group()
    seeds.add_argument("--seed", type=int, default=1)
    seeds.add_argument(
        "--seeds",
        type=_seeds,
        help="comma-separated arrival seeds, each run in turn into OUT/seed-N/, with seeds.md "
        "comparing the schedule and the baseline across them",
    )
    parser.add_argument("--size", type=float, help="fleet scale (default 1: 152 TPU / 288 GB200)")
    parser.add_argument("--fleets", type=_names(("tpu", "gb200")), help="comma-separated subset")
    parser.add_argument("--loads", type=_loads, help="comma-separated offered loads, e.g. 0.9")
    parser.add_argument("--estimates", type=_names(ESTIMATES), help="comma-separated subset")
    parser.add_argument(
        "--policies", type=_names((*GREEDY, *CPSAT, SCHEDULE)), help="comma-separated subset"
    )
    parser.add_argument(
        "--baseline",
        choices=GREEDY,
        default=BASELINE,
        help=f"the greedy policy {SCHEDULE} is judged against, named before the run (default "
        f"{BASELINE}: the same aging and maximum wait)",
    )
    parser.add_argument(
        "--schedule-search",
        choices=("fast", "repeatable"),
        help="the CP-SAT schedule's search (default repeatable: the same figures every run)",
    )
    parser.add_argument(
        "--priorities",
        choices=get_args(Priorities),
        help="drawn (default): the queue's priority classes; one: every JobSet in one class",
    )
    args = parser.parse_args(argv)
    out: Path = args.out or Path(tempfile.mkdtemp(prefix="placer-backfill-"))
    out.mkdir(parents=True, exist_ok=True)
    matrix = QUICK if args.quick else Matrix()
    subset = {
        "size": args.size,
        "fleets": args.fleets,
        "loads": args.loads,
        "estimates": args.estimates,
        "policies": args.policies,
        "schedule_search": args.schedule_search,
        "priorities": args.priorities,
    }
    matrix = replace(matrix, **{k: v for k, v in subset.items() if v is not None})
    if args.loads is not None and matrix.full_matrix_load not in args.loads:
        matrix = replace(matrix, full_matrix_load=args.loads[0])
    started = time.perf_counter()
    command = "python -m benchmarks.backfill " + shlex.join(sys.argv[1:] if argv is None else argv)
    runs = len(args.seeds or (args.seed,)) * len(cells(matrix)) * len(matrix.policies)
    progress = Progress(runs, label="backfill")
    if args.seeds is None:
        _run_seed(matrix, args.seed, out, command, progress, args.baseline)
        print(out / "backfill.md")
        return 0
    by_seed: dict[int, list[dict[str, Any]]] = {}
    for seed in args.seeds:
        here = out / f"seed-{seed}"
        here.mkdir(exist_ok=True)
        by_seed[seed] = _run_seed(matrix, seed, here, command, progress, args.baseline)
        done = seed == args.seeds[-1]
        write_spread(out, command, started, by_seed, done, args.baseline)
    print(out / "seeds.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
