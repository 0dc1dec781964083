"""Every write and event one cycle sends, decided without touching the cluster.

The write phase (`reconcile.Controller._write`) used to assemble these inline, between its timer
and the executor; like the commit's ledger change (roundchange.py) it is a pure decision, so it
lives here and `act/executor.execute` only sends it. Two parts, in the order they must happen:
the JobSets' writes and events (`writeplan.plan_writes`), with the evictions in progress seen
afresh when the round chose new ones (their victims are suspended and their beneficiaries wait
in this very cycle, not the next); then, with --kueue-admission-check, placer's check on each
Workload (`kueue.cycle.kueue_writes`, after the ledger commit so that a Ready check never names
a placement the ledger lacks).
"""

from __future__ import annotations

from collections.abc import Set

from placer.controller.decide.kueue.cycle import kueue_writes
from placer.controller.decide.observed import Announced, Reviewed
from placer.controller.decide.plan.planning import PlannedRound
from placer.controller.decide.preempting import Evictions
from placer.controller.decide.records.ledger import EVICTION, entry_key, eviction_time
from placer.controller.decide.records.writes import Write
from placer.controller.decide.round.writeplan import WriteSettings, plan_writes

__all__ = ["round_evictions", "round_writes"]


def round_evictions(reviewed: Reviewed, planned: PlannedRound) -> Evictions:
    """The evictions in progress once this round's are added. A new eviction the ledger has
    not stamped (a dry run commits nothing) is stamped with the round's wall time, as the
    commit would have (roundchange.round_change), so a dry run shows the suspend it would
    write."""
    fresh = {
        entry_key(EVICTION, victim): (
            e if e.at is not None else e.model_copy(update={"at": eviction_time(reviewed.wall_s)})
        )
        for victim, e in planned.evictions.items()
    }
    if not fresh:
        return reviewed.evictions
    return reviewed.observed.evictions({**reviewed.ledger.evictions, **fresh}, planned.placed)


def round_writes(
    reviewed: Reviewed,
    planned: PlannedRound,
    settings: WriteSettings,
    announced: Announced,
    *,
    committed: bool,
    kueue_warned: Set[str],
) -> list[Write]:
    """The cycle's writes in order: the JobSets' (records, ungates or node labels, suspends,
    events), then Kueue's checks and Warnings (`kueue_warned`: those already sent). `planned`
    is the round as committed (`committed`: the ledger took it)."""
    eligible = reviewed.eligibility
    writes = plan_writes(
        reviewed.observed,
        reviewed.review,
        planned,
        settings,
        announced,
        evictions=round_evictions(reviewed, planned),
        preemption_warnings=eligible.warnings if eligible is not None else {},
    )
    writes += kueue_writes(
        reviewed,
        planned,
        committed=committed,
        warned=kueue_warned,
        now=settings.now,
        now_s=settings.now_s,
        hold_s=settings.kueue_hold_s,
    )
    return writes
