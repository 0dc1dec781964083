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
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from benchmarks.backfill import estimates_for
from benchmarks.pool_relaxation import (
    MINUTE,
    NESTED,
    Groups,
    PoolJob,
    all_groups,
    divisible_floor,
    in_minutes,
    integral_floor,
    pool_jobs,
    pool_members,
    shapes_nest,
    whole_domains,
)
from benchmarks.reporting.measure import machine_info
from benchmarks.simulate.overtime import simulate
from benchmarks.worlds.simworld import HOUR, SimConfig, SimWorld, build_world, shape_pools
from placer.model.options import SolveOptions, TimePolicy

__all__ = [
    "TARGET_MAX_H",
    "FloorRow",
    "Search",
    "add_world_arguments",
    "main",
    "pool_rows",
    "publish",
    "verdict",
]

TARGET_MAX_H = {"gb200": 0.85 * 41.28, "tpu": 0.85 * 49.75}
"""Issue 21's max-delay targets: 0.85x `easy-aging`'s max delay at 90% load, over-estimates
(RESULTS-backfill.md, rounds 3 and 4)."""


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
