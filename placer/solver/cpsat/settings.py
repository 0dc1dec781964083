"""Every CP-SAT parameter placer sets, in one function: `make_solver(options, purpose)`.

Purposes differ in what they need from the search:
- `stage`      a planner stage: the parallel portfolio, which proves these models several times
               faster than a single worker, though it may return any of several equally good
               solutions;
- `canonical`  the planner's tie-break: one worker, so the same input gives the same plan;
- `conflict`   explain's assumption cores: one worker, so cores and their minimization repeat;
- `count`      capacity counting: the portfolio with interleaved search (many similar copies);
- `purchase`   cheapest node pools: the portfolio;
- `schedule`   the schedule over time (`placer/solver/time/schedule/solve.py`): the portfolio,
               at most `SCHEDULE_TIME_CAP_S` whatever the time limit (it runs every round, and the
               greedy pass it starts from is a complete answer already), and less once it stalls
               (`solve_until_stalled`, `SCHEDULE_STALL_S`); with `--schedule-search
               repeatable`, interleaved and bounded by deterministic time instead
               (`SCHEDULE_DETERMINISTIC_S`, and `SCHEDULE_CONFLICT_CAP` where that clock
               undercounts), so the same input gives the same schedule.

`SolveOptions.workers == 0` means `DEFAULT_WORKERS`: CP-SAT's full portfolio, even on fewer cores
(its subsolvers then take turns; on 2 cores that still proves the planner's models faster than 2
workers do). Every purpose uses the options' seed.
"""

from __future__ import annotations

import threading
from typing import Literal

from ortools.sat.python import cp_model

from placer.model.options import SolveOptions

__all__ = [
    "CONFLICT_TIME_CAP_S",
    "DEFAULT_WORKERS",
    "SCHEDULE_CONFLICT_CAP",
    "SCHEDULE_DETERMINISTIC_S",
    "SCHEDULE_REPEATABLE_WORKERS",
    "SCHEDULE_STALL_S",
    "SCHEDULE_STARVING_HEAD",
    "SCHEDULE_STARVING_OVERDUE",
    "SCHEDULE_STARVING_SHARE",
    "SCHEDULE_TIME_CAP_S",
    "SolverPurpose",
    "make_solver",
    "solve_schedule",
    "solve_until_stalled",
    "workers_for",
]

SolverPurpose = Literal["stage", "canonical", "conflict", "count", "purchase", "schedule"]

