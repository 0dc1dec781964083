"""What one policy's run of the over-time simulation produced, and its summary figures.

Kept apart from the simulation loop (`overtime`) because the readers of a result (the backfill
matrix, the report, `who_waits`, the preemption benchmark and their tests) need its fields and
summary, not the loop that made it; a test can build a `SimResult` by hand to check a reader.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from benchmarks.reporting.stats import percentile
from placer.solver.time.schedule.solve import HintChanges

__all__ = ["SimResult", "time_average"]


@dataclass
class SimResult:
    world: str
    policy: str
    delays_s: list[float]
    never_started: int
    starved: int
    makespan_s: float
    finished: int
    restarts: int
    utilization: list[tuple[float, float, float]]
    """(time, share of all accelerators used by running JobSets, share held including idle
    partial holdings), a step function."""
    mean_utilization: float
    window_utilization: float
    """Mean utilization while JobSets were still arriving (the offered-load period)."""
    window_s: float
    rounds: int
    round_wall_s: list[float]
    checked_plans: int
    priorities: list[int] = field(default_factory=list)
    """Priority of each JobSet, aligned with `delays_s`."""
    preemptions: list[int] = field(default_factory=list)
    """Times each JobSet was preempted, aligned with `delays_s`."""
    lost_chip_hours: float = 0.0
    """Accelerator-hours of work preempted JobSets lost (since their last checkpoint)."""
    busy_chip_hours: float = 0.0
    """Accelerator-hours of all runs (done, lost and cut off at the end)."""
    hint_changes: list[HintChanges] = field(default_factory=list)
    """Per round the CP-SAT schedule searched, what it changed of its greedy hint (from the
    plan's note): how often the solver, not the greedy pass, decided a round."""

    def summary(self) -> dict[str, Any]:
        d = sorted(self.delays_s)
        return {
            "world": self.world,
            "policy": self.policy,
            "p50_delay_s": percentile(d, 50),
            "p95_delay_s": percentile(d, 95),
            "max_delay_s": d[-1] if d else 0,
            "never_started": self.never_started,
            "starved": self.starved,
            "makespan_s": self.makespan_s,
            "finished": self.finished,
            "restarts": self.restarts,
            "mean_utilization": self.mean_utilization,
            "window_utilization": self.window_utilization,
            "rounds": self.rounds,
            "round_wall_median_s": statistics.median(self.round_wall_s) if self.round_wall_s else 0,
            "round_wall_max_s": max(self.round_wall_s, default=0.0),
            "checked_plans": self.checked_plans,
        }


def time_average(steps: Sequence[tuple[float, float, float]], until: float) -> float:
    """Mean of the first value of a step function over [0, until]."""
    if until <= 0:
        return 0.0
    area = 0.0
    for (t0, u, _), (t1, _, _) in zip(steps, [*steps[1:], (until, 0.0, 0.0)], strict=True):
        lo, hi = min(t0, until), min(t1, until)
        area += max(hi - lo, 0.0) * u
    return area / until
