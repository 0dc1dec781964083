"""Static comparison: every policy plans the same snapshot and queue, in one run, on one machine.

Per scenario and policy the row records what was admitted (JobSets, accelerator units, their share
of free capacity, priority-weighted admission), what greedy leaves behind (partial JobSets and what
they hold, stranded accelerators), locality (blocks spanned), and cost: median wall time over
`repeats` runs, cpsat's status and gap, and the peak memory of the solve. Each policy's first plan
is checked by the independent checker before anything is recorded.
"""

from __future__ import annotations

import logging
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from benchmarks.reporting.measure import measure
from benchmarks.reporting.metrics import checked, plan_metrics
from benchmarks.reporting.progress import Progress
from benchmarks.worlds.scenarios import Scenario
from placer.model.options import SolveOptions
from placer.model.plan import Plan
from placer.solver.registry import get_solver

__all__ = ["StaticRow", "run_static"]

log = logging.getLogger(__name__)


@dataclass
class StaticRow:
    scenario: str
    family: str
    tags: list[str]
    nodes: int
    policy: str
    metrics: dict[str, object]
    wall_s: float
    wall_runs: list[float]
    status: str
    gap: float | None
    objective: float
    bound: float | None
    peak_mb: float
    phases: dict[str, float] = field(default_factory=dict)
    checked: bool = False

    def as_dict(self) -> dict[str, object]:
        return dict(self.__dict__)


def _solve_once(
    policy: str, scenario: Scenario, options: SolveOptions
) -> tuple[Plan, float, float]:
    solver = get_solver(policy)
    m = measure(lambda: solver.solve(scenario.snapshot, scenario.requests, options))
    return m.value, m.wall_s, m.peak_mb


def run_static(
    scenarios: Sequence[Scenario],
    policies: Sequence[str],
    options: SolveOptions,
    *,
    repeats: int,
    progress: Progress | None = None,
) -> list[StaticRow]:
    rows: list[StaticRow] = []
    for sc in scenarios:
        sc.snapshot, sc.requests  # noqa: B018 - build once, outside the timed calls
        for policy in policies:
            if progress:
                progress.step(f"static {sc.name} {policy}")
            plans: list[Plan] = []
            walls: list[float] = []
            peaks: list[float] = []
            for _ in range(repeats):
                plan, wall, peak = _solve_once(policy, sc, options)
                plans.append(plan)
                walls.append(wall)
                peaks.append(peak)
            first = plans[0]
            ok = checked(first, sc.snapshot, sc.requests, options, where=f"static {sc.name}")
            metrics = plan_metrics(
                first, sc.snapshot, sc.requests, options, span_level=sc.cluster.span_level
            )
            differing = sum(1 for p in plans[1:] if p.jobsets != first.jobsets)
            if differing:
                log.warning(
                    "%s on %s: %d of %d repeated runs gave a different plan",
                    policy,
                    sc.name,
                    differing,
                    repeats - 1,
                )
            s = first.solver
            rows.append(
                StaticRow(
                    scenario=sc.name,
                    family=sc.family,
                    tags=sorted(sc.tags),
                    nodes=sc.nodes,
                    policy=policy,
                    metrics=metrics.as_dict(),
                    wall_s=statistics.median(walls),
                    wall_runs=walls,
                    status=s.status,
                    gap=s.gap,
                    objective=s.objective,
                    bound=s.bound,
                    peak_mb=max(peaks),
                    phases=dict(s.phases),
                    checked=ok,
                )
            )
            if progress:
                progress.advance()
    return rows
