"""The pool relaxation that `wait_floor` and `late_floor` ask their questions of, and its floors.

Both commands bound what every non-preemptive policy of `benchmarks.simulate.overtime` can reach
with one model that leaves out what a real run must cope with: each JobSet holds k whole domains
of its shape pool (its child Jobs) for its first run (`first_run_s`), starting at any minute at or
after its arrival, with exact run times and the pool to itself. This module builds that instance
from a world (`pool_members`, `pool_jobs`, `in_minutes`; `all_groups` for every rack at once, nested
where `shapes_nest`; `parts` splits it into the sets of JobSets that share domains, and `combined`
joins them into one instance), schedules it first come, first served (`greedy_schedule`: an upper
bound and CP-SAT's hint), and computes two floors on its longest wait: `divisible_floor` (capacity
treated as divisible) and `integral_floor` (whole domains, by CP-SAT).

It is apart from the commands because both build on it: `benchmarks.wait_floor` reports these
floors per pool (and says why they are floors for every policy), `benchmarks.late_floor` asks the
same instance about the p95 wait. It speaks to CP-SAT itself, as nothing in placer/solver/ builds
this model (it is an offline model of the arrivals, not a placement).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from ortools.sat.python import cp_model

from benchmarks.worlds.queues import JobSetSpec
from benchmarks.worlds.simworld import SimWorld, shape_pools

__all__ = [
    "MINUTE",
    "NESTED",
    "Groups",
    "Integral",
    "Part",
    "PoolJob",
    "all_groups",
    "combined",
    "divisible_floor",
    "first_run_s",
    "greedy_schedule",
    "in_minutes",
    "integral_floor",
    "parts",
    "pool_jobs",
    "pool_members",
    "shapes_nest",
    "whole_domains",
]

MINUTE = 60.0
NESTED = "all (nested racks)"
"""Pool "all" with the pools' cumulatives nested (`all_groups` with `nested`)."""


@dataclass(frozen=True)
class PoolJob:
    """What the floors need of one JobSet: when it arrives, how long it holds, how many domains."""

    arrival: float
    duration: float
    width: int


Groups = Sequence[tuple[Sequence[int], int]]
"""Cumulatives: (indices of the JobSets that draw on it, its domains)."""


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


def in_minutes(jobs: Sequence[PoolJob]) -> list[PoolJob]:
    """The model's instance: arrivals and runs rounded down to whole minutes (a relaxation)."""
    return [
        PoolJob(math.floor(j.arrival / MINUTE), math.floor(j.duration / MINUTE), j.width)
        for j in jobs
    ]


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


@dataclass(frozen=True)
class Integral:
    """The CP-SAT model's answer, in the model's time unit (minutes)."""

    bound: int
    """Best objective bound: no schedule of the model keeps every wait below it."""
    best: int | None
    """Longest wait of the best schedule found (None: none found)."""
    status: str
    wall_s: float


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
class Part:
    """JobSets that share domains with no JobSet outside them (minutes, as the model has them)."""

    name: str
    jobs: list[PoolJob]
    groups: Groups


def parts(world: SimWorld) -> list[Part]:
    """TPU: one part per slice pool (the pools are disjoint). Where every child Job takes a
    whole rack of one key (GB200), one part over every rack, with the pools' cumulatives nested
    when the shapes nest (`all_groups`)."""
    members = pool_members(world)
    racks = whole_domains(world)
    if racks:
        nested = shapes_nest(world)
        everyone, groups = all_groups(world, members, racks, nested)
        return [
            Part(NESTED if nested else "all", in_minutes(pool_jobs(world, everyone, None)), groups)
        ]
    pools = shape_pools(world)
    return [
        Part(
            label,
            in_minutes(pool_jobs(world, jss, label)),
            [(range(len(jss)), pools[label].domains)],
        )
        for label, jss in sorted(members.items())
    ]


def combined(all_parts: Sequence[Part]) -> tuple[list[PoolJob], Groups]:
    """Every part's JobSets in one instance, each part's cumulatives on its own indices."""
    jobs: list[PoolJob] = []
    groups: list[tuple[Sequence[int], int]] = []
    for part in all_parts:
        first = len(jobs)
        jobs.extend(part.jobs)
        groups.extend(([first + i for i in idx], domains) for idx, domains in part.groups)
    return jobs, groups
