"""The CP-SAT schedule against its baseline over several arrival seeds (`backfill.py --seeds`).

Issue 21 judges the schedule on one run of seed 1, and one seed's p95 and max are chaotic: a small
rule change reshuffles who waits longest, moving one seed's max by hours either way
(benchmarks/RESULTS-backfill.md, rounds 7-9). Which gains are systematic shows only across seeds,
so this reports, per cell (fleet, load, estimate), every seed's p95 / max / mean bounded slowdown
under the baseline and the schedule, their ratios, the utilization difference, and the geometric
mean of each ratio, with the number of seeds past the 5% rule on p95 or max. It judges nothing:
the issue's verdict stays on seed 1 (`schedule_targets.judge_schedule`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from statistics import geometric_mean
from typing import Any

from benchmarks.reporting.schedule_targets import ELSEWHERE_SLACK, SCHEDULE

__all__ = ["MEASURES", "spread_table"]

MEASURES = ("p95_delay_h", "max_delay_h", "bounded_slowdown")
"""The figures compared per seed, as ratios of the schedule's to the baseline's."""


def _ratio(value: float, base: float) -> float | None:
    """None when the baseline's figure is 0 (nobody waited): no ratio says anything then."""
    return value / base if base > 0 else None


def _triple(row: Mapping[str, Any]) -> str:
    return " / ".join(f"{row[m]:.2f}" for m in MEASURES)


def spread_table(
    rows_by_seed: Mapping[int, Sequence[Mapping[str, Any]]], baseline: str
) -> list[str]:
    """A table per cell run on any seed with both the schedule and `baseline`."""
    cells: dict[tuple[str, float, str], dict[int, dict[str, Mapping[str, Any]]]] = {}
    for seed, rows in rows_by_seed.items():
        for r in rows:
            cell = cells.setdefault((r["world"], r["load"], r["estimate"]), {})
            cell.setdefault(seed, {})[r["policy"]] = r
    lines = [
        f"`{SCHEDULE}` against `{baseline}` on the same arrivals, per seed: p95 h / max h / mean "
        f"bounded slowdown, the ratios, and utilization points; the last row is the geometric "
        f"mean of each ratio and how many seeds are past the {ELSEWHERE_SLACK:.0%} rule on p95 "
        "or max.",
    ]
    for (world, load, estimate), by_seed in sorted(cells.items()):
        pairs = {
            seed: (by[baseline], by[SCHEDULE])
            for seed, by in sorted(by_seed.items())
            if baseline in by and SCHEDULE in by
        }
        if not pairs:
            continue
        lines += [
            "",
            f"### {world}, {load:.0%} load, {estimate} estimates",
            "",
            f"| seed | {baseline} | {SCHEDULE} | ratio p95 / max / slowdown | utilization points |",
            "|" + "---|" * 5,
        ]
        ratios: dict[str, list[float]] = {m: [] for m in MEASURES}
        past = 0
        for seed, (b, s) in pairs.items():
            each = {m: _ratio(s[m], b[m]) for m in MEASURES}
            for m, ratio in each.items():
                if ratio is not None:
                    ratios[m].append(ratio)
            if any((each[m] or 0) > 1 + ELSEWHERE_SLACK for m in MEASURES[:2]):
                past += 1
            shown = " / ".join("-" if x is None else f"{x:.2f}x" for x in each.values())
            points = 100 * (s["window_utilization"] - b["window_utilization"])
            lines.append(f"| {seed} | {_triple(b)} | {_triple(s)} | {shown} | {points:+.1f} |")
        # The geometric mean treats 0.5x and 2x as cancelling out.
        means = " / ".join(
            f"{geometric_mean(ratios[m]):.2f}x" if ratios[m] else "-" for m in MEASURES
        )
        lines.append(
            f"| geometric mean of {len(pairs)} | | | **{means}** | {past} of {len(pairs)} "
            f"past {ELSEWHERE_SLACK:.0%} |"
        )
    return lines
