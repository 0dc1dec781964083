"""Scaling: wall time and memory per phase from 1k to 50k nodes, cpsat and best-fit side by side.

Each measurement runs in a fresh Python process (`python -m benchmarks.scaling ...`), so one run's
memory never hides in another's, and reads the scenario the way a user's run would: kubectl JSON
through `load_snapshot`, JobSet YAML through `load_jobsets`. Phases: `load` (both loaders, timed
here), then the solver's own `SolverReport.phases` (cpsat: snapshot, aggregate, greedy, build,
solve, materialize, check; greedy: one phase). Memory is the peak RSS of the load and of the solve
call, each over the RSS before it (see `measure`); the phases inside one solve call share a peak.

The planner target (issue 2) is measured end to end as the user runs it: `python -m placer.cli plan
--cluster X.json --format json JOBSETS_DIR` as a subprocess, timed, with its peak RSS reported by
`benchmarks.rsswrap`, which runs that same module in the same process (wait4's ru_maxrss would
include the benchmark parent's memory: Linux carries it over exec).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.reporting.measure import measure, peak_rss_mb
from benchmarks.reporting.metrics import checked
from benchmarks.reporting.progress import Progress
from benchmarks.rsswrap import MARKER
from benchmarks.worlds.kubectl_export import write_scenario
from benchmarks.worlds.scenarios import build_tpu_pool_fleet
from placer.model.options import SolveOptions

__all__ = ["HOSTS_PER_POOL", "ScalePoint", "measure_point", "run_end_to_end", "run_scaling"]

HOSTS_PER_POOL = 4.8
"""Mean hosts per pool of `build_tpu_pool_fleet` (2/4/8 hosts weighted 30/35/35)."""


@dataclass(frozen=True)
class ScalePoint:
    nodes: int
    pending: int


def _prepare(point: ScalePoint, seed: int, root: Path) -> tuple[Path, Path, int]:
    pools = max(3, round(point.nodes / HOSTS_PER_POOL))
    sc = build_tpu_pool_fleet(seed, pools, point.pending)
    cluster, jobsets = write_scenario(
        sc.cluster, sc.queue, root / f"{point.nodes}n-{point.pending}j"
    )
    return cluster, jobsets, sc.nodes


def _worker(
    cluster: str, jobsets: str, solver_name: str, options: SolveOptions, check: bool
) -> dict[str, Any]:
    """Runs inside the child process: load, solve, report (timed and measured separately)."""
    from placer.model.jobset.parse import load_jobsets
    from placer.model.snapshots.load import load_snapshot
    from placer.solver.context import PlacementContext
    from placer.solver.registry import get_solver

    loaded = measure(lambda: load_snapshot([cluster]))
    snapshot = loaded.value
    js_loaded = measure(lambda: load_jobsets([jobsets], priorities=snapshot.priorities))
    requests = js_loaded.value
    solver = get_solver(solver_name)
    solved = measure(lambda: solver.solve(snapshot, requests, options))
    plan = solved.value
    out: dict[str, Any] = {
        "solver": solver_name,
        "nodes": len(snapshot.nodes),
        "pending": len(requests),
        "load_s": loaded.wall_s + js_loaded.wall_s,
        "load_peak_mb": max(loaded.peak_mb, js_loaded.peak_mb),
        "solve_wall_s": solved.wall_s,
        "solve_peak_mb": solved.peak_mb,
        "phases": dict(plan.solver.phases),
        "status": plan.solver.status,
        "objective": plan.solver.objective,
        "bound": plan.solver.bound,
        "gap": plan.solver.gap,
        "placed": sum(1 for o in plan.jobsets if o.status == "placed"),
        "units": plan.accelerators_admitted,
        "exact_peak": solved.exact_peak,
    }
    ctx = PlacementContext(snapshot, requests, options)
    out["domains"] = len(ctx.exclusive_domains)
    from placer.solver.cpsat import aggregate

    out["domain_classes"] = len(aggregate(ctx).domain_classes)
    out["checked"] = (
        checked(plan, snapshot, requests, options, where=f"scaling {cluster}") if check else False
    )
    out["process_peak_mb"] = max(
        loaded.peak_abs_mb, js_loaded.peak_abs_mb, solved.peak_abs_mb, peak_rss_mb()
    )
    return out


def measure_point(
    cluster: Path, jobsets: Path, solver: str, options: SolveOptions, *, check: bool = True
) -> dict[str, Any]:
    """One (scenario, solver) measurement in a fresh interpreter."""
    cmd = [
        sys.executable,
        "-m",
        "benchmarks.scaling",
        "--cluster",
        str(cluster),
        "--jobsets",
        str(jobsets),
        "--solver",
        solver,
        "--time-limit",
        str(options.time_limit_s),
        "--workers",
        str(options.workers),
        *([] if check else ["--no-check"]),
    ]
    proc = subprocess.run(
        cmd, capture_output=True, text=True, check=False, cwd=Path(__file__).resolve().parents[1]
    )
    if proc.returncode != 0:
        raise RuntimeError(f"scaling worker failed ({' '.join(cmd)}):\n{proc.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def run_scaling(
    points: Sequence[ScalePoint],
    solvers: Sequence[str],
    options: SolveOptions,
    *,
    seed: int,
    workdir: Path | None = None,
    progress: Progress | None = None,
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="placer-scaling-", dir=workdir) as tmp:
        for point in points:
            if progress:
                progress.step(f"scaling: generating {point.nodes} nodes, {point.pending} pending")
            t0 = time.perf_counter()
            cluster, jobsets, nodes = _prepare(point, seed, Path(tmp))
            gen_s = time.perf_counter() - t0
            size_mb = cluster.stat().st_size / 2**20
            for solver in solvers:
                if progress:
                    progress.step(f"scaling {nodes} nodes {point.pending} pending {solver}")
                row = measure_point(cluster, jobsets, solver, options)
                row.update(target_nodes=point.nodes, json_mb=size_mb, generate_s=gen_s)
                rows.append(row)
                if progress:
                    progress.advance()
    return rows


def run_end_to_end(
    point: ScalePoint,
    solvers: Sequence[str],
    options: SolveOptions,
    *,
    seed: int,
    repeats: int = 1,
    workdir: Path | None = None,
    progress: Progress | None = None,
) -> list[dict[str, Any]]:
    """`placer plan` as a user runs it, per solver: wall time, peak RSS, the solver's report."""
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="placer-e2e-", dir=workdir) as tmp:
        if progress:
            progress.step(f"end to end: generating {point.nodes} nodes, {point.pending} pending")
        cluster, jobsets, nodes = _prepare(point, seed, Path(tmp))
        for solver in solvers:
            cmd = [
                sys.executable,
                "-m",
                "benchmarks.rsswrap",
                "placer.cli",
                "plan",
                "--cluster",
                str(cluster),
                "--format",
                "json",
                "--solver",
                solver,
                "--time-limit",
                str(options.time_limit_s),
                str(jobsets),
            ]
            for _ in range(repeats):
                if progress:
                    progress.step(f"end to end {nodes} nodes: placer plan --solver {solver}")
                rows.append(_timed_cli(cmd, solver, nodes, point.pending))
                if progress:
                    progress.advance()
    return rows


