"""The backfill matrix's report: `backfill.md`, `backfill.json`, the plots and `seeds.md`.

`benchmarks.backfill` runs the cells; this turns their rows into what RESULTS-backfill.md
quotes: the targets of issue 11 (`judge`), issue 21's schedule against its baseline
(`reporting.schedule_targets`), each world's shapes and backlog, every run's row, the delay and
utilization plots, and the seed-by-seed spread. Apart from the runner because the tables are
read and tested on their own (a test feeds `judge` hand-made rows) and change for other reasons
than the simulation does.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.reporting.measure import machine_info
from benchmarks.reporting.schedule_targets import judge_schedule
from benchmarks.reporting.seed_spread import spread_table
from benchmarks.simulate.policies import CPSAT
from benchmarks.simulate.results import SimResult
from benchmarks.worlds.simworld import HOUR

__all__ = [
    "heading",
    "judge",
    "plots",
    "runs_table",
    "worlds_table",
    "write_report",
    "write_spread",
]


def runs_table(rows: Sequence[dict[str, Any]]) -> list[str]:
    head = (
        "| fleet | load | estimate | policy | p50 h | p95 h | max h | slowdown | util % | > 24 h "
        "| p95 wide h | p95 narrow h | round median s | round max s |"
    )
    lines = [head, "|" + "---|" * 14]
    for r in rows:
        lines.append(
            f"| {r['world']} | {r['load']:.0%} | {r['estimate']} | {r['policy']} "
            f"| {r['p50_delay_h']:.2f} | {r['p95_delay_h']:.2f} | {r['max_delay_h']:.2f} "
            f"| {r['bounded_slowdown']:.2f} | {100 * r['window_utilization']:.1f} "
            f"| {r['waited_over_24h']} | {r['p95_wide_h']:.2f} | {r['p95_narrow_h']:.2f} "
            f"| {r['round_wall_median_s']:.3f} | {r['round_wall_max_s']:.2f} |"
        )
    return lines


def judge(rows: Sequence[dict[str, Any]], load: float = 0.9) -> list[str]:
    """The issue's targets at `load` with over-estimates, for every cpsat policy with
    reservations on every fleet (no policy picked per fleet after the fact), each met or missed
    with its numbers."""
    lines = [
        "| fleet | policy | p95 <= 0.7x best-fit's and <= easy's | max <= 0.5x best-fit's "
        "| utilization within 1 point of the best | widest quarter's p95 <= 3x the narrowest's "
        "| no estimates: utilization >= cpsat's - 2 points | median round <= 2 s |",
        "|" + "---|" * 8,
    ]

    def verdict(ok: bool) -> str:
        return "met" if ok else "**missed**"

    def cell(fleet: str, estimate: str) -> dict[str, dict[str, Any]]:
        """Policy -> its row on `fleet` at `load` with this kind of runtime estimate."""
        return {
            r["policy"]: r
            for r in rows
            if r["world"] == fleet and r["load"] == load and r["estimate"] == estimate
        }

    for fleet in sorted({r["world"] for r in rows}):
        at, blind = cell(fleet, "over"), cell(fleet, "none")
        if "best-fit" not in at:
            continue
        bf, easy = at["best-fit"], at.get("easy")
        top_util = max(r["window_utilization"] for r in at.values())
        for policy in CPSAT[1:]:
            c = at.get(policy)
            if c is None:
                continue
            p95_cap = min(0.7 * bf["p95_delay_h"], easy["p95_delay_h"] if easy else math.inf)
            wide, narrow = c["p95_wide_h"], c["p95_narrow_h"]
            if policy in blind and "cpsat" in blind:
                drop = blind["cpsat"]["window_utilization"] - blind[policy]["window_utilization"]
                no_estimates = (
                    f"{100 * blind[policy]['window_utilization']:.1f}% vs "
                    f"{100 * blind['cpsat']['window_utilization']:.1f}%: {verdict(drop <= 0.02)}"
                )
            else:
                no_estimates = "not run"
            lines.append(
                f"| {fleet} | {policy} "
                f"| {c['p95_delay_h']:.2f} h vs {p95_cap:.2f}: "
                f"{verdict(c['p95_delay_h'] <= p95_cap)} "
                f"| {c['max_delay_h']:.2f} h vs {0.5 * bf['max_delay_h']:.2f}: "
                f"{verdict(c['max_delay_h'] <= 0.5 * bf['max_delay_h'])} "
                f"| {100 * c['window_utilization']:.1f}% vs {100 * top_util:.1f}%: "
                f"{verdict(c['window_utilization'] >= top_util - 0.01)} "
                f"| {wide:.2f} h vs {narrow:.2f} h: {verdict(wide <= 3 * narrow or wide <= 0.01)} "
                f"| {no_estimates} "
                f"| {c['round_wall_median_s']:.3f} s: {verdict(c['round_wall_median_s'] <= 2.0)} |"
            )
    backlog = {r["world"]: r.get("fluid_backlog_h") for r in rows if r["load"] == load}
    backlog = {w: h for w, h in backlog.items() if h is not None}
    if backlog:
        lines += [
            "",
            "The arrivals' largest fluid backlog (`simworld.fluid_backlog_s`: the longest wait "
            "of a first-come-first-served queue with perfect packing, per child shape over the "
            "domains it fits and over the whole fleet): "
            + ", ".join(f"{w} {h:.2f} h" for w, h in sorted(backlog.items()))
            + ".",
        ]
    return lines


def plots(kept: Sequence[tuple[str, SimResult]], out: Path) -> list[str]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    written: list[str] = []
    for fleet in sorted({f for f, _ in kept}):
        results = [r for f, r in kept if f == fleet]
        fig, ax = plt.subplots(figsize=(7, 4))
        for r in results:
            d = sorted(x / HOUR for x in r.delays_s)
            ax.step(d, [(i + 1) / len(d) for i in range(len(d))], where="post", label=r.policy)
        ax.set_xscale("symlog", linthresh=0.1)
        ax.set_xlabel("queueing delay (h)")
        ax.set_ylabel("share of JobSets")
        written.append(
            _save(fig, ax, f"{fleet}: delay CDF", out / f"backfill-delay-cdf-{fleet}.png")
        )
        fig, ax = plt.subplots(figsize=(7, 4))
        for r in results:
            ts = [t / HOUR for t, _, _ in r.utilization]
            ax.step(
                ts, [100 * u for _, u, _ in r.utilization], where="post", label=r.policy, lw=0.8
            )
        ax.set_xlabel("simulated time (h)")
        ax.set_ylabel("accelerators busy (%)")
        title = f"{fleet}: utilization over time"
        written.append(_save(fig, ax, title, out / f"backfill-utilization-{fleet}.png"))
    return written


def _save(fig: Any, ax: Any, title: str, path: Path) -> str:
    """Title (the cell the plots are of), legend, and the file written; its name."""
    import matplotlib.pyplot as plt

    ax.set_title(f"{title}, 90% load, over-estimated runtimes")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path.name


def worlds_table(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Per simulated world, each child shape's share of the work, the domains that can take its
    child Jobs, and the backlog its arrivals carry (`simworld.shape_pools`)."""
    lines = [
        "| world | load | child shape | domains it fits | share of work | fluid backlog h |",
        "|---|---|---|---|---|---|",
    ]
    seen: set[tuple[str, float]] = set()
    for r in rows:
        if (r["world"], r["load"]) in seen or "shapes" not in r:
            continue
        seen.add((r["world"], r["load"]))
        for label, shape in r["shapes"].items():
            domains = "every free accelerator" if label == "all" else str(shape["domains"])
            lines.append(
                f"| {r['world']} | {r['load']:.0%} | {label} | {domains} "
                f"| {shape['work_share']:.0%} | {shape['fluid_backlog_h']:.1f} |"
            )
    return lines


