"""Placer as a Kueue AdmissionCheck: what Kueue's state changes in a cycle, and the check states.

Kueue reserves quota for a Workload, then waits for every AdmissionCheck of its ClusterQueue to be
Ready before it admits the Workload and unsuspends its JobSet. Placer's check (controllerName
`placer.dev/placement`, read by kueue/workloads.py) turns Ready only with a placement, so a JobSet
is admitted only where it fits, and its pods, gated as every managed JobSet's are, are pinned per
child Job from the ledger once JobSet creates them. Two pure steps of the cycle:

- `kueue_admission` (review): a suspended JobSet whose Workload has quota reserved and placer's
  check Pending is planned with everything else (its priority the Workload's `spec.priority`);
  one whose Workload lost its quota (evicted, preempted, Retry, Rejected) holds nothing: its
  ledger entry is released at once. Re-admitted, it gets the domains of its old record
  annotation back when every one of them is free (review.py), else it is planned anew. Placer
  never preempts a Kueue-managed Workload itself; Kueue owns preemption.
- `check_updates` (after the ledger commit, so the ledger records a placement before its check
  turns Ready, and a controller restarted in between finds the committed entry and turns the
  check Ready without planning again):
    Ready     with `podSetUpdates`: per PodSet the annotation `placer.dev/placement` naming the
              placement, and a nodeSelector of the levels every pod of the PodSet shares;
    Pending   with the reason, and from the time-aware pass the expected start, where, and the
              running JobSets it waits for; a Workload still waiting for quota says so, and
              when it would start were its quota reserved now (kueue/eta.py);
    Retry     once quota has been held past `--kueue-hold-quota`, `requeueAfterSeconds` near the
              expected start, so Kueue lends the quota to others meanwhile;
    Rejected  only when it can never fit (no expected start even on an empty cluster, the verdict
              of `placer explain`), or its JobSet cannot be planned at all (a manifest placer
              refuses, such as a pod template the Priority admission plugin refuses).
  A check whose state, message and updates are already as decided is not written again.
  The texts themselves are messages.py's.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass, field

from placer.controller.decide.kueue.messages import (
    domains_text,
    eta_text,
    quota_wait_message,
)
from placer.controller.decide.observe.kueue import (
    KueueEvent,
    KueueView,
    KueueWorkload,
)
from placer.controller.decide.observe.state import ClusterState
from placer.controller.decide.observe.survey import ManagedJobSet
from placer.controller.decide.plan.planning import PlannedRound
from placer.controller.decide.records.ledger import PLACEMENT, entry_key
from placer.controller.decide.records.writes import (
    ActivateCheck,
    EmitEvent,
    SetAdmissionCheck,
    Write,
)
from placer.controller.decide.review.holder_names import named, token_owners
from placer.controller.decide.review.ledgerplan import LedgerView
from placer.controller.decide.review.review import Review
from placer.model.assignment import PREFIX, Assignment
from placer.model.durations import format_go_duration
from placer.model.kueue.annotations import kueue_spelled
from placer.model.plan import JobSetOutcome
from placer.model.workload import JobSetRequest

__all__ = [
    "DEFAULT_HOLD_QUOTA_S",
    "MESSAGE_MAX",
    "PLACEMENT_ANNOTATION",
    "CheckUpdate",
    "KueueAdmission",
    "check_updates",
    "check_writes",
    "kueue_admission",
    "pod_set_updates",
    "release_evicted",
]

PLACEMENT_ANNOTATION = f"{PREFIX}/placement"
"""The pod-template annotation a Ready check adds: the placement (plan id and domains)."""
DEFAULT_HOLD_QUOTA_S = 300.0
"""How long a Workload may hold reserved quota with placer's check Pending before Retry."""
MESSAGE_MAX = 32768
"""Kueue's limit on a check message."""


@dataclass(frozen=True)
class KueueAdmission:
    managed: tuple[ManagedJobSet, ...]
    """The survey's JobSets as Kueue has them: no record for those that hold nothing, the
    Workload's priority on those to plan."""
    admit: frozenset[str]
    """Suspended JobSets to plan now: quota reserved, placer's check Pending, nothing committed."""
    release: frozenset[str]
    """Ledger entry keys of JobSets whose Workload lost its quota: their domains are free."""


def _with_priority(ms: ManagedJobSet, priority: int | None) -> ManagedJobSet:
    if ms.request is None or priority is None or ms.request.priority == priority:
        return ms
    return dataclasses.replace(ms, request=ms.request.model_copy(update={"priority": priority}))


