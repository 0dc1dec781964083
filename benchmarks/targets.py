"""The issue's targets, judged against what the run measured: met, not met, or not measured.

Verdicts are computed, never written by hand, and every one shows the numbers it rests on, so a
reader can disagree with the rule and still use the data. Ties are called ties: a scenario where
cpsat admits exactly what the best greedy admits is listed as such.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from benchmarks.static import StaticRow

__all__ = ["Verdict", "evaluate", "lexicographic_at_least", "ties"]

GREEDY = ("first-fit", "best-fit", "largest-first")


@dataclass(frozen=True)
class Verdict:
    target: str
    measured: str
    status: str
    """"met", "not met", or "not measured"."""


def _units(row: StaticRow) -> int:
    return cast(int, row.metrics["units_admitted"])


def _tiers(row: StaticRow) -> list[int]:
    tiers = cast(dict[str, int], row.metrics["units_by_tier"])
    return [tiers[k] for k in sorted(tiers, key=int, reverse=True)]


def lexicographic_at_least(a: StaticRow, b: StaticRow) -> bool:
    """Is `a` at least `b` tier by tier, highest priority first (the planner's objective order)?"""
    return _tiers(a) >= _tiers(b)


def _by_scenario(rows: Sequence[StaticRow]) -> dict[str, dict[str, StaticRow]]:
    out: dict[str, dict[str, StaticRow]] = {}
    for r in rows:
        out.setdefault(r.scenario, {})[r.policy] = r
    return out


def _gain(a: int, b: int) -> float:
    return (a - b) / b if b else (0.0 if a == 0 else float("inf"))


def _pct(x: float) -> str:
    return "inf" if x == float("inf") else f"{x * 100:+.1f}%"


def ties(rows: Sequence[StaticRow]) -> list[str]:
    """Scenarios where cpsat admits exactly the units of the best greedy policy."""
    out = []
    for sc, pol in _by_scenario(rows).items():
        if "cpsat" in pol and any(g in pol for g in GREEDY):
            best = max(_units(pol[g]) for g in GREEDY if g in pol)
            if _units(pol["cpsat"]) == best:
                which = [g for g in GREEDY if g in pol and _units(pol[g]) == best]
                out.append(f"{sc} (ties {', '.join(which)} at {best} units)")
    return out


def _never_below(rows: Sequence[StaticRow]) -> Verdict:
    target = "cpsat never below any greedy, on any scenario"
    groups = _by_scenario(rows)
    if not any("cpsat" in p for p in groups.values()):
        return Verdict(target, "cpsat not run", "not measured")
    below_total, below_lex, n = [], [], 0
    for sc, pol in groups.items():
        if "cpsat" not in pol:
            continue
        for g in GREEDY:
            if g not in pol:
                continue
            n += 1
            if _units(pol["cpsat"]) < _units(pol[g]):
                below_total.append(f"{sc} vs {g} ({_units(pol['cpsat'])} < {_units(pol[g])})")
            if not lexicographic_at_least(pol["cpsat"], pol[g]):
                below_lex.append(f"{sc} vs {g}")
    measured = (
        f"{n} comparisons; below tier by tier (the planner's objective: higher priority "
        f"first): {len(below_lex)}"
        + (f" ({'; '.join(below_lex)})" if below_lex else "")
        + f"; below in total units: {len(below_total)}"
        + (f" ({'; '.join(below_total)})" if below_total else "")
    )
    if below_lex:
        status = "not met"
    elif below_total:
        status = "met tier by tier, not in total units"
    else:
        status = "met"
    return Verdict(target, measured, status)


def _fragmented(rows: Sequence[StaticRow]) -> list[Verdict]:
    groups = {
        sc: pol
        for sc, pol in _by_scenario(rows).items()
        if "cpsat" in pol and "fragmented" in next(iter(pol.values())).tags
    }
    out = []
    for other, need in (("best-fit", 0.10), ("first-fit", 0.20)):
        target = (
            f"fragmented exclusive-domain scenarios: >= {need:.0%} more accelerators than {other}"
        )
        parts, met = [], 0
        for sc, pol in sorted(groups.items()):
            if other not in pol:
                continue
            g = _gain(_units(pol["cpsat"]), _units(pol[other]))
            met += g >= need
            parts.append(f"{sc} {_pct(g)}")
        if not parts:
            out.append(Verdict(target, "no fragmented scenario with both policies", "not measured"))
            continue
        status = "met" if met == len(parts) else "not met"
        out.append(Verdict(target, f"met on {met} of {len(parts)}: " + ", ".join(parts), status))
    return out


def _hetero(rows: Sequence[StaticRow]) -> Verdict:
    target = "above largest-first on the median heterogeneous scenario"
    gains = []
    for sc, pol in sorted(_by_scenario(rows).items()):
        if "cpsat" in pol and "largest-first" in pol and "heterogeneous" in pol["cpsat"].tags:
            gains.append((sc, _gain(_units(pol["cpsat"]), _units(pol["largest-first"]))))
    if not gains:
        return Verdict(target, "no heterogeneous scenario run with cpsat", "not measured")
    median = statistics.median(g for _, g in gains)
    measured = (
        f"median gain {_pct(median)} over {len(gains)} seeds ("
        + ", ".join(f"{sc} {_pct(g)}" for sc, g in gains)
        + ")"
    )
    return Verdict(target, measured, "met" if median > 0 else "not met")


def _overtime(summaries: Sequence[dict[str, Any]], load: float) -> list[Verdict]:
    worlds = sorted({s["world"] for s in summaries})
    target = f"over time at {load:.0%} offered load: lower p95 queueing delay than best-fit"
    target2 = f"over time at {load:.0%} offered load: no JobSet starved (> 1 h)"
    by = {(s["world"], s["policy"]): s for s in summaries}
    if not any((w, "cpsat") in by for w in worlds):
        return [
            Verdict(target, "cpsat not simulated", "not measured"),
            Verdict(target2, "cpsat not simulated", "not measured"),
        ]
    parts, met, starved, n = [], 0, [], 0
    for w in worlds:
        c, b = by.get((w, "cpsat")), by.get((w, "best-fit"))
        if c is None:
            continue
        starved.append(f"{w}: {c['starved']} starved, {c['never_started']} never started")
        if b is not None:
            n += 1
            met += c["p95_delay_s"] < b["p95_delay_s"]
            parts.append(
                f"{w}: cpsat {c['p95_delay_s'] / 3600:.2f} h vs best-fit "
                f"{b['p95_delay_s'] / 3600:.2f} h"
            )
    total_starved = sum(by[(w, "cpsat")]["starved"] for w in worlds if (w, "cpsat") in by)
    return [
        Verdict(
            target,
            "; ".join(parts) or "best-fit not simulated",
            ("met" if met == n else "not met") if n else "not measured",
        ),
        Verdict(target2, "; ".join(starved), "met" if total_starved == 0 else "not met"),
    ]


def _scale(scaling: Sequence[dict[str, Any]]) -> Verdict:
    target = "50,000 nodes and 1,000 pending JobSets in < 10 s end to end, <= 5x best-fit's time"
    pts = {r["solver"]: r for r in scaling if r["target_nodes"] == 50_000 and r["pending"] == 1000}
    if "cpsat" not in pts:
        return Verdict(target, "not run in this suite", "not measured")
    c = pts["cpsat"]
    e2e = c["load_s"] + c["solve_wall_s"]
    measured = (
        f"cpsat load {c['load_s']:.1f} s + solve call {c['solve_wall_s']:.1f} s = {e2e:.1f} s"
    )
    ok = e2e < 10
    if "best-fit" in pts:
        b = pts["best-fit"]
        be2e = b["load_s"] + b["solve_wall_s"]
        ratio_e2e = e2e / be2e
        ratio_solve = c["solve_wall_s"] / b["solve_wall_s"]
        measured += (
            f"; best-fit {be2e:.1f} s; ratio {ratio_e2e:.1f}x end to end, "
            f"{ratio_solve:.1f}x solve call only"
        )
        ok = ok and ratio_e2e <= 5
    return Verdict(target, measured, "met" if ok else "not met")


def _planner(e2e: Sequence[dict[str, Any]]) -> list[Verdict]:
    target = (
        "~10,000 nodes, 300 pending: `placer plan` end to end <= 15 s on 2 cores, "
        "cpsat OPTIMAL or within 1%, peak memory < 2 GB"
    )
    rows = [r for r in e2e if r["solver"] == "cpsat"]
    if not rows:
        return [Verdict(target, "not run in this suite", "not measured")]
    if rows[0]["nodes"] < 9000:
        return [
            Verdict(
                target,
                f"only {rows[0]['nodes']} nodes in this suite (run --suite full)",
                "not measured",
            )
        ]
    wall = statistics.median(r["wall_s"] for r in rows)
    peak = max(
        (r["peak_rss_mb"] for r in rows if r["peak_rss_mb"] is not None), default=float("inf")
    )
    r = rows[0]
    ok_status = r["status"] == "OPTIMAL" or (r["gap"] is not None and r["gap"] <= 0.01)
    measured = (
        f"{wall:.1f} s wall (median of {len(rows)}), {r['status']} gap "
        f"{'-' if r['gap'] is None else format(r['gap'], '.4f')}, "
        f"peak RSS {peak:.0f} MB, {r['nodes']} nodes"
    )
    ok = wall <= 15 and ok_status and peak < 2048
    return [Verdict(target, measured, "met" if ok else "not met")]


def evaluate(
    static: Sequence[StaticRow],
    sims: Sequence[dict[str, Any]],
    load: float,
    scaling: Sequence[dict[str, Any]],
    e2e: Sequence[dict[str, Any]],
) -> list[Verdict]:
    return [
        _never_below(static),
        *_fragmented(static),
        _hetero(static),
        *_overtime(sims, load),
        _scale(scaling),
        *_planner(e2e),
    ]
