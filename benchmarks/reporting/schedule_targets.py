"""Issue 21's targets for the CP-SAT schedule (`cpsat-schedule`), judged on backfill.py's rows.

The schedule is compared with one greedy policy with the same rules, named before the run
(`--baseline`, default `easy-aging`: the greedy pass with the same aging and maximum wait), on
every cell the run has, each target met or missed with its numbers:

- 90% load, over-estimates: p95 and max delay at most `TAIL_RATIO` x the baseline's, mean
  bounded slowdown at most `SLOWDOWN_RATIO` x, utilization within `UTIL_POINTS` of the best policy
  in the cell;
- every other cell: p95, max and utilization never worse than the baseline's by more than
  `ELSEWHERE_SLACK`;
- max delay within `BOUND_RATIO` x the world's fluid backlog where that bound is above the
  baseline's max, else below the baseline's max;
- median round at most `ROUND_S`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = [
    "BOUND_RATIO",
    "ELSEWHERE_SLACK",
    "ROUND_S",
    "SCHEDULE",
    "SLOWDOWN_RATIO",
    "TAIL_RATIO",
    "UTIL_POINTS",
    "judge_schedule",
]

SCHEDULE = "cpsat-schedule"
TAIL_RATIO = 0.85
SLOWDOWN_RATIO = 0.8
UTIL_POINTS = 0.01
ELSEWHERE_SLACK = 0.05
BOUND_RATIO = 1.2
ROUND_S = 2.0


def _verdict(ok: bool) -> str:
    return "met" if ok else "**missed**"


def _ratio(value: float, base: float, cap: float, unit: str = " h") -> str:
    ratio = value / base if base else float("inf") if value else 1.0
    return f"{value:.2f}{unit} vs {base:.2f}{unit} ({ratio:.2f}x): {_verdict(value <= cap * base)}"


def _main_cell(s: dict[str, Any], b: dict[str, Any], top_util: float) -> list[str]:
    return [
        _ratio(s["p95_delay_h"], b["p95_delay_h"], TAIL_RATIO),
        _ratio(s["max_delay_h"], b["max_delay_h"], TAIL_RATIO),
        _ratio(s["bounded_slowdown"], b["bounded_slowdown"], SLOWDOWN_RATIO, ""),
        f"{100 * s['window_utilization']:.1f}% vs best {100 * top_util:.1f}%: "
        f"{_verdict(s['window_utilization'] >= top_util - UTIL_POINTS)}",
    ]


def _other_cell(s: dict[str, Any], b: dict[str, Any]) -> list[str]:
    limit = 1 + ELSEWHERE_SLACK
    util_ok = s["window_utilization"] >= (1 - ELSEWHERE_SLACK) * b["window_utilization"]
    return [
        _ratio(s["p95_delay_h"], b["p95_delay_h"], limit),
        _ratio(s["max_delay_h"], b["max_delay_h"], limit),
        f"slowdown {s['bounded_slowdown']:.2f} vs {b['bounded_slowdown']:.2f}",
        f"{100 * s['window_utilization']:.1f}% vs {100 * b['window_utilization']:.1f}%: "
        f"{_verdict(util_ok)}",
    ]


def _bound(s: dict[str, Any], b: dict[str, Any]) -> str:
    bound = s.get("fluid_backlog_h")
    if bound is None:
        return "no bound"
    if bound > b["max_delay_h"]:
        ok = s["max_delay_h"] <= BOUND_RATIO * bound
        return f"{s['max_delay_h']:.2f} h vs {BOUND_RATIO} x {bound:.2f} h: {_verdict(ok)}"
    ok = s["max_delay_h"] < b["max_delay_h"]
    return f"{s['max_delay_h']:.2f} h vs baseline {b['max_delay_h']:.2f} h: {_verdict(ok)}"


def judge_schedule(rows: Sequence[dict[str, Any]], baseline: str, load: float = 0.9) -> list[str]:
    """A table row per cell holding both `cpsat-schedule` and `baseline`."""
    lines = [
        f"Baseline chosen before the run: `{baseline}`. At {load:.0%} load with over-estimates "
        f"the targets are p95 and max <= {TAIL_RATIO}x, slowdown <= {SLOWDOWN_RATIO}x, "
        f"utilization within {100 * UTIL_POINTS:.0f} point of the best policy; elsewhere p95, "
        f"max and utilization no worse than {ELSEWHERE_SLACK:.0%}.",
        "",
        "| fleet | load | estimate | p95 | max | slowdown | utilization "
        "| max vs fluid backlog | median round |",
        "|" + "---|" * 9,
    ]
    cells = sorted({(r["world"], r["load"], r["estimate"]) for r in rows})
    for world, at, estimate in cells:
        by = {
            r["policy"]: r
            for r in rows
            if (r["world"], r["load"], r["estimate"]) == (world, at, estimate)
        }
        if SCHEDULE not in by or baseline not in by:
            continue
        s, b = by[SCHEDULE], by[baseline]
        if at == load and estimate == "over":
            top = max(r["window_utilization"] for r in by.values())
            measures = _main_cell(s, b, top)
        else:
            measures = _other_cell(s, b)
        wall = s["round_wall_median_s"]
        lines.append(
            f"| {world} | {at:.0%} | {estimate} | "
            + " | ".join(measures)
            + f" | {_bound(s, b)} | {wall:.3f} s: {_verdict(wall <= ROUND_S)} |"
        )
    return lines
