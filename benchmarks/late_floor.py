"""Floors on any policy's p95 wait: `python -m benchmarks.late_floor [--time-limit S]`.

Issue 21 asks the CP-SAT schedule for a p95 delay of at most 0.85x `easy-aging`'s. `wait_floor`
showed that the TPU max target sits below what any non-preemptive policy can reach; this asks the
same of the p95 target. A p95 (`backfill.percentile`, linearly interpolated) is at least the
wait at index floor(0.95 (N - 1)) of the waits sorted from the shortest, so a p95 of at most T
leaves at most N - 1 - floor(0.95 (N - 1)) JobSets waiting longer than T: 15 of 300
(`allowed_late`).

The model is `wait_floor`'s relaxation (each JobSet holds k whole domains of its pool for its
first run, any minute, exact run times, the pool to itself), with one change: each JobSet is
either on time, starting within T of its arrival, or late and left out. Leaving a JobSet out only
frees capacity, so the on-time JobSets of any real schedule are a schedule of the model. CP-SAT
is asked whether the model has a schedule with at most the allowance late (`admits`): TPU's
slice pools each with its own cumulative, GB200's racks with `wait_floor`'s nested cumulatives
(`parts`), in one model, as the allowance is shared by every pool.

If the answer at T is no, no non-preemptive policy has a p95 of T or less.

With `--longest-wait`, late JobSets are not left out: every JobSet starts within that many hours
of arriving, so a "no" says that no non-preemptive policy has a p95 of T or less *and* a longest
wait within that bound (`baseline`: `easy-aging`'s longest wait, so no worse than the greedy pass;
`target`: issue 21's max target, 0.85x of it). The two targets are asked of one policy, and
each has its own floor; this asks whether they can be met at once. The floor reported is
the largest T so proven (the target asked first, then by halving the gap); the ceiling, the least T
at which the relaxation was shown to admit a schedule with few enough late JobSets. That schedule
knows every arrival and run time in advance, so a ceiling below the target says only that the
target is not shown out of reach, not that a policy can meet it.

Time is in whole minutes (`pool_relaxation.in_minutes`): a real schedule whose waits are at most T
hours maps onto the model with waits of at most floor(60 T) + 1 minutes (`cap_minutes`).
"""

from __future__ import annotations

import argparse
import math
import shlex
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

from ortools.sat.python import cp_model

from benchmarks.pool_relaxation import (
    Groups,
    PoolJob,
    combined,
    greedy_schedule,
    parts,
)
from benchmarks.reporting.measure import machine_info
from benchmarks.wait_floor import add_world_arguments, publish
from benchmarks.worlds.simworld import SimConfig, SimWorld, build_world

__all__ = [
    "BASELINE_MAX_H",
    "TARGET_MAX_H",
    "TARGET_P95_H",
    "P95Floor",
    "admits",
    "allowed_late",
    "cap_minutes",
    "late_waits",
    "longest_for",
    "main",
    "p95_floor",
]

MINUTE = 60.0
TARGET_P95_H = {"gb200": 0.85 * 25.16, "tpu": 0.85 * 34.10}
"""Issue 21's p95 targets: 0.85x `easy-aging`'s p95 delay at 90% load, over-estimates, seed 1
(RESULTS-backfill.md, round 11's matrix)."""
BASELINE_MAX_H = {"gb200": 41.28, "tpu": 49.75}
"""`easy-aging`'s longest wait in the same cell (RESULTS-backfill.md, round 14's matrix)."""
TARGET_MAX_H = {fleet: 0.85 * h for fleet, h in BASELINE_MAX_H.items()}
"""Issue 21's max targets: 0.85x `easy-aging`'s longest wait."""


def allowed_late(n: int, percentile: float = 95.0) -> int:
    """How many of `n` waits may exceed T when their `percentile` (linearly interpolated) is at
    most T: those ranked above floor(p (n - 1)) from the shortest."""
    return n - 1 - math.floor((n - 1) * percentile / 100) if n else 0


def cap_minutes(t_h: float) -> int:
    """The model's longest on-time wait for a real one of `t_h` hours: arrivals and starts
    rounded down to the minute add less than a minute (see `wait_floor.Search.first`)."""
    return math.floor(t_h * 60) + 1


def late_waits(jobs: Sequence[PoolJob], starts: Sequence[int], cap: int) -> int:
    """How many of `starts` begin more than `cap` after their JobSet's arrival."""
    return sum(1 for s, j in zip(starts, jobs, strict=True) if s - int(j.arrival) > cap)


