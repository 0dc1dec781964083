"""Floors on any policy's longest wait: `python -m benchmarks.wait_floor [--time-limit S]`.

Issue 21 asks the over-time benchmark's CP-SAT schedule for a max delay of at most 0.85x the
greedy `easy-aging` policy's. Whether that is reachable at all is a property of the arrivals, not
of a policy. For each world (`simworld.build_world`, both fleets, 300 JobSets, 90% load) and each
shape pool (`simworld.shape_pools`: the domains a child shape fits on the empty fleet), this
computes two floors on the longest wait (first start - arrival) of every non-preemptive policy:

- the divisible floor: the least w such that, for every window [s, t], the work of the JobSets
  arriving at or after s that must have run before t (each starts by its arrival + w) fits the
  pool's capacity x (t - s). Capacity is treated as divisible, so it is loose;
- the integral floor: a CP-SAT model in which each JobSet holds k whole domains (its child Jobs)
  for its run, starts at or after its arrival, a cumulative over the pool's D domains, and the
  longest wait W is as small as it can be (found by yes/no questions on W, see
  `integral_floor`). The largest W proven impossible is a floor even when time runs out; the
  best schedule found is an upper bound for this relaxation only.

Why these are floors for every policy of `benchmarks.simulate.overtime`: a real run starts each
JobSet on particular domains at a round's boundary from estimates, shares those domains with other
shapes (one 18-host GB200 rack also serves 16-host child Jobs), and loses hosts to repairs; the
model has none of this (any domain of the pool, any minute, exact runtimes, the pool to itself), so
any real schedule, restricted to the pool, is a schedule of the model with the same waits. One
subtlety: a JobSet that fails (`SimWorld.failures`) gives back its domains at the failure and its
rest runs later without counting as waiting, so the model gives it only its first run (the fraction
of its run at which it fails); keeping the whole run would overstate the floor.

Time is in whole minutes: arrivals and runs are rounded down, which only loosens the model, and a
real schedule then maps onto the model with its waits grown by less than one minute, so the
integral floor reported is the solver's bound minus one minute.

Pool "all" (GB200 only, where every child Job takes a whole rack of one exclusive key): every
shape pool's cumulative at once plus one over all racks. "all (nested racks)" adds what the
shapes' sameness gives (they differ only in hosts per child Job, so a rack that fits 18 fits 16):
the JobSets of the 18h and 16h pools together on the 16h pool's 10 racks, and so on down. TPU
shapes use disjoint node pools, so there the fleet's floor is the largest pool's.
"""

from __future__ import annotations

import argparse
import math
import shlex
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from ortools.sat.python import cp_model

from benchmarks.backfill import estimates_for
from benchmarks.reporting.measure import machine_info
from benchmarks.simulate.overtime import simulate
from benchmarks.worlds.queues import JobSetSpec
from benchmarks.worlds.simworld import HOUR, SimConfig, SimWorld, build_world, shape_pools
from placer.model.options import SolveOptions, TimePolicy

__all__ = [
    "NESTED",
    "TARGET_MAX_H",
    "FloorRow",
    "Groups",
    "Integral",
    "PoolJob",
    "Search",
    "add_world_arguments",
    "all_groups",
    "divisible_floor",
    "greedy_schedule",
    "in_minutes",
    "integral_floor",
    "main",
    "pool_jobs",
    "pool_members",
    "pool_rows",
    "publish",
    "shapes_nest",
    "verdict",
    "whole_domains",
]

MINUTE = 60.0
NESTED = "all (nested racks)"
TARGET_MAX_H = {"gb200": 0.85 * 41.28, "tpu": 0.85 * 49.75}
"""Issue 21's max-delay targets: 0.85x `easy-aging`'s max delay at 90% load, over-estimates
(RESULTS-backfill.md, rounds 3 and 4)."""


@dataclass(frozen=True)
class PoolJob:
    """What the floors need of one JobSet: when it arrives, how long it holds, how many domains."""

    arrival: float
    duration: float
    width: int