DEFAULT_WORKERS = 8
"""Workers when `SolveOptions.workers` is 0: the size of CP-SAT's default parallel portfolio."""
CONFLICT_TIME_CAP_S = 10.0
"""One conflict check searches at most this long, whatever the time limit: explain asks many."""
SCHEDULE_TIME_CAP_S = 1.0
"""One schedule search takes at most this long: the median round must stay under 2 s (issue 21),
and the search starts from the greedy pass's complete schedule, so it only improves on it."""
SCHEDULE_STALL_S = 0.25
"""The schedule's search also stops once this long passes after its latest better solution
(`solve_until_stalled`): the cap alone spent its whole second on every round it could not
prove, even when nothing improved after the first tenths. Measured at 10,000 nodes and 500
pending JobSets (`benchmarks.controller_bench --schedule cpsat`): the capped search found
solutions at 0.18 s and 0.26 s and its last at 0.99 s; stopped 0.25 s after the latest it took
0.55 s and ended on the same objective (the last solution is reported as the search stops).
Over time (TPU 90%/over-estimates) it cut the median round from 1.06 s to 0.44 s with the
targets' cells inside the run-to-run spread (benchmarks/RESULTS-backfill.md, round 4)."""
SCHEDULE_DETERMINISTIC_S = 0.05
"""The repeatable schedule search's budget, in CP-SAT deterministic seconds (a count of work
done, the same on any machine at any load). Both wall-clock stops make a round's schedule
depend on the machine's load, and over time one round's schedule shapes every later one: five
over-time runs of the same GB200 cell gave a p95 from 19.1 h to 25.9 h. With this budget the
cell repeated to the digit, with rounds of 0.16 s at the median against 0.07-0.10 s
(benchmarks/RESULTS-backfill.md, round 4, run F). The wall-clock cap stays as a safety: a
search that reaches it is no longer repeatable, so it is the time limit, not
`SCHEDULE_TIME_CAP_S`."""
SCHEDULE_CONFLICT_CAP = 10_000
"""Conflicts the repeatable schedule search's `default_lp` subsolver may spend (CP-SAT's
`max_number_of_conflicts`, set for that subsolver only, so the search stays repeatable). On a
few tiny models (4-6 JobSets, 14-19 integers) that subsolver raises the objective's bound a
sliver per conflict and creates a Boolean each time, and CP-SAT's deterministic clock
undercounts that work: 18,431 conflicts took 5.0 s of wall time for 0.05 deterministic seconds,
so rounds reached the benchmark's 5 s wall safety and were no longer repeatable. Every other
search of the targets' cell spent at most 4,549. The same cap on every subsolver moved the
576-host world's figures without a slow search there (another subsolver's cheap conflicts
passed it), so only `default_lp` has it (benchmarks/RESULTS-backfill.md, round 15)."""
SCHEDULE_REPEATABLE_WORKERS = 1
"""Workers of the repeatable search, interleaved in one thread. With two, CP-SAT runs its
subsolvers in batches and waits for a batch's slowest task; on some small schedule models (26-136
variables) one task (`core`, `rnd_var_lns`) took 3.5-5 s of wall time for 0.04-0.10
deterministic seconds, so GB200 rounds reached the benchmark's 5 s wall safety, stopped where
the machine's speed put them, and the cell's figures differed between two machines (p95 21.54 h
and 21.56 h, max 44.70 h and 41.37 h). With one, the same run's longest search took under 1 s
and its longest round 0.92 s against 5.03 s (benchmarks/RESULTS-backfill.md, round 6)."""
SCHEDULE_STARVING_SHARE = 0.25
"""A JobSet that has waited this share of `--max-wait` is starving: the schedule starts it no
later than the greedy pass would, starving JobSets first, oldest first
(`schedule.model.add_starving`; `SCHEDULE_STARVING_HEAD` says how many). Measured in the
over-time benchmark (TPU fleet, 90% load, over-estimates): without it a 4-slice JobSet's
reservation moved between 35 h and 108 h of wait round after round, each move paid for by many
short runs' weighted waits, and it waited 86.8 h where the greedy pass with aging kept the
longest wait to 49.8 h. A quarter (6 h of a day) starts that guarantee before the reservation
has receded far."""
SCHEDULE_STARVING_HEAD: int | None = 1
"""How many starving JobSets, oldest first, get that bound (None: all), as EASY backfill reserves
for the head of the queue only: the others are left to the weighted waits (but for
`SCHEDULE_STARVING_OVERDUE`'s). Chosen on the TPU 90%/over-estimate cell (seed 1, so that cell
is tuned on): bounding every starving JobSet took the schedule back to the greedy pass (mean
bounded slowdown 30.6 against 12.5 unbounded, p50 9.2 h against 3.0 h, max 54.6 h); bounding the
oldest only kept the max at 47.9 h with a slowdown of 23.2 (51.5 h and 12.2 in a second run: the
1 s search is not deterministic), against the greedy pass's 49.8 h and 32.1 (benchmarks/RESULTS-
backfill.md, round 3)."""
SCHEDULE_STARVING_OVERDUE: float | None = 1.0
"""Past the first `SCHEDULE_STARVING_HEAD`, a starving JobSet that has waited this share of
`--max-wait` is bounded too when the domains it may take overlap none of a bounded JobSet's (None:
never). Why: with one bound for the whole queue, a JobSet past its maximum wait in another pool
(TPU slices of another shape) was left to the weighted waits while the bound sat elsewhere; a
bound per disjoint pool cannot push another bounded JobSet back, as it shares no domain with it.
Measured in the over-time benchmark (TPU fleet, whose slice types are disjoint pools, 90% load,
over-estimates): p95 from 1.02x to 0.89x of the greedy pass with aging on the targets' seed and
from 0.99x to 0.93x over six seeds, no maximum raised; GB200 (one shared pool) unchanged. At
half of `--max-wait` the slowdown rose (0.88x against 0.74x): 1.0 bounds only the overdue
(benchmarks/RESULTS-backfill.md, rounds 15 and 16)."""
_SINGLE_WORKER: frozenset[SolverPurpose] = frozenset({"canonical", "conflict"})


