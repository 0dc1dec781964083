"""Who sets a cell's longest waits: `python -m benchmarks.who_waits --fleet gb200`.

`benchmarks.backfill` reports a cell's p95 and max; when a change to the schedule moves them,
the next question is which JobSets waited that long and why: their shape, tier, announced and
real run time, and how many JobSets that arrived after them started first. Rounds 16 and 19 of
issue 21 (benchmarks/RESULTS-backfill.md) answered it with scripts kept nowhere; this runs the
same simulation as one `benchmarks.backfill` cell (the same world, arrivals, announced run
times and search settings, so its waits are that cell's) and prints, for the last policy named,
its `--top` longest waits beside each other policy's wait for the same JobSet. Above them, each
priority's mean, p95 and longest wait per policy: the p95 and max of a cell can improve while
the highest priority waits longer, which "priority tiers first" does not allow for. And for the
CP-SAT schedule, in how many rounds its search moved starts away from its greedy hint, and in how
many it changed who starts now (the only starts a round commits), read from the plans' notes.
`--dump FILE` also writes every JobSet's wait, for `benchmarks.wait_shift` to set against the
same cell run on another tree.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from benchmarks.backfill import Matrix, estimates_for
from benchmarks.reporting.stats import percentile
from benchmarks.simulate.overtime import simulate
from benchmarks.simulate.policies import POLICIES
from benchmarks.simulate.results import SimResult
from benchmarks.worlds.queues import JobSetSpec
from benchmarks.worlds.simworld import HOUR, SimConfig, build_world
from placer.model.options import SolveOptions, TimePolicy

__all__ = ["TierWaits", "Wait", "dump", "group", "longest_waits", "main", "tier_waits"]


@dataclass(frozen=True)
class Wait:
    """One JobSet's wait under each policy, in policy order."""

    spec: JobSetSpec
    announced_s: float | None
    waits_s: tuple[float, ...]
    overtaken: int
    """JobSets that arrived after it and started before it, under the last policy."""


def shape(spec: JobSetSpec) -> str:
    """`replicas x child shape` per replicated job, e.g. `2x gb200 16h`."""
    return " + ".join(f"{r.replicas}x {r.shape.label}" for r in spec.rjobs)


def longest_waits(
    queue: Sequence[JobSetSpec],
    announced: dict[str, float | None],
    results: Sequence[SimResult],
    top: int,
) -> list[Wait]:
    """The `top` longest waits of the last result (each result's delays in `queue` order),
    longest first, ties by queue order."""
    last = results[-1].delays_s
    starts = [js.arrival_s + d for js, d in zip(queue, last, strict=True)]
    order = sorted(range(len(queue)), key=lambda i: (-last[i], i))[:top]
    return [
        Wait(
            spec=queue[i],
            announced_s=announced.get(queue[i].key),
            waits_s=tuple(r.delays_s[i] for r in results),
            overtaken=sum(
                1
                for j, js in enumerate(queue)
                if js.arrival_s > queue[i].arrival_s and starts[j] < starts[i]
            ),
        )
        for i in order
    ]


@dataclass(frozen=True)
class TierWaits:
    """One priority's waits under each policy, in policy order."""

    priority: int
    count: int
    mean_s: tuple[float, ...]
    p95_s: tuple[float, ...]
    max_s: tuple[float, ...]


def tier_waits(queue: Sequence[JobSetSpec], results: Sequence[SimResult]) -> list[TierWaits]:
    """Per priority of the queue, highest first: its JobSets' mean, p95 and longest wait under
    each policy (each result's delays in `queue` order)."""
    found: list[TierWaits] = []
    for priority in sorted({js.priority for js in queue}, reverse=True):
        at = [i for i, js in enumerate(queue) if js.priority == priority]
        waits = [[r.delays_s[i] for i in at] for r in results]
        found.append(
            TierWaits(
                priority=priority,
                count=len(at),
                mean_s=tuple(sum(w) / len(w) for w in waits),
                p95_s=tuple(percentile(w, 95) for w in waits),
                max_s=tuple(max(w) for w in waits),
            )
        )
    return found


def group(spec: JobSetSpec) -> str:
    """The kind of JobSet `benchmarks.wait_shift` sums waits by: its first child Job's shape,
    one child Job or more (`wide`), and a wide one's locality (`required`, `preferred`, or
    none; a JobSet of one child Job asks none, whatever its spec says: `JobSetSpec.to_request`)."""
    child = spec.rjobs[0].shape.label
    wide = sum(r.replicas for r in spec.rjobs) > 1
    kind = f"{child} {'wide' if wide else 'one'}"
    return f"{kind} {spec.locality}" if wide and spec.locality else kind