@dataclass(frozen=True)
class Integral:
    """The CP-SAT model's answer, in the model's time unit (minutes)."""

    bound: int
    """Best objective bound: no schedule of the model keeps every wait below it."""
    best: int | None
    """Longest wait of the best schedule found (None: none found)."""
    status: str
    wall_s: float


@dataclass(frozen=True)
class FloorRow:
    world: str
    pool: str
    jobsets: int
    domains: int
    fluid_backlog_h: float
    divisible_h: float
    integral_h: float
    best_h: float | None
    status: str
    wall_s: float
    policy_max_h: float | None = None
    """The longest wait a simulated policy gave the pool's JobSets (`--policy`), if asked: a
    check, as no policy can go below a floor."""


def first_run_s(world: SimWorld, js: JobSetSpec) -> float:
    """How long `js` holds its domains from its first start: all of its run, or, if it fails, the
    share of its run before the failure (`overtime._Sim._start`); what follows a restart is not
    waiting and may run whenever, so it cannot be asked of a floor."""
    failure = world.failures.get(js.key)
    return js.duration_s * failure[0] if failure is not None else js.duration_s


def pool_members(world: SimWorld) -> dict[str, list[JobSetSpec]]:
    """JobSets per shape pool, keyed as `shape_pools` keys them: by the shape of the first
    replicated job (every simulated JobSet has one shape; a second shape's child Jobs would sit on
    other domains and are left out, which only loosens the floor)."""
    groups: dict[str, list[JobSetSpec]] = {}
    for js in world.queue:
        groups.setdefault(js.rjobs[0].shape.label, []).append(js)
    return groups


def pool_jobs(world: SimWorld, members: Sequence[JobSetSpec], label: str | None) -> list[PoolJob]:
    """Each member's arrival, first run (seconds) and child Jobs of shape `label` (None: all)."""
    return [
        PoolJob(
            js.arrival_s,
            first_run_s(world, js),
            sum(r.replicas for r in js.rjobs if label is None or r.shape.label == label),
        )
        for js in members
    ]


def _divisible_fits(jobs: Sequence[PoolJob], capacity: int, w: float) -> bool:
    """Whether every window [s, t] fits the work that waits of at most `w` force into it.

    Window starts are arrivals (moving s up to the next arrival keeps the same JobSets and leaves
    less room); the excess of work over room is piecewise linear in t, so its breakpoints (a
    JobSet's latest start a + w and its end a + w + d) are the only t to check.
    """
    if not jobs:
        return True
    order = sorted(jobs, key=lambda j: j.arrival)
    arrival = np.array([j.arrival for j in order])
    times = np.concatenate([arrival, arrival + [j.duration for j in order]]) + w
    slope = np.array([j.width for j in order] * 2, dtype=float)
    slope[len(order) :] *= -1
    owner = np.concatenate([np.arange(len(order))] * 2)
    by_time = np.argsort(times, kind="stable")
    times, slope, owner = times[by_time], slope[by_time], owner[by_time]
    # rows: window starts (an arrival index i), columns: breakpoints; only JobSets i.. count
    counted = owner[None, :] >= np.arange(len(order))[:, None]
    rate = np.cumsum(np.where(counted, slope, 0.0), axis=1)
    offset = np.cumsum(np.where(counted, slope * times, 0.0), axis=1)
    work = rate * times[None, :] - offset
    room = capacity * (times[None, :] - arrival[:, None])
    slack = 1e-6 * capacity * (1.0 + np.abs(times[None, :]))
    return bool(np.all(~counted | (work <= room + slack)))


def divisible_floor(jobs: Sequence[PoolJob], capacity: int, tolerance: float = 1.0) -> float:
    """The largest w shown too small by `_divisible_fits` (bisection to `tolerance`), 0 if none.

    A longest wait of w is feasible only if the divisible condition holds at w, and it holds for
    every larger w too (the forced work only shrinks), so every wait floor below the least feasible
    w is a floor; this returns one that was checked infeasible, never one that was not.
    """
    if _divisible_fits(jobs, capacity, 0.0):
        return 0.0
    lo, hi = 0.0, max(1.0, sum(j.duration for j in jobs))
    while not _divisible_fits(jobs, capacity, hi):
        lo, hi = hi, 2 * hi
    while hi - lo > tolerance:
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if _divisible_fits(jobs, capacity, mid) else (mid, hi)
    return lo


