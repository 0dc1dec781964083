"""`Replanner`: plans the queue again with one change, against a budget of re-plans.

The remedy search (`remedies.py`) and the eviction and defrag remedies (`evict.py`) each ask
"does the JobSet fit if ...?" by a re-plan through the same solver and options; this is the one
place that re-plans, memoizes a change asked twice and stops once the budget is spent, so that
`placer explain` stays bounded on a large queue.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from placer.model.cluster import ClusterSnapshot
from placer.model.options import SolveOptions
from placer.model.plan import JobPlacement, Plan
from placer.model.workload import JobSetRequest
from placer.solver.progress import SILENT, ProgressHook
from placer.solver.registry import get_solver

__all__ = ["Replanner"]


@dataclass
class Replanner:
    """Plans the queue again with one change; counts re-plans against a budget."""

    snapshot: ClusterSnapshot
    jobsets: list[JobSetRequest]
    options: SolveOptions
    solver: str = "cpsat"
    budget: int = 24
    used: int = 0
    notes: list[str] = field(default_factory=list)
    progress: ProgressHook = SILENT
    """Told before each re-plan (`used` of `budget`), so a terminal can show a bar."""
    _memo: dict[tuple[str, ...], list[JobPlacement] | None] = field(default_factory=dict)

    def try_plan(
        self,
        key: str,
        *,
        snapshot: ClusterSnapshot | None = None,
        jobsets: Sequence[JobSetRequest] | None = None,
        memo: tuple[str, ...] | None = None,
    ) -> list[JobPlacement] | None:
        """Where JobSet `key` goes in the re-plan, or None if it is not placed (or out of budget).

        `memo` names the change, so asking about the same change twice plans once.
        """
        if memo is not None and memo in self._memo:
            return self._memo[memo]
        jobs = self._plan(key, snapshot, jobsets)
        if memo is not None:
            self._memo[memo] = jobs
        return jobs

    def spend(self) -> bool:
        """Count one re-plan against the budget; False (and a note) once it is spent."""
        if self.used >= self.budget:
            note = f"remedy search stopped after {self.budget} re-plans"
            if note not in self.notes:
                self.notes.append(note)
            return False
        self.progress.step(self.used, self.budget, f"re-plan {self.used + 1}")
        self.used += 1
        return True

    def _plan(
        self,
        key: str,
        snapshot: ClusterSnapshot | None,
        jobsets: Sequence[JobSetRequest] | None,
    ) -> list[JobPlacement] | None:
        if not self.spend():
            return None
        snap = snapshot or self.snapshot
        queue = list(jobsets if jobsets is not None else self.jobsets)
        # only where the JobSet goes is read: no reasons for those left out
        options = self.options.model_copy(update={"export_model_path": None, "reasons": False})
        plan: Plan = get_solver(self.solver).solve(snap, queue, options)
        outcome = plan.outcome(key)
        return list(outcome.jobs) if outcome.status == "placed" else None
