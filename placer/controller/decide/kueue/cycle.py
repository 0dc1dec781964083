"""What one controller cycle does with Kueue, with `--kueue-admission-check`: two pure steps.

The reconcile loop calls `kueue_survey` at the start of review (which JobSets Kueue lets placer
plan, and which placements to release because Kueue took the quota back) and `kueue_writes`
after the ledger commit (placer's check on each Workload, then Kueue's Warnings). Kept out of
reconcile.py so that the loop only orders phases; the decisions are check.py's and
workloads.py's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence, Set

from placer.controller.decide.kueue.check import (
    KueueAdmission,
    check_updates,
    check_writes,
    kueue_admission,
)
from placer.controller.decide.observe.kueue import KueueView, read_kueue
from placer.controller.decide.observed import Observed, Reviewed
from placer.controller.decide.plan.planning import PlannedRound
from placer.controller.decide.records.writes import Write

__all__ = ["kueue_survey", "kueue_writes"]


def kueue_survey(
    observed: Observed, *, namespaces: Sequence[str], now: str
) -> tuple[Observed, KueueView, KueueAdmission]:
    """Kueue's view of this round, and the observation with the survey as Kueue has it: a
    suspended JobSet whose Workload holds quota is planned, at the Workload's priority
    (check.kueue_admission). `now`: RFC 3339, stamped on the events the view raises."""
    view = read_kueue(
        observed.state,
        {ms.key: ms.request for ms in observed.managed},
        now=now,
        namespaces=namespaces,
    )
    admission = kueue_admission(observed.managed, view)
    return dataclasses.replace(observed, managed=admission.managed), view, admission


def kueue_writes(
    reviewed: Reviewed,
    planned: PlannedRound,
    *,
    committed: bool,
    warned: Set[str],
    now: str,
    now_s: float,
    hold_s: float,
) -> list[Write]:
    """Placer's check on each Workload it decided on (after the ledger commit, so a Ready check
    never names a placement the ledger lacks), then the Warnings not sent yet (`warned`). None
    without Kueue's view (`reviewed.kueue`: --kueue-admission-check off)."""
    view = reviewed.kueue
    if view is None:
        return []
    observed = reviewed.observed
    updates = check_updates(
        view,
        observed.managed,
        reviewed.review,
        planned,
        committed=committed,
        now_s=now_s,
        hold_s=hold_s,
    )
    return check_writes(observed.state, updates, view.events, warned, checks=view.checks, now=now)