def in_minutes(jobs: Sequence[PoolJob]) -> list[PoolJob]:
    """The model's instance: arrivals and runs rounded down to whole minutes (a relaxation)."""
    return [
        PoolJob(math.floor(j.arrival / MINUTE), math.floor(j.duration / MINUTE), j.width)
        for j in jobs
    ]


Groups = Sequence[tuple[Sequence[int], int]]
"""Cumulatives: (indices of the JobSets that draw on it, its domains)."""


def greedy_schedule(jobs: Sequence[PoolJob], groups: Groups) -> list[int]:
    """Starts (integer units) by first-come-first-served list scheduling with backfill: each
    JobSet, in arrival order, at the earliest time its domains are free for its whole run.

    Feasible for the model, so its longest wait bounds the model's optimum from above; it seeds
    CP-SAT's hint and caps the start domains.
    """
    horizon = int(max(j.arrival for j in jobs) + sum(j.duration for j in jobs) + 1)
    used = np.zeros((len(groups), horizon + 1), dtype=np.int64)
    member: list[list[int]] = [[] for _ in jobs]
    for g, (idx, _) in enumerate(groups):
        for i in idx:
            member[i].append(g)
    caps = np.array([cap for _, cap in groups])
    starts = [0] * len(jobs)
    for i in sorted(range(len(jobs)), key=lambda i: (jobs[i].arrival, i)):
        job, mine = jobs[i], member[i]
        a, d = int(job.arrival), int(job.duration)
        if d == 0 or not mine:
            starts[i] = a
            continue
        short = np.any(used[mine] + job.width > caps[mine, None], axis=0).astype(np.int64)
        blocked = np.concatenate([[0], np.cumsum(short)])
        t = np.arange(a, horizon - d + 1)
        ok = t[blocked[t + d] - blocked[t] == 0]
        starts[i] = int(ok[0])
        used[mine, starts[i] : starts[i] + d] += job.width
    return starts


def _waits(jobs: Sequence[PoolJob], starts: Sequence[int]) -> int:
    return max((s - int(j.arrival) for s, j in zip(starts, jobs, strict=True)), default=0)


def _model(
    jobs: Sequence[PoolJob], groups: Groups, lower: int, cap: int, hint: Sequence[int]
) -> tuple[cp_model.CpModel, cp_model.IntVar, list[cp_model.IntVar]]:
    """Starts within `cap` of arrival, whole domains per cumulative, W the longest wait."""
    model = cp_model.CpModel()
    wait = model.new_int_var(lower, cap, "W")
    starts = []
    for i, j in enumerate(jobs):
        a = int(j.arrival)
        s = model.new_int_var(a, a + cap, f"s{i}")
        model.add(wait >= s - a)
        model.add_hint(s, min(hint[i], a + cap))
        starts.append(s)
    intervals = [
        model.new_fixed_size_interval_var(s, int(j.duration), f"i{i}")
        for i, (s, j) in enumerate(zip(starts, jobs, strict=True))
    ]
    for idx, domains in groups:
        held = [i for i in idx if jobs[i].duration > 0]
        model.add_cumulative([intervals[i] for i in held], [jobs[i].width for i in held], domains)
    return model, wait, starts


def _solver(limit_s: float, seed: int, workers: int) -> cp_model.CpSolver:
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = max(0.1, limit_s)
    solver.parameters.num_workers = workers
    solver.parameters.random_seed = seed
    return solver