def admits(
    jobs: Sequence[PoolJob],
    groups: Groups,
    cap: int,
    allowed: int,
    *,
    longest: int | None = None,
    time_limit_s: float = 60.0,
    seed: int = 1,
    workers: int = 2,
) -> str:
    """Whether the model has a schedule with at most `allowed` JobSets starting more than `cap`
    after arrival: "yes", "no" (proven) or "unknown" (time ran out).

    Each JobSet is an optional interval starting within `cap` of its arrival, on every cumulative
    of `groups` that counts it, and at least all but `allowed` are present. A yes/no question,
    not "most on time": as `pool_relaxation.integral_floor` found for the longest wait, CP-SAT
    refutes a bound it is asked about far sooner than its objective bound reaches it. First-come-
    first-served list scheduling (`pool_relaxation.greedy_schedule`), late JobSets left out, is
    the hint and answers yes without a search when it has few enough late.

    With `longest` (minutes), no JobSet is left out: every one starts within `longest` of its
    arrival, and only those marked on time within `cap`, so the question is a p95 and a longest
    wait together."""
    greedy = greedy_schedule(jobs, groups)
    if late_waits(jobs, greedy, cap) <= allowed and (
        longest is None or late_waits(jobs, greedy, longest) == 0
    ):
        return "yes"
    model = cp_model.CpModel()
    present: list[cp_model.IntVar] = []
    intervals: dict[int, cp_model.IntervalVar] = {}
    for i, j in enumerate(jobs):
        if j.duration <= 0:
            continue  # holds nothing: on time in any schedule
        a = int(j.arrival)
        on = model.new_bool_var(f"on{i}")
        on_time = greedy[i] - a <= cap
        model.add_hint(on, on_time)
        present.append(on)
        if longest is None:  # a late JobSet is left out, freeing its domains
            start = model.new_int_var(a, a + cap, f"s{i}")
            intervals[i] = model.new_optional_fixed_size_interval_var(
                start, int(j.duration), on, f"i{i}"
            )
            model.add_hint(start, greedy[i] if on_time else a)
            continue
        start = model.new_int_var(a, a + max(cap, longest), f"s{i}")
        intervals[i] = model.new_fixed_size_interval_var(start, int(j.duration), f"i{i}")
        model.add(start <= a + cap).only_enforce_if(on)
        model.add_hint(start, min(greedy[i], a + longest))
    for idx, domains in groups:
        held = [i for i in idx if i in intervals]
        model.add_cumulative([intervals[i] for i in held], [jobs[i].width for i in held], domains)
    model.add(sum(present) >= len(present) - allowed)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = max(0.1, time_limit_s)
    solver.parameters.num_workers = workers
    solver.parameters.random_seed = seed
    status = solver.solve(model)
    if status == cp_model.INFEASIBLE:
        return "no"
    return "yes" if status in (cp_model.OPTIMAL, cp_model.FEASIBLE) else "unknown"


@dataclass(frozen=True)
class P95Floor:
    """What the model says of a p95 wait in one world."""

    world: str
    jobsets: int
    allowed: int
    target_h: float | None
    at_target: str
    """The model's answer at the target: "no" proves it out of reach ("-": not asked)."""
    floor_h: float
    """No non-preemptive policy has a p95 below this (with `longest_h`: and waits within it)."""
    ceiling_h: float | None
    """The relaxation admits a p95 of this (with perfect knowledge): the floor is at most it.
    None when no p95 was shown admissible (with `longest_h`, list scheduling may wait longer)."""
    questions: int
    wall_s: float
    longest_h: float | None = None
    """Every JobSet starts within this many hours; None: late JobSets are left out."""


def p95_floor(
    world: SimWorld,
    *,
    target_h: float | None = None,
    longest_h: float | None = None,
    time_limit_s: float = 60.0,
    budget_s: float = 600.0,
    seed: int = 1,
) -> P95Floor:
    """The largest p95 proven out of reach, by yes/no questions on the cap (minutes): the
    target's first, then halving the gap between the floor and the least cap shown admissible.
    `time_limit_s` bounds each question; one answered neither way lowers the highest cap still
    worth asking, as in `pool_relaxation.integral_floor`.

    With `longest_h`, caps are asked up to the longest wait's own (a p95 cap beyond it asks
    nothing more), and list scheduling shows a cap admissible only if it also keeps every wait
    within `longest_h`."""
    began = time.perf_counter()
    jobs, groups = combined(parts(world))
    allowed = allowed_late(len(jobs))
    longest = cap_minutes(longest_h) if longest_h is not None else None
    greedy = greedy_schedule(jobs, groups)
    waits = sorted((s - int(j.arrival) for s, j in zip(greedy, jobs, strict=True)), reverse=True)
    shown: int | None = waits[allowed] if allowed < len(waits) else 0  # list scheduling meets it
    if longest is not None and waits and waits[0] > longest:
        shown = None
    top = longest if longest is not None else (shown if shown is not None else 0)
    proven = -1  # the largest cap shown to leave too many late
    ceiling = top  # the highest cap still worth asking
    probe = cap_minutes(target_h) if target_h is not None else None
    at_target = "yes" if probe is not None and shown is not None and probe >= shown else "-"

    def highest() -> int:
        return min(ceiling, top if shown is None else shown - 1)

    questions = 0
    while proven + 1 <= highest():
        if questions and time.perf_counter() - began > budget_s:
            break
        asked_target = probe is not None and probe <= highest()
        cap = probe if asked_target and probe is not None else (proven + 1 + highest()) // 2
        probe = None
        answer = admits(
            jobs,
            groups,
            cap,
            allowed,
            longest=longest,
            time_limit_s=time_limit_s,
            seed=seed,
        )
        questions += 1
        if asked_target:
            at_target = answer
        if answer == "no":
            proven = max(proven, cap)
        elif answer == "yes":
            shown = cap if shown is None else min(shown, cap)
        else:
            ceiling = cap - 1
    return P95Floor(
        world.name,
        len(jobs),
        allowed,
        target_h,
        at_target,
        max(0, proven) / 60,
        None if shown is None else shown / 60,
        questions,
        time.perf_counter() - began,
        longest_h,
    )


