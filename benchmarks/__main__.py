"""`python -m benchmarks run --suite smoke|quick|full`: run a suite, write RESULTS.md and plots.

Runs the static comparison, the over-time simulation, the scaling points and the planner's end-to-
end target of the chosen suite with every solver in the registry (cpsat only if it imports), then
judges the issue's targets and writes `RESULTS.md`, `results.json` and `plots/*.png` into `--out`.
The default is a fresh scratch directory (its path is printed), so a trial run never overwrites
the committed report; `--out benchmarks/` replaces it on purpose. Progress goes to stderr (a bar
on a terminal); the report is the only output.
"""

from __future__ import annotations

import argparse
import logging
import os
import shlex
import sys
import tempfile
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from benchmarks.report import RunRecord, write_report
from benchmarks.reporting.measure import machine_info
from benchmarks.reporting.plots import plot_scaling, plot_static, plot_utilization
from benchmarks.reporting.progress import Progress
from benchmarks.scaling import run_end_to_end, run_scaling
from benchmarks.simulate.overtime import simulate
from benchmarks.static import run_static
from benchmarks.suites import SUITES, Suite
from benchmarks.targets import evaluate
from benchmarks.worlds.scenarios import STATIC_BUILDERS, hetero
from benchmarks.worlds.simworld import build_world
from placer.model.options import SolveOptions
from placer.solver.registry import SOLVER_NAMES

__all__ = ["main", "run_suite"]

log = logging.getLogger("benchmarks")
SCALING_POLICIES = ("cpsat", "best-fit")


def _available(policies: Sequence[str]) -> list[str]:
    out = []
    for p in policies:
        if p == "cpsat":
            try:
                import placer.solver.cpsat  # noqa: F401
            except ImportError as e:
                log.warning("cpsat is not available (%s): running the greedy policies only", e)
                continue
        out.append(p)
    return out


def run_suite(
    suite: Suite,
    out: Path,
    *,
    policies: Sequence[str],
    seed: int,
    command: str,
    parts: Sequence[str],
    show_progress: bool = True,
) -> Path:
    started = datetime.now(UTC)
    load_before = os.getloadavg()
    policies = _available(policies)
    scaling_policies = [p for p in SCALING_POLICIES if p in policies]
    steps = 0
    if "static" in parts:
        steps += (len(suite.static) + len(suite.hetero_seeds)) * len(policies)
    if "overtime" in parts:
        steps += len(suite.sims) * len(policies)
    if "scaling" in parts:
        steps += len(suite.scaling) * len(scaling_policies)
        if suite.end_to_end:
            steps += len(scaling_policies) * suite.e2e_repeats
    progress = Progress(steps, label=f"suite {suite.name}", enabled=show_progress)
    options = SolveOptions(time_limit_s=suite.time_limit_s)
    sim_options = SolveOptions(time_limit_s=suite.sim_time_limit_s)
    rec = RunRecord(
        suite=suite.name,
        command=command,
        started=started,
        finished=started,
        machine=machine_info(),
        load_before=load_before,
        load_after=load_before,
        settings={
            "policies": policies,
            "seed": seed,
            "static_size": suite.size,
            "repeats": suite.repeats,
            "time_limit_s": suite.time_limit_s,
            "sim_time_limit_s": suite.sim_time_limit_s,
            "sim": suite.sim.__dict__,
            "workers": options.workers or "all cores",
        },
    )
    plots_dir = out / "plots"
    plots_dir.mkdir(parents=True, exist_ok=True)

    if "static" in parts:
        scenarios = [STATIC_BUILDERS[name](seed, suite.size) for name in suite.static]
        scenarios += [hetero(s, suite.size) for s in suite.hetero_seeds]
        rec.static = run_static(
            scenarios, policies, options, repeats=suite.repeats, progress=progress
        )
        rec.plots["accelerators admitted"] = str(
            plot_static(rec.static, policies, plots_dir / "static-accelerators.png").relative_to(
                out
            )
        )
    if "overtime" in parts:
        for kind in suite.sims:
            world = build_world(kind, seed, suite.sim)
            rec.sim_worlds.append(
                {
                    "name": world.name,
                    "jobsets": len(world.queue),
                    "dropped": world.dropped,
                    "capacity_units": world.capacity_units,
                    "total_units": world.total_units,
                    "span_h": world.queue[-1].arrival_s / 3600,
                    "offered_load": world.offered_load,
                    "shape_loads": world.shape_loads,
                }
            )
            rec.sims += simulate(world, policies, sim_options, suite.sim, progress=progress)
        if rec.sims:
            rec.plots["utilization over time"] = str(
                plot_utilization(rec.sims, plots_dir / "utilization.png").relative_to(out)
            )
    if "scaling" in parts and scaling_policies:
        rec.scaling = run_scaling(
            suite.scaling, scaling_policies, options, seed=seed, progress=progress
        )
        if suite.end_to_end:
            rec.e2e = run_end_to_end(
                suite.end_to_end,
                scaling_policies,
                options,
                seed=seed,
                repeats=suite.e2e_repeats,
                progress=progress,
            )
        rec.plots["scaling"] = str(
            plot_scaling(rec.scaling, plots_dir / "scaling.png").relative_to(out)
        )
    progress.close()
    checked = [r.checked for r in rec.static] + [bool(r["checked"]) for r in rec.scaling]
    rec.checked_plans = sum(checked) + sum(r.checked_plans for r in rec.sims)
    rec.unchecked_plans = (
        len(checked) - sum(checked) + sum(r.rounds - r.checked_plans for r in rec.sims)
    )
    rec.verdicts = evaluate(
        rec.static, [r.summary() for r in rec.sims], suite.sim.load, rec.scaling, rec.e2e
    )
    rec.finished = datetime.now(UTC)
    rec.load_after = os.getloadavg()
    return write_report(rec, out)


def _scratch_dir(suite: str) -> Path:
    """A new directory for one run's report, e.g. /tmp/placer-benchmarks/quick-20261201-061500."""
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    root = Path(tempfile.gettempdir()) / "placer-benchmarks"
    root.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f"{suite}-{stamp}-", dir=root))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks", description=__doc__.splitlines()[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run a benchmark suite and write the report")
    run.add_argument("--suite", choices=sorted(SUITES), default="quick")
    run.add_argument(
        "--out",
        type=Path,
        default=None,
        help="directory for RESULTS.md, results.json and plots/ (default: a new scratch "
        "directory under the system's temp dir; `--out benchmarks/` replaces the committed report)",
    )
    run.add_argument(
        "--policies",
        default=",".join(SOLVER_NAMES),
        help="comma-separated solver names (default: all four)",
    )
    run.add_argument(
        "--parts",
        default="static,overtime,scaling",
        help="comma-separated subset of static,overtime,scaling",
    )
    run.add_argument("--seed", type=int, default=1)
    run.add_argument("--no-progress", action="store_true")
    run.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    argv_text = " ".join(shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv))
    out = args.out if args.out is not None else _scratch_dir(args.suite)
    print(f"benchmarks: writing to {out}", file=sys.stderr)
    try:
        path = run_suite(
            SUITES[args.suite],
            out,
            policies=[p for p in args.policies.split(",") if p],
            seed=args.seed,
            command=f"python -m benchmarks {argv_text}",
            parts=[p for p in args.parts.split(",") if p],
            show_progress=not args.no_progress,
        )
    except FileNotFoundError as e:
        print(f"benchmarks: error: {e}", file=sys.stderr)
        return 2
    print(f"wrote {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