def integral_floor(
    jobs: Sequence[PoolJob],
    groups: Groups,
    *,
    time_limit_s: float = 60.0,
    seed: int = 1,
    workers: int = 2,
    lower: int = 0,
    first: int | None = None,
    method: str = "bisect",
) -> Integral:
    """Least longest wait with whole domains (integer times, as `jobs` gives them), by CP-SAT.

    `method` "bisect" (the default) asks CP-SAT a series of yes/no questions, "is there a
    schedule with every wait at most T?", starting at `first` (the target, when given) then
    halving the gap between the proven floor and the best schedule: on GB200's 16h pool one such
    question at 23.3 h was proven infeasible in under a second, while minimizing W directly left
    the bound at the divisible floor (21.4 h) after 3 s, as CP-SAT's bound on a min-max objective
    only moves when the whole subtree below it is refuted. "minimize" is that direct model, kept
    for comparison. Either way the search starts from `greedy_schedule` (the upper bound and the
    hint) and `lower`, a floor already known for this instance (the divisible one).
    """
    best = greedy_schedule(jobs, groups)
    hi = _waits(jobs, best)
    lo = min(lower, hi)
    began = time.perf_counter()
    if method == "minimize":
        model, wait, _ = _model(jobs, groups, lo, hi, best)
        model.minimize(wait)
        solver = _solver(time_limit_s, seed, workers)
        status = solver.solve(model)
        wall = time.perf_counter() - began
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            return Integral(lo, hi, solver.status_name(status), wall)
        bound = max(lo, math.ceil(solver.best_objective_bound - 1e-9))
        return Integral(bound, round(solver.objective_value), solver.status_name(status), wall)
    if method != "bisect":
        raise ValueError(f"unknown method {method!r}")
    ceiling = hi - 1  # the highest T still worth asking (an unanswered T caps it below T)
    probe = first if first is not None and lo <= first < hi else None
    while lo <= min(ceiling, hi - 1):
        left = time_limit_s - (time.perf_counter() - began)
        if left <= 0:
            break
        # the target's question gets half the budget: it alone decides the verdict
        share = 2 if probe is not None else 4
        cap = probe if probe is not None else (lo + min(ceiling, hi - 1)) // 2
        probe = None
        model, _, starts = _model(jobs, groups, lo, cap, best)
        solver = _solver(min(left, time_limit_s / share), seed, workers)
        status = solver.solve(model)
        if status == cp_model.INFEASIBLE:
            lo = cap + 1
        elif status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            best = [solver.value(s) for s in starts]
            hi = _waits(jobs, best)
        else:
            ceiling = cap - 1
    wall = time.perf_counter() - began
    return Integral(lo, hi, "OPTIMAL" if lo >= hi else "FEASIBLE", wall)


@dataclass(frozen=True)
class Search:
    """How hard and how to look for the integral floor."""

    time_limit_s: float = 60.0
    seed: int = 1
    method: str = "bisect"
    target_h: float | None = None
    """A longest wait to ask about first (issue 21's target): the verdict, if time runs short."""

    @property
    def first(self) -> int | None:
        """The model's question for the target: a real schedule within it maps to one within
        this many minutes (arrivals rounded down add under a minute)."""
        return None if self.target_h is None else math.floor(self.target_h * HOUR / MINUTE) + 1


def _row(
    world: SimWorld, pool: str, jobs: list[PoolJob], groups: Groups, domains: int, search: Search
) -> FloorRow:
    """Both floors of one pool; the divisible one on the pool's last cumulative (all domains)."""
    idx, cap = groups[-1]
    union = [jobs[i] for i in idx]
    divisible = divisible_floor(union, cap)
    integer = in_minutes(jobs)
    lower = math.floor(divisible_floor([integer[i] for i in idx], cap, tolerance=0.5)) + 1
    lower = lower if lower > 1 else 0
    found = integral_floor(
        integer,
        groups,
        time_limit_s=search.time_limit_s,
        seed=search.seed,
        lower=lower,
        first=search.first,
        method=search.method,
    )
    return FloorRow(
        world.name,
        pool,
        len(jobs),
        domains,
        shape_pools(world)["all" if pool == NESTED else pool].fluid_backlog_s / HOUR,
        divisible / HOUR,
        max(0, found.bound - 1) * MINUTE / HOUR,
        None if found.best is None else found.best * MINUTE / HOUR,
        found.status,
        found.wall_s,
    )


