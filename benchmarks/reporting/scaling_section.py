"""The generated RESULTS.md's scaling section: solver phases, wall time and memory by fleet size,
and `placer plan` end to end as a subprocess.

`benchmarks.report.write_report` calls it when the run measured scaling (`--suite scaling` or
`full`); the rows come from `benchmarks.scaling` as plain dicts, so this module needs no
benchmark code.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from benchmarks.reporting.markdown import cell, table

__all__ = ["scaling_section"]


def scaling_section(scaling: Sequence[dict[str, Any]], e2e: Sequence[dict[str, Any]]) -> list[str]:
    """The scaling suite's rows (`benchmarks.scaling`, one per fleet size, pending count and
    solver) and `placer plan` end to end (`e2e`), as two tables with cpsat's ratio to best-fit."""
    lines = [
        "## Scaling",
        "",
        "TPU fleets of 2-8-host pools (v5e/v6e/v5p), 30% held by running JobSets, pending "
        "JobSets from the trace; each run in a fresh process reading kubectl JSON and JobSet "
        "YAML. *load*: both loaders. Phases are the solver's own (`SolverReport.phases`); "
        "*solve call*: the whole `solve()` (cpsat includes its own checker run, `check`). "
        "Memory: peak RSS of the load and of the solve call, over RSS before each.",
        "",
    ]
    rows = []
    keys = sorted({(r["target_nodes"], r["pending"]) for r in scaling})
    for tn, pending in keys:
        group = {
            r["solver"]: r for r in scaling if r["target_nodes"] == tn and r["pending"] == pending
        }
        for solver, r in sorted(group.items()):
            ph = r["phases"]
            ratio = ""
            if solver == "cpsat" and "best-fit" in group:
                b = group["best-fit"]
                ratio = (
                    f"{r['solve_wall_s'] / b['solve_wall_s']:.1f}x / "
                    f"{(r['solve_wall_s'] + r['load_s']) / (b['solve_wall_s'] + b['load_s']):.1f}x"
                )
            rows.append(
                [
                    r["nodes"],
                    pending,
                    r["domains"],
                    cell(r["domain_classes"]),
                    solver,
                    cell(r["load_s"]),
                    cell(ph.get("aggregate")),
                    cell(ph.get("greedy")),
                    cell(ph.get("build")),
                    cell(ph.get("solve")),
                    cell(ph.get("materialize")),
                    cell(ph.get("check")),
                    cell(r["solve_wall_s"]),
                    ratio,
                    f"{r['status']} {cell(r['gap'], 3)}",
                    r["placed"],
                    cell(r["load_peak_mb"], 0),
                    cell(r["solve_peak_mb"], 0),
                    cell(r["process_peak_mb"], 0),
                ]
            )
    lines += table(
        [
            "nodes",
            "pending",
            "domains",
            "domain classes",
            "solver",
            "load s",
            "aggregate s",
            "greedy s",
            "build s",
            "solve s",
            "materialize s",
            "check s",
            "solve call s",
            "cpsat/best-fit (solve / load+solve)",
            "status gap",
            "placed",
            "load MB",
            "solve MB",
            "process peak MB",
        ],
        rows,
    )
    if e2e:
        lines += [
            "### Planner target: `placer plan` end to end",
            "",
            "Run as a subprocess as below; wall time from spawn to exit. Peak RSS is the "
            "process's VmHWM, printed at exit by `python -m benchmarks.rsswrap placer.cli ...`, "
            "which runs the same module in the same process (getrusage/wait4 would report the "
            "benchmark parent's memory, which Linux carries over exec). Phases from the plan's "
            "JSON (`load` is the CLI's own).",
            "",
        ]
        rows = []
        for r in e2e:
            ph = r["phases"]
            rows.append(
                [
                    r["solver"],
                    r["nodes"],
                    r["pending"],
                    cell(r["wall_s"]),
                    cell(ph.get("load")),
                    cell(ph.get("build")),
                    cell(ph.get("solve")),
                    cell(ph.get("materialize")),
                    cell(
                        sum(
                            v
                            for k, v in ph.items()
                            if k not in ("load", "build", "solve", "materialize")
                        )
                    ),
                    f"{r['status']} {cell(r['gap'], 4)}",
                    r["placed"],
                    cell(r["peak_rss_mb"], 0),
                ]
            )
        lines += table(
            [
                "solver",
                "nodes",
                "pending",
                "wall s",
                "load s",
                "build s",
                "solve s",
                "materialize s",
                "other phases s",
                "status gap",
                "placed",
                "peak RSS MB",
            ],
            rows,
        )
        words = e2e[0]["command"].split()
        words[words.index("--cluster") + 1] = "CLUSTER.json"
        words[-1] = "JOBSETS_DIR"
        lines += [
            "Command: `python " + " ".join(words) + "` (the scenario written by "
            "`benchmarks.worlds.kubectl_export.write_scenario`)",
            "",
        ]
    return lines