def _hours(h: float | None) -> str:
    return "-" if h is None else f"{h:.2f}"


def table(rows: Sequence[P95Floor]) -> list[str]:
    lines = [
        "| world | JobSets | late allowed | every wait within h | target p95 h "
        "| admitted at the target | p95 floor h | relaxation admits h | questions | solve s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r.world} | {r.jobsets} | {r.allowed} | {_hours(r.longest_h)} "
            f"| {_hours(r.target_h)} | {r.at_target} | {r.floor_h:.2f} "
            f"| {_hours(r.ceiling_h)} | {r.questions} | {r.wall_s:.0f} |"
        )
    return lines


def verdict(fleet: str, row: P95Floor) -> str:
    within = "" if row.longest_h is None else f" with every wait within {row.longest_h:.2f} h"
    if row.target_h is None:
        return f"{fleet}: p95 floor{within} {row.floor_h:.2f} h"
    if row.at_target == "no" or row.floor_h >= row.target_h:
        word = "out of reach for every non-preemptive policy"
    elif row.at_target == "yes" or (row.ceiling_h is not None and row.ceiling_h <= row.target_h):
        # a yes at the target's own cap (`cap_minutes`, a minute above it) meets the target
        word = "not shown out of reach: the relaxation, knowing the future, meets it"
    else:
        word = "undecided in the time given"
    return (
        f"{fleet}: target {row.target_h:.2f} h{within}; floor {row.floor_h:.2f} h, relaxation "
        f"{_hours(row.ceiling_h)} h: {word}"
    )


def longest_for(fleet: str, choice: str | None) -> float | None:
    """`--longest-wait`'s hours for one fleet: `baseline` (`easy-aging`'s longest wait),
    `target` (issue 21's max target) or a number of hours; None leaves late JobSets out."""
    if choice is None:
        return None
    if choice == "baseline":
        return BASELINE_MAX_H.get(fleet)
    if choice == "target":
        return TARGET_MAX_H.get(fleet)
    return float(choice)


def _longest_choice(text: str) -> str:
    if text in ("baseline", "target"):
        return text
    try:
        hours = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not baseline, target or hours: {text!r}") from None
    if not math.isfinite(hours) or hours <= 0:
        raise argparse.ArgumentTypeError(f"hours must be finite and positive: {text!r}")
    return text


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.late_floor", description=__doc__)
    add_world_arguments(parser)
    parser.add_argument(
        "--time-limit", type=float, default=60.0, help="CP-SAT seconds per question"
    )
    parser.add_argument(
        "--budget", type=float, default=600.0, help="seconds per fleet before no new question"
    )
    parser.add_argument(
        "--longest-wait",
        type=_longest_choice,
        help="every JobSet starts within this: baseline (easy-aging's longest wait), target "
        "(the max target) or hours; default: late JobSets are left out",
    )
    args = parser.parse_args(argv)
    fleets = [f.strip() for f in args.fleets.split(",") if f.strip()]
    cfg = replace(SimConfig(), jobsets=args.jobsets, load=args.load)
    command = "python -m benchmarks.late_floor " + shlex.join(
        sys.argv[1:] if argv is None else argv
    )
    rows, tail = [], []
    for fleet in fleets:
        world = build_world(fleet, args.seed, cfg)
        row = p95_floor(
            world,
            target_h=TARGET_P95_H.get(fleet),
            longest_h=longest_for(fleet, args.longest_wait),
            time_limit_s=args.time_limit,
            budget_s=args.budget,
            seed=args.seed,
        )
        rows.append(row)
        tail.append(f"- {verdict(fleet, row)}")
    lines = [f"Command: `{command}`", "", f"Machine: {machine_info()}", ""]
    lines += [*table(rows), "", *tail, ""]
    publish("\n".join(lines), args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