def whole_domains(world: SimWorld) -> int:
    """Domains of the one exclusive key every child Job takes whole (0 if the shapes differ in
    key or a child Job takes less than its domain): the racks of the GB200 fleet."""
    shapes = {r.shape for js in world.queue for r in js.rjobs}
    keys = {s.exclusive_key for s in shapes}
    if len(keys) != 1 or any(s.domain_units <= 0 for s in shapes):
        return 0
    key = keys.pop()
    return len({n.labels[key] for n in world.snapshot.nodes if n.usable and key in n.labels})


def shapes_nest(world: SimWorld) -> bool:
    """Whether the shapes differ only in pods per child Job (same selector, key, pod requests):
    then a domain that fits a child Job of n pods fits every smaller one, and the pools' domains
    nest (GB200: the rack that takes 18 hosts is one of the 10 that take 16)."""
    shapes = {r.shape for js in world.queue for r in js.rjobs}
    return len({replace(s, label="", pods_per_job=0, weight=0.0) for s in shapes}) == 1


def all_groups(
    world: SimWorld, members: dict[str, list[JobSetSpec]], racks: int, nested: bool
) -> tuple[list[JobSetSpec], list[tuple[Sequence[int], int]]]:
    """Pool "all": every JobSet, each pool's cumulative and one over all racks; `nested` adds, by
    pods per child Job from the most, the cumulative of each prefix of pools on the domains of its
    last (widest-fitting) pool: with nested domains those JobSets can use no other (Hall's
    condition on a chain of sets, so still a relaxation: it does not pin racks over time)."""
    pools = shape_pools(world)
    labels = sorted(members)
    if nested:
        labels.sort(key=lambda k: -members[k][0].rjobs[0].shape.pods_per_job)
    everyone = [js for label in labels for js in members[label]]
    groups: list[tuple[Sequence[int], int]] = []
    first = 0
    for label in labels:
        last = first + len(members[label])
        groups.append((range(0 if nested else first, last), pools[label].domains))
        first = last
    groups.append((range(len(everyone)), racks))
    return everyone, groups


def pool_rows(world: SimWorld, search: Search) -> list[FloorRow]:
    """One row per shape pool, then pool "all" where every child Job takes a whole domain, and
    "all (nested racks)" where the pools' domains also nest."""
    pools = shape_pools(world)
    rows = []
    members = pool_members(world)
    for label, jss in sorted(members.items()):
        jobs = pool_jobs(world, jss, label)
        d = pools[label].domains
        rows.append(_row(world, label, jobs, [(range(len(jobs)), d)], d, search))
    racks = whole_domains(world)
    for pool, nested in (("all", False), (NESTED, True)):
        if racks and (not nested or shapes_nest(world)):
            everyone, groups = all_groups(world, members, racks, nested)
            rows.append(_row(world, pool, pool_jobs(world, everyone, None), groups, racks, search))
    return rows


def policy_max_h(
    world: SimWorld, cfg: SimConfig, policy: str, estimate: str, seed: int
) -> dict[str, float]:
    """Per pool (and "all"), the longest wait `policy` gives in the over-time simulation, with
    the estimates and solver options of `backfill.run_matrix` (repeatable search)."""
    options = SolveOptions(
        time_limit_s=5.0, workers=2, seed=seed, time=TimePolicy(schedule_search="repeatable")
    )
    announced = estimates_for(world, estimate, seed)
    (result,) = simulate(world, [policy], options, cfg, estimates=announced)
    out: dict[str, float] = {}
    for js, delay in zip(world.queue, result.delays_s, strict=True):
        for pool in (js.rjobs[0].shape.label, "all"):
            out[pool] = max(out.get(pool, 0.0), delay / HOUR)
    return out