def dump(queue: Sequence[JobSetSpec], results: Sequence[SimResult], command: str) -> dict[str, Any]:
    """Every JobSet's wait (seconds) per policy, with its kind (`group`), in queue order."""
    return {
        "command": command,
        "jobsets": [{"name": js.key, "group": group(js)} for js in queue],
        "waits_s": {r.policy: list(r.delays_s) for r in results},
        "utilization": {r.policy: r.mean_utilization for r in results},
    }


def _hours(seconds: float | None) -> str:
    return "none" if seconds is None else f"{seconds / HOUR:.2f}"


def render(
    waits: Sequence[Wait],
    results: Sequence[SimResult],
    command: str,
    tiers: Sequence[TierWaits] = (),
) -> list[str]:
    """The report: each policy's p95 and max, the waits per priority, then the longest waits of
    the last policy."""
    names = [r.policy for r in results]
    lines = [f"Command: `{command}`", ""]
    for r in results:
        lines.append(
            f"- {r.policy}: p95 {percentile(r.delays_s, 95) / HOUR:.2f} h, "
            f"max {max(r.delays_s, default=0.0) / HOUR:.2f} h"
        )
    for r in results:
        if r.hint_changes:
            moved = sum(1 for c in r.hint_changes if c.moved)
            now = sum(1 for c in r.hint_changes if c.now)
            n = len(r.hint_changes)
            lines.append(
                f"- {r.policy}'s search moved starts from its greedy hint in {moved} of {n} "
                f"rounds, and changed who starts now in {now}"
            )
    if tiers:
        per = " / ".join(names)
        head = ["priority", "JobSets", f"mean h ({per})", f"p95 h ({per})", f"max h ({per})"]
        lines += ["", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for t in tiers:
            cells = [str(t.priority), str(t.count)]
            cells += [" / ".join(_hours(v) for v in vs) for vs in (t.mean_s, t.p95_s, t.max_s)]
            lines.append("| " + " | ".join(cells) + " |")
    head = ["JobSet", "arrives h", "shape", "priority", "runs h", "announces h"]
    head += [f"waits h ({n})" for n in names] + [f"overtaken ({names[-1]})"]
    lines += ["", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for w in waits:
        cells = [
            w.spec.name,
            _hours(w.spec.arrival_s),
            shape(w.spec),
            str(w.spec.priority),
            _hours(w.spec.duration_s),
            _hours(w.announced_s),
            *(_hours(s) for s in w.waits_s),
            str(w.overtaken),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _policies(text: str) -> tuple[str, ...]:
    names = tuple(p.strip() for p in text.split(",") if p.strip())
    unknown = [p for p in names if p not in POLICIES]
    if not names or unknown:
        raise argparse.ArgumentTypeError(f"unknown policies {unknown}; known: {sorted(POLICIES)}")
    return names


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fleet", choices=("tpu", "gb200"), required=True)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--load", type=float, default=0.9)
    parser.add_argument("--estimates", choices=("exact", "over", "noisy", "none"), default="over")
    parser.add_argument(
        "--policies",
        type=_policies,
        default=("easy-aging", "cpsat-schedule"),
        help="comma-separated; the longest waits are the last one's (default "
        "easy-aging,cpsat-schedule)",
    )
    parser.add_argument("--top", type=int, default=20)
    parser.add_argument(
        "--dump",
        type=Path,
        help="also write every JobSet's wait per policy as JSON, for `benchmarks.wait_shift` "
        "to set against the same command run on another tree",
    )
    args = parser.parse_args(argv)
    # a `benchmarks.backfill` cell's settings: its default `Matrix`, as `run_matrix` applies them
    matrix = Matrix()
    cfg = replace(SimConfig(), jobsets=matrix.jobsets, load=args.load, size=matrix.size)
    world = build_world(args.fleet, args.seed, cfg)
    announced = estimates_for(world, args.estimates, args.seed)
    options = SolveOptions(
        time_limit_s=matrix.time_limit_s,
        workers=2,
        seed=args.seed,
        time=TimePolicy(schedule_search=matrix.schedule_search),
    )
    results = simulate(world, args.policies, options, cfg, estimates=announced)
    command = "python -m benchmarks.who_waits " + " ".join(sys.argv[1:] if argv is None else argv)
    waits = longest_waits(world.queue, announced, results, args.top)
    print("\n".join(render(waits, results, command, tier_waits(world.queue, results))))
    if args.dump is not None:
        args.dump.write_text(json.dumps(dump(world.queue, results, command), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