def workers_for(options: SolveOptions, purpose: SolverPurpose) -> int:
    if purpose in _SINGLE_WORKER:
        return 1
    return options.workers or DEFAULT_WORKERS


def make_solver(
    options: SolveOptions, purpose: SolverPurpose, time_left_s: float | None = None
) -> cp_model.CpSolver:
    """A solver for one search; `time_left_s` (default: the options' time limit) bounds it."""
    limit_s = options.time_limit_s if time_left_s is None else time_left_s
    if purpose == "conflict":
        limit_s = min(limit_s, CONFLICT_TIME_CAP_S)
    if purpose == "schedule" and not _repeatable(options, purpose):
        limit_s = min(limit_s, SCHEDULE_TIME_CAP_S)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = max(0.0, limit_s)
    solver.parameters.num_workers = workers_for(options, purpose)
    solver.parameters.random_seed = options.seed
    if purpose == "count" or _repeatable(options, purpose):
        solver.parameters.interleave_search = True
    if _repeatable(options, purpose):
        solver.parameters.max_deterministic_time = SCHEDULE_DETERMINISTIC_S
        solver.parameters.num_workers = SCHEDULE_REPEATABLE_WORKERS
        cap = f"max_number_of_conflicts: {SCHEDULE_CONFLICT_CAP}"
        solver.parameters.merge_text_format(f'subsolver_params {{ name: "default_lp" {cap} }}')
    return solver


def _repeatable(options: SolveOptions, purpose: SolverPurpose) -> bool:
    return purpose == "schedule" and options.time.schedule_search == "repeatable"


def solve_schedule(
    solver: cp_model.CpSolver, model: cp_model.CpModel, options: SolveOptions
) -> cp_model.CpSolverStatus:
    """The schedule's search as `options.time.schedule_search` asks: to its deterministic budget
    (repeatable), else until it stalls or reaches its wall-clock cap (fast)."""
    if options.time.schedule_search == "repeatable":
        return solver.solve(model)
    return solve_until_stalled(solver, model)


class _StallStop(cp_model.CpSolverSolutionCallback):
    """Stops `solver`'s search `stall_s` after the latest solution it reported (a better one:
    CP-SAT reports each improvement); before the first, only the time cap applies."""

    def __init__(self, solver: cp_model.CpSolver, stall_s: float) -> None:
        super().__init__()
        self._solver, self._stall_s = solver, stall_s
        self._timer: threading.Timer | None = None
        self._lock = threading.Lock()

    def on_solution_callback(self) -> None:
        self.rearm()

    def rearm(self) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
            self._timer = threading.Timer(self._stall_s, self._solver.stop_search)
            self._timer.daemon = True
            self._timer.start()

    def cancel(self) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
            self._timer = None


def solve_until_stalled(
    solver: cp_model.CpSolver, model: cp_model.CpModel, stall_s: float = SCHEDULE_STALL_S
) -> cp_model.CpSolverStatus:
    """`solver.solve(model)`, also stopped once `stall_s` pass without a better solution (the
    schedule's search: see `SCHEDULE_STALL_S`). A stopped search keeps its best solution."""
    stop = _StallStop(solver, stall_s)
    try:
        return solver.solve(model, stop)
    finally:
        stop.cancel()