def _timed_cli(cmd: list[str], solver: str, nodes: int, pending: int) -> dict[str, Any]:
    """Spawn, wait, read output from temporary files; peak RSS as `rsswrap` reports it."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.run(
            cmd, stdout=out, stderr=err, cwd=Path(__file__).resolve().parents[1], check=False
        )
        wall = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    if proc.returncode != 0:
        raise RuntimeError(f"placer plan failed ({proc.returncode}): {stderr[-2000:]}")
    peaks = [line.split("=", 1)[1] for line in stderr.splitlines() if line.startswith(MARKER)]
    doc = json.loads(stdout)
    report = doc.get("solver", {})
    statuses = [js.get("status") for js in doc.get("jobsets", [])]
    return {
        "solver": solver,
        "nodes": nodes,
        "pending": pending,
        "wall_s": wall,
        "peak_rss_mb": int(peaks[-1]) / 1024 if peaks else None,
        "status": report.get("status"),
        "objective": report.get("objective"),
        "bound": report.get("bound"),
        "gap": report.get("gap"),
        "phases": report.get("phases", {}),
        "placed": statuses.count("placed"),
        "command": " ".join(["-m", *cmd[3:]]),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.scaling", description="one scaling measurement (internal)"
    )
    parser.add_argument("--cluster", required=True)
    parser.add_argument("--jobsets", required=True)
    parser.add_argument("--solver", required=True)
    parser.add_argument("--time-limit", type=float, default=10.0)
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--no-check", action="store_true")
    args = parser.parse_args(argv)
    options = SolveOptions(time_limit_s=args.time_limit, workers=args.workers)
    result = _worker(args.cluster, args.jobsets, args.solver, options, not args.no_check)
    sys.stdout.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
