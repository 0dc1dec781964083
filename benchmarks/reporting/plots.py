"""PNG plots for RESULTS.md: admitted accelerators, utilization over time, the scaling curve.

matplotlib with the Agg backend (no display needed in CI); each function takes the rows the run
produced and writes one file, returning its path, so the report links exactly what was drawn.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

__all__ = ["plot_scaling", "plot_static", "plot_utilization"]

_COLORS = {
    "cpsat": "#1b7837",
    "first-fit": "#d6604d",
    "best-fit": "#4393c3",
    "largest-first": "#9970ab",
}


def _color(policy: str) -> str:
    return _COLORS.get(policy, "#777777")


def plot_static(rows: Sequence[Any], policies: Sequence[str], path: Path) -> Path:
    """Grouped bars: accelerator units admitted per scenario and policy, as share of free."""
    scenarios = list(dict.fromkeys(r.scenario for r in rows))
    fig, ax = plt.subplots(figsize=(max(8, 1.2 * len(scenarios)), 4.5))
    width = 0.8 / max(len(policies), 1)
    for i, policy in enumerate(policies):
        values = []
        for sc in scenarios:
            match = [r for r in rows if r.scenario == sc and r.policy == policy]
            values.append(float(match[0].metrics["share_of_free"]) * 100 if match else 0.0)
        xs = [k + (i - (len(policies) - 1) / 2) * width for k in range(len(scenarios))]
        ax.bar(xs, values, width, label=policy, color=_color(policy))
    ax.set_xticks(range(len(scenarios)))
    ax.set_xticklabels(scenarios, rotation=30, ha="right")
    ax.set_ylabel("accelerators admitted, % of free")
    ax.set_title("Static comparison: accelerators admitted per scenario and policy")
    ax.legend(ncol=len(policies), fontsize="small", loc="upper right")
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _binned(
    steps: Sequence[tuple[float, float, float]], bins: int
) -> tuple[list[float], list[float]]:
    """Time averages of a step function over equal bins: readable where raw steps flicker."""
    end = steps[-1][0]
    if end <= 0:
        return [0.0], [0.0]
    width = end / bins
    xs, ys = [], []
    k = 0
    for b in range(bins):
        lo, hi = b * width, (b + 1) * width
        area = 0.0
        while k + 1 < len(steps) and steps[k + 1][0] <= lo:
            k += 1
        j = k
        while j < len(steps) and steps[j][0] < hi:
            t0 = max(steps[j][0], lo)
            t1 = min(steps[j + 1][0] if j + 1 < len(steps) else end, hi)
            area += max(t1 - t0, 0.0) * steps[j][1]
            j += 1
        xs.append((lo + hi) / 2)
        ys.append(area / width)
    return xs, ys


def plot_utilization(results: Sequence[Any], path: Path, bins: int = 120) -> Path:
    """Share of accelerators used by running JobSets, time-averaged in bins, one panel per fleet."""
    worlds = list(dict.fromkeys(r.world for r in results))
    fig, axes = plt.subplots(len(worlds), 1, figsize=(10, 3.4 * len(worlds)), squeeze=False)
    styles = ["-", "--", "-.", ":"]
    for ax, world in zip(axes[:, 0], worlds, strict=True):
        for i, r in enumerate(x for x in results if x.world == world):
            xs, ys = _binned(r.utilization, bins)
            ax.plot(
                [t / 3600 for t in xs],
                [u * 100 for u in ys],
                styles[i % len(styles)],
                label=r.policy,
                color=_color(r.policy),
                linewidth=1.3,
            )
            ax.axvline(r.window_s / 3600, color="#999999", linewidth=0.8, linestyle=":")
        ax.set_title(f"Utilization over time: {world} (dotted line: last arrival)")
        ax.set_xlabel("hours")
        ax.set_ylabel("% accelerators in use")
        ax.set_ylim(0, 100)
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small", loc="upper right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_scaling(rows: Sequence[dict[str, Any]], path: Path) -> Path:
    """Log-log: solver call and load + solve wall time against nodes, one line per solver.

    Points are (nodes, pending) configurations in order of size; each is labeled with its queue.
    """
    fig, ax = plt.subplots(figsize=(8, 5))
    for solver in sorted({r["solver"] for r in rows}):
        pts = sorted(
            (r["nodes"], r["pending"], r["solve_wall_s"], r["solve_wall_s"] + r["load_s"])
            for r in rows
            if r["solver"] == solver
        )
        xs = [p[0] for p in pts]
        ax.plot(xs, [p[2] for p in pts], marker="o", color=_color(solver), label=f"{solver}: solve")
        ax.plot(
            xs,
            [p[3] for p in pts],
            marker="x",
            linestyle="--",
            color=_color(solver),
            alpha=0.6,
            label=f"{solver}: load + solve",
        )
        for n, pending, solve, _ in pts:
            ax.annotate(
                f"{pending}j",
                (n, solve),
                textcoords="offset points",
                xytext=(4, -10),
                fontsize="x-small",
                color=_color(solver),
            )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("nodes (labels: pending JobSets)")
    ax.set_ylabel("wall seconds")
    ax.set_title("Scaling: wall time against cluster size")
    ax.grid(which="both", alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
