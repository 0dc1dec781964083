"""What one reconcile cycle reports; its phases are timed with the planner's timer.

The cycle's phases are timed the way the planner times its own (`placer.solver.phases.PhaseTimer`,
`SolverReport.phases`): wall seconds per named phase, summed when a phase runs more than once (a
cycle may plan and commit in several rounds).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from placer.controller.act.executor import ExecReport
from placer.controller.decide.observe.survey import ManagedJobSet
from placer.controller.decide.plan.planning import PlannedRound
from placer.controller.decide.records.ledger import Ledger
from placer.controller.decide.records.writes import Write
from placer.controller.decide.review.review import Review
from placer.model.cluster import ClusterSnapshot
from placer.solver.phases import PhaseTimer

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
