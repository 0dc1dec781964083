"""Expected starts for Workloads that wait for Kueue's quota, not for placer.

Kueue puts placer's check on a Workload (state Pending) as soon as it is queued, when the check
applies to every flavor of its ClusterQueue; quota may come much later. Placer plans a JobSet
only once its quota is reserved (kueue/check.py), but a user wants to know when it would start:
each planning round, `estimate_behind` asks the time-aware pass (`expected_starts_behind`) when
every such JobSet could start were its quota reserved now, queued behind everything the round
placed or reserved, and `check_updates` writes that into the check's message, its state left
Pending. Nothing is reserved for them: Kueue decides who gets quota, and in which order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from placer.controller.decide.observe.kueue import KueueView
from placer.controller.decide.observe.survey import ManagedJobSet
from placer.controller.decide.observed import Reviewed
from placer.controller.decide.plan.heldnodes import held_nodes, held_snapshot
from placer.controller.decide.plan.planning import PlannedRound, PlanningInputs
from placer.model.workload import JobSetRequest
from placer.solver.time.behind import expected_starts_behind

__all__ = ["QUOTA_WAIT", "estimate_behind", "quota_waiting"]

QUOTA_WAIT = "waits for Kueue to reserve quota"
"""How the check message of a Workload without quota begins."""


def quota_waiting(view: KueueView, managed: Sequence[ManagedJobSet]) -> list[JobSetRequest]:
    """The JobSets whose Workload has no quota (queued, or evicted) and placer's check Pending."""
    by_key = {ms.key: ms for ms in managed}
    waiting = []
    for key, wl in sorted(view.workloads.items()):
        ms = by_key.get(key)
        if wl.stage != "waiting" or ms is None or ms.finished or ms.request is None:
            continue
        if (wl.entry.get("state") or "Pending") == "Pending":
            waiting.append(ms.request)
    return waiting


def estimate_behind(
    reviewed: Reviewed, inputs: PlanningInputs, planned: PlannedRound
) -> PlannedRound:
    """The round with `behind` set for the quota-waiting JobSets. Estimated when the round
    planned something, or when one of them has no estimate in its message yet; else the round
    as it is (their messages stay as written)."""
    view = reviewed.kueue
    if view is None:
        return planned
    waiting = quota_waiting(view, reviewed.observed.managed)
    fresh = any(
        not str(view.workloads[js.key].entry.get("message") or "").startswith(QUOTA_WAIT)
        for js in waiting
    )
    if not waiting or not (planned.plans or fresh):
        return planned
    if planned.plans:
        plan, snapshot, requests = planned.plans[0]
        outcomes = expected_starts_behind(snapshot, waiting, inputs.options, (plan, requests))
    else:
        held = held_nodes(inputs.records, inputs.foreign, inputs.index, inputs.pods)
        snapshot = held_snapshot(inputs.snapshot, held)
        outcomes = expected_starts_behind(snapshot, waiting, inputs.options)
    return replace(planned, behind={o.key: o for o in outcomes})
