"""Over time with preemption (issue 20): `python -m benchmarks.preemption_overtime [--quick]`.

On the same arrivals (`benchmarks.worlds.simworld`, both fleets, 90% and 110% offered load), three
policies of `benchmarks.simulate.overtime`: `cpsat` (no preemption), `kueue-preempt` (best-fit with
Kueue-like greedy preemption, `benchmarks.simulate.greedy_preempt`) and `cpsat-preempt` (placer's
planner with `--preemption lower-priority`). Per run and priority tier: p50/p95/max queueing delay;
per run: accelerator-hours lost to preemption (and their share of all accelerator-hours run),
preemptions per JobSet (mean and max), utilization over the arrival window. Prints one JSON line
per run and a markdown table, with the machine and the load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from benchmarks.reporting.measure import machine_info
from benchmarks.reporting.stats import percentile
from benchmarks.simulate.overtime import simulate
from benchmarks.simulate.results import SimResult
from benchmarks.worlds.simworld import HOUR, SimConfig, build_world
from placer.model.options import SolveOptions

__all__ = ["POLICIES", "main", "summarize"]

POLICIES = ("cpsat", "kueue-preempt", "cpsat-preempt")


def summarize(result: SimResult, fleet: str, load: float) -> dict[str, Any]:
    """The issue's measures of one simulation."""
    tiers: dict[int, list[float]] = {}
    for priority, delay in zip(result.priorities, result.delays_s, strict=True):
        tiers.setdefault(priority, []).append(delay)
    busy = result.busy_chip_hours
    return {
        "fleet": fleet,
        "load": load,
        "policy": result.policy,
        "tiers": {
            p: {
                "jobsets": len(d),
                "p50_h": round(percentile(d, 50) / HOUR, 2),
                "p95_h": round(percentile(d, 95) / HOUR, 2),
                "max_h": round(max(d) / HOUR, 2),
            }
            for p, d in sorted(tiers.items(), reverse=True)
        },
        "lost_chip_hours": round(result.lost_chip_hours, 1),
        "lost_share": round(result.lost_chip_hours / busy, 4) if busy else 0.0,
        "preemptions_per_jobset": round(
            sum(result.preemptions) / max(len(result.preemptions), 1), 3
        ),
        "max_preemptions": max(result.preemptions, default=0),
        "window_utilization": round(result.window_utilization, 4),
        "never_started": result.never_started,
    }


def _table(rows: Sequence[dict[str, Any]]) -> list[str]:
    lines = [
        "| fleet | load | policy | top tier p50/p95/max (h) | middle tier p95 (h) | bottom tier "
        "p95 (h) | lost chip-h (share) | preemptions/JobSet (max) | utilization |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        t = list(r["tiers"].values())
        top = t[0]
        mid = t[1]["p95_h"] if len(t) > 2 else "-"
        low = t[-1]["p95_h"] if len(t) > 1 else "-"
        lines.append(
            f"| {r['fleet']} | {r['load']:.0%} | {r['policy']} | "
            f"{top['p50_h']}/{top['p95_h']}/{top['max_h']} | {mid} | {low} | "
            f"{r['lost_chip_hours']} ({r['lost_share']:.1%}) | "
            f"{r['preemptions_per_jobset']} ({r['max_preemptions']}) | "
            f"{r['window_utilization']:.1%} |"
        )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.preemption_overtime")
    parser.add_argument("--quick", action="store_true", help="TPU fleet, 110%% load, 100 JobSets")
    parser.add_argument("--jobsets", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--time-limit", type=float, default=5.0)
    args = parser.parse_args(argv)
    cells = (
        [("tpu", 1.1)] if args.quick else [(f, lo) for f in ("tpu", "gb200") for lo in (0.9, 1.1)]
    )
    jobsets = 100 if args.quick else args.jobsets
    options = SolveOptions(time_limit_s=args.time_limit, workers=2, seed=args.seed)
    load_before = os.getloadavg()
    rows = []
    for fleet, load in cells:
        cfg = replace(SimConfig(), jobsets=jobsets, load=load)
        world = build_world(fleet, args.seed, cfg)
        for result in simulate(world, POLICIES, options, cfg):
            row = summarize(result, fleet, load)
            rows.append(row)
            print(json.dumps(row), flush=True)
    info = machine_info()
    print(json.dumps({"machine": info, "load_before": load_before, "load_after": os.getloadavg()}))
    print("\n".join(_table(rows)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