def kueue_admission(managed: Sequence[ManagedJobSet], view: KueueView) -> KueueAdmission:
    result: list[ManagedJobSet] = []
    admit: set[str] = set()
    release: set[str] = set()
    for ms in managed:
        wl = view.workloads.get(ms.key)
        if wl is None or ms.finished:
            result.append(ms)
            continue
        if wl.stage in ("waiting", "retry", "rejected"):
            if ms.committed:
                release.add(entry_key(PLACEMENT, ms.key))
            result.append(dataclasses.replace(ms, assignment=None, committed=False))
        elif wl.stage == "pending":
            ms = _with_priority(ms, wl.priority)
            if not ms.committed:
                # a record annotation without a ledger entry is from an earlier admission:
                # review gives those domains back if they are all free (a restore target)
                admit.add(ms.key)
            result.append(ms)
        else:
            result.append(ms)
    return KueueAdmission(tuple(result), frozenset(admit), frozenset(release))


def release_evicted(view: LedgerView, release: frozenset[str]) -> LedgerView:
    """The ledger view with `release` (kueue_admission) released and no longer held."""
    if not release:
        return view
    return dataclasses.replace(
        view,
        foreign={k: v for k, v in view.foreign.items() if k not in release},
        release=view.release | release,
    )


@dataclass(frozen=True)
class CheckUpdate:
    """The state placer's check on one Workload should have."""

    workload: KueueWorkload
    state: str
    message: str
    requeue_after_s: int | None = None
    pod_set_updates: tuple[dict[str, object], ...] = ()

    def entry(self, now: str) -> dict[str, object]:
        """The `status.admissionChecks[]` entry: the transition time kept when the state is."""
        old = self.workload.entry
        same = old.get("state") == self.state and old.get("lastTransitionTime")
        entry: dict[str, object] = {
            "name": self.workload.check,
            "state": self.state,
            "lastTransitionTime": old.get("lastTransitionTime") if same else now,
            "message": self.message,
        }
        if self.requeue_after_s is not None:
            entry["requeueAfterSeconds"] = self.requeue_after_s
        if self.pod_set_updates:
            entry["podSetUpdates"] = [dict(u) for u in self.pod_set_updates]
        return entry

    def changes(self) -> bool:
        old = self.workload.entry
        return (
            old.get("state") != self.state
            or (old.get("message") or "") != self.message
            or old.get("requeueAfterSeconds") != self.requeue_after_s
            or list(old.get("podSetUpdates") or []) != [dict(u) for u in self.pod_set_updates]
        )


def _template_selector(request: JobSetRequest, pod_set: str) -> Mapping[str, object]:
    for rj in (request.manifest.get("spec") or {}).get("replicatedJobs") or []:
        if isinstance(rj, Mapping) and rj.get("name") == pod_set:
            pod = ((rj.get("template") or {}).get("spec") or {}).get("template") or {}
            return (pod.get("spec") or {}).get("nodeSelector") or {}
    return {}


def pod_set_updates(record: Assignment, request: JobSetRequest) -> tuple[dict[str, object], ...]:
    """Per PodSet (replicatedJob): the placement annotation, and a nodeSelector of the domain
    levels all its child Jobs share (the common prefix of their domain paths), without keys the
    pod template already selects on (Kueue's updates may only add)."""
    updates: list[dict[str, object]] = []
    for rj in request.replicated_jobs:
        jobs = [record.jobs.get(name) for r, _, name in request.child_jobs() if r.name == rj.name]
        domains = [j.domain for j in jobs if j is not None and j.domain is not None]
        label = record.plan_id or "placed"
        if domains:
            label += " " + domains_text(domains)
        update: dict[str, object] = {"name": rj.name, "annotations": {PLACEMENT_ANNOTATION: label}}
        if domains and len(domains) == len(jobs):
            paths = [tuple(d.path) or ((d.key, d.value),) for d in domains]
            common: list[tuple[str, str]] = []
            for level in zip(*paths, strict=False):
                if any(step != level[0] for step in level):
                    break
                common.append(level[0])
            have = _template_selector(request, rj.name)
            selector = {k: v for k, v in common if k not in have}
            if selector:
                update["nodeSelector"] = selector
        updates.append(update)
    return tuple(updates)


def _outcomes(planned: PlannedRound) -> dict[str, tuple[JobSetOutcome, bool]]:
    """JobSet key -> its last outcome this cycle, and whether the time-aware pass made it."""
    result: dict[str, tuple[JobSetOutcome, bool]] = {}
    for plan, _, _ in planned.plans:
        timed = "reserve" in plan.solver.phases
        for o in plan.jobsets:
            result[o.key] = (o, timed)
    return result


def _waiting(reason: str, outcome: JobSetOutcome, timed: bool, now_s: float, cycle: _Cycle) -> str:
    why = named(reason or outcome.status, cycle.holders, cycle.names)
    message = f"no room for a placement now: {why}"
    eta = eta_text(outcome, now_s, cycle.holders) if timed else ""
    return f"{message}; {eta}" if eta else message


@dataclass(frozen=True)
class _Cycle:
    """What every check decision of one cycle shares."""

    now_s: float
    hold_s: float
    holders: Mapping[str, str]
    """The planner's hold token -> its JobSet (`holder_names.token_owners`)."""
    names: dict[str, str] = field(default_factory=dict)
    """Parts of reasons already named this cycle (`holder_names.named`)."""


