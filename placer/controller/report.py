"""What one reconcile cycle reports, and the timer that fills in its phases.

The cycle's phases are timed the way the planner times its own (`SolverReport.phases`): wall
seconds per named phase, summed when a phase runs more than once (a cycle may plan and commit in
several rounds).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from placer.controller.act.executor import ExecReport
from placer.controller.decide.decisions import PlannedRound, Review
from placer.controller.decide.ledger import Ledger
from placer.controller.decide.survey import ManagedJobSet
from placer.controller.decide.writes import Write
from placer.model.cluster import ClusterSnapshot

__all__ = ["CycleReport", "PhaseTimer"]


@dataclass
class CycleReport:
    """What one cycle saw, decided and did: for logs, metrics and tests."""

    managed: list[ManagedJobSet]
    review: Review
    planned: PlannedRound
    writes: list[Write]
    executed: ExecReport | None
    snapshot: ClusterSnapshot
    wall_s: float
    wake_in_s: float | None = None
    """Seconds until a pending target's gather window closes (None: nothing waiting)."""
    deferred: list[str] = field(default_factory=list)
    phases: dict[str, float] = field(default_factory=dict)
    """Wall seconds per phase (observe, survey, snapshot, review, plan, commit, write planning,
    writes), summed over the cycle's rounds."""
    rounds: int = 1
    committed: bool | None = None
    """True: the ledger took this cycle's commit; False: other writers kept committing first
    (nothing new written); None: nothing to commit (or a dry run)."""
    refused: dict[str, str] = field(default_factory=dict)
    """Placements the final ledger check refused (JobSet key -> why)."""
    ledger: Ledger | None = None


class PhaseTimer:
    """Accumulates wall time per named phase, the way the planner reports its phases."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.seconds: dict[str, float] = {}

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        start = self.clock()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + self.clock() - start