def table(rows: Sequence[FloorRow], policy: str | None = None) -> list[str]:
    """The markdown table of the report (with the simulated `policy`'s longest wait, if any)."""
    extra = f" {policy} max h |" if policy else ""
    lines = [
        "| world | pool | JobSets | domains D | fluid backlog h | divisible floor h "
        f"| integral floor h (bound) | best schedule found h | status | solve s |{extra}",
        "|---|---|---|---|---|---|---|---|---|---|" + ("---|" if policy else ""),
    ]
    for r in rows:
        best = "-" if r.best_h is None else f"{r.best_h:.2f}"
        seen = "" if r.policy_max_h is None else f" {r.policy_max_h:.2f} |"
        lines.append(
            f"| {r.world} | {r.pool} | {r.jobsets} | {r.domains} | {r.fluid_backlog_h:.2f} "
            f"| {r.divisible_h:.2f} | {r.integral_h:.2f} | {best} | {r.status} | {r.wall_s:.1f} |"
            + seen
        )
    return lines


def verdict(fleet: str, rows: Sequence[FloorRow], policy_max_h: float | None = None) -> str:
    """The fleet's floor is its highest pool floor (each bounds the fleet's longest wait)."""
    target = TARGET_MAX_H[fleet]
    top = max(rows, key=lambda r: r.integral_h)
    word = (
        "above it: out of reach for every non-preemptive policy"
        if top.integral_h > target
        else "not above it: not shown out of reach"
    )
    seen = "" if policy_max_h is None else f" (simulated policy: {policy_max_h:.2f} h)"
    return (
        f"{fleet}: target {target:.2f} h; highest integral floor {top.integral_h:.2f} h "
        f"({top.pool}) is {word}{seen}"
    )


def add_world_arguments(parser: argparse.ArgumentParser) -> None:
    """The worlds a floor is computed on, and where its report goes (shared with `late_floor`)."""
    parser.add_argument("--out", type=Path, help="also write the markdown report here")
    parser.add_argument("--seed", type=int, default=1, help="the worlds' seed and CP-SAT's")
    parser.add_argument("--jobsets", type=int, default=300)
    parser.add_argument("--load", type=float, default=0.9)
    parser.add_argument("--fleets", default="tpu,gb200", help="comma-separated: tpu, gb200")


def publish(text: str, out: Path | None) -> None:
    """Print the report, and write it to `out` when one is named."""
    print(text)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.wait_floor", description=__doc__)
    add_world_arguments(parser)
    parser.add_argument(
        "--time-limit", type=float, default=60.0, help="CP-SAT seconds per pool (default 60)"
    )
    parser.add_argument(
        "--method",
        choices=("bisect", "minimize"),
        default="bisect",
        help="integral floor: yes/no questions on the longest wait (default) or one minimization",
    )
    parser.add_argument(
        "--policy",
        help="also simulate this over-time policy (e.g. easy-aging) and give its longest wait per "
        "pool beside the floors, as a check",
    )
    parser.add_argument("--estimate", default="over", help="its runtime estimates (default over)")
    args = parser.parse_args(argv)
    fleets = [f.strip() for f in args.fleets.split(",") if f.strip()]
    cfg = replace(SimConfig(), jobsets=args.jobsets, load=args.load)
    command = "python -m benchmarks.wait_floor " + shlex.join(
        sys.argv[1:] if argv is None else argv
    )
    machine = machine_info()
    rows: list[FloorRow] = []
    lines = [f"Command: `{command}`", "", f"Machine: {machine}", ""]
    tail = []
    for fleet in fleets:
        world = build_world(fleet, args.seed, cfg)
        search = Search(args.time_limit, args.seed, args.method, TARGET_MAX_H.get(fleet))
        mine = pool_rows(world, search)
        seen: dict[str, float] = {}
        if args.policy:
            seen = policy_max_h(world, cfg, args.policy, args.estimate, args.seed)
            mine = [
                replace(r, policy_max_h=seen.get("all" if r.pool == NESTED else r.pool))
                for r in mine
            ]
        rows.extend(mine)
        if fleet in TARGET_MAX_H:
            tail.append(f"- {verdict(fleet, mine, seen.get('all'))}")
    lines += [*table(rows, args.policy), "", *tail, ""]
    publish("\n".join(lines), args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