def _decide(
    wl: KueueWorkload,
    ms: ManagedJobSet,
    record: Assignment | None,
    found: tuple[JobSetOutcome, bool] | None,
    reason: str,
    cycle: _Cycle,
) -> CheckUpdate | None:
    now_s, hold_s, holders = cycle.now_s, cycle.hold_s, cycle.holders
    if record is not None and ms.request is not None:
        placed = f"placed (plan {record.plan_id})"
        domains = [j.domain for j in record.jobs.values() if j.domain is not None]
        if domains:
            placed += f" on {domains_text(domains)}"
        return CheckUpdate(wl, "Ready", placed, pod_set_updates=pod_set_updates(record, ms.request))
    if ms.request is None:
        # Its manifest cannot be planned (survey's error): no cycle ever places it, so Pending
        # would hold its quota for good. Kueue deactivates it; fixed, it can be reactivated.
        return CheckUpdate(
            wl, "Rejected", f"can never be placed as written: {ms.error}"[:MESSAGE_MAX]
        )
    if found is None:
        return None  # not planned this cycle (gathering, or nothing changed): as it is
    outcome, timed = found
    if outcome.status == "placed":
        return None  # placed, not committed (another writer was first): next cycle
    if timed and outcome.expected_start_seconds is None:
        why = named(reason or outcome.status, holders, cycle.names)
        message = f"can never be placed, not even on an empty cluster: {why}"
        return CheckUpdate(wl, "Rejected", message[:MESSAGE_MAX])
    message = _waiting(reason, outcome, timed, now_s, cycle)
    held = now_s - wl.reserved_since if wl.reserved_since is not None else 0.0
    if held > hold_s:
        start = outcome.expected_start_seconds if timed else None
        requeue = max(1, math.ceil(start)) if start else max(1, math.ceil(hold_s))
        message += (
            f"; quota held {format_go_duration(held)}, over the {format_go_duration(hold_s)} "
            f"hold: Retry, requeue in {format_go_duration(requeue)}"
        )
        return CheckUpdate(wl, "Retry", message[:MESSAGE_MAX], requeue_after_s=requeue)
    return CheckUpdate(wl, "Pending", message[:MESSAGE_MAX])


def check_updates(
    view: KueueView,
    managed: Sequence[ManagedJobSet],
    rev: Review,
    planned: PlannedRound,
    *,
    committed: bool,
    now_s: float,
    hold_s: float = DEFAULT_HOLD_QUOTA_S,
) -> list[CheckUpdate]:
    """The check states to write after this cycle's commit (`committed`: it went through, so
    `planned.placed` is in the ledger). Only changes are returned."""
    by_key = {ms.key: ms for ms in managed}
    outcomes = _outcomes(planned)
    cycle = _Cycle(now_s=now_s, hold_s=hold_s, holders=token_owners(rev))
    updates: list[CheckUpdate] = []
    for key, wl in sorted(view.workloads.items()):
        ms = by_key.get(key)
        if wl.stage == "waiting" and key in planned.behind:
            spelled = ms is not None and ms.request is not None and bool(kueue_spelled(ms.request))
            message = quota_wait_message(planned.behind[key], now_s, cycle.holders, spelled=spelled)
            quota = CheckUpdate(wl, "Pending", message[:MESSAGE_MAX])
            if quota.changes():
                updates.append(quota)
            continue
        if wl.stage != "pending" or ms is None or ms.finished:
            continue
        record = planned.placed.get(key) if committed else None
        if record is None and ms.committed and key in rev.in_force:
            record = rev.in_force[key]
        reason = planned.unschedulable.get(key, "")
        update = _decide(wl, ms, record, outcomes.get(key), reason, cycle)
        if update is not None and update.changes():
            updates.append(update)
    return updates


def check_writes(
    state: ClusterState,
    updates: Sequence[CheckUpdate],
    events: Sequence[KueueEvent],
    warned: Set[str],
    *,
    checks: Set[str],
    now: str,
) -> list[Write]:
    """The writes: `Active` on each of placer's AdmissionChecks that lacks it, each check update
    as a status patch of its Workload (as observed), then the Warning events not sent yet
    (`warned`: names of those sent). Events carry no JobSet, so a JobSet's failed record never
    drops them."""
    writes: list[Write] = []
    for name in sorted(checks):
        check = state.admission_checks.get(name)
        activate = ActivateCheck.on(check, now=now) if check is not None else None
        if activate is not None:
            writes.append(activate)
    for u in updates:
        wl = state.workloads.get(u.workload.key)
        if wl is not None:
            previous = str(u.workload.entry.get("state") or "")
            writes.append(
                SetAdmissionCheck.on(
                    wl, u.entry(now), jobset=u.workload.jobset, previous_state=previous
                )
            )
    for e in events:
        if e.body["metadata"]["name"] not in warned:
            writes.append(EmitEvent(namespace=e.namespace, reason=e.reason, body=e.body))
    return writes