def heading(title: str, command: str, started: float, done: bool) -> list[str]:
    """A report's title, then its command, wall time and machine (a partial report says so)."""
    wall = time.perf_counter() - started
    state = "" if done else " **Partial: the run was still going when this was written.**"
    machine = ", ".join(f"{k} {v}" for k, v in machine_info().items())
    return [
        f"# {title}",
        "",
        f"Command: `{command}` ({wall / 60:.1f} min).{state} Machine: {machine}.",
    ]


def write_report(
    out: Path,
    command: str,
    started: float,
    rows: list[dict[str, Any]],
    kept: list[Any],
    done: bool,
    matrix_baseline: str,
) -> None:
    written = plots(kept, out)
    lines = [
        *heading("Over time with reservations and backfill", command, started, done),
        "",
        "## Targets",
        "",
        *judge(rows),
        "",
        "## The CP-SAT schedule against the greedy pass (issue 21)",
        "",
        *judge_schedule(rows, matrix_baseline),
        "",
        "## Worlds",
        "",
        *worlds_table(rows),
        "",
        "## Runs",
        "",
        *runs_table(rows),
        "",
        *(f"![{p}]({p})" for p in written),
        "",
    ]
    (out / "backfill.md").write_text("\n".join(lines))
    (out / "backfill.json").write_text(json.dumps(rows, indent=1))


def write_spread(
    out: Path,
    command: str,
    started: float,
    by_seed: dict[int, list[dict[str, Any]]],
    done: bool,
    baseline: str,
) -> None:
    """`seeds.md`: the schedule against `baseline` per seed (`seed_spread`), each seed's own
    report in `seed-N/`."""
    lines = [
        *heading("The CP-SAT schedule over several arrival seeds", command, started, done),
        "Each seed's full report is in `seed-N/backfill.md`.",
        "",
        *spread_table(by_seed, baseline),
        "",
    ]
    (out / "seeds.md").write_text("\n".join(lines))
