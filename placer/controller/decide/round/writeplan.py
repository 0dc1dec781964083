"""`plan_writes`: from this cycle's decisions and the observed objects to the list of writes. Pure.

Order matters and is fixed here: for each JobSet, its record first (so a crash after any later write
finds the record and resumes), then the `Placed` event, then its pods (gate binding) or nodes
(node-labels binding), both built in bindingwrites.py; `Unschedulable` events; cleanup of nodes
released by finished or deleted JobSets; then a Warning for each JobSet whose expected duration
does not parse and a `Reserved` event for each reservation just committed new or moved. With
`--preemption`, each eviction's step (preempting.py): suspend the victim (`Preempted` on it,
`Preempting` on its beneficiaries) or resume it (`Requeued`); a beneficiary's record is written at
once, its pods released (`Placed`) only once the victims' pods left its nodes; a Warning for
unreadable preemption annotations. Every event the controller sends is decided here. Every write
is computed against the observed object and is a no-op if the object is already as intended, so
running `plan_writes` again after a crash writes only what is missing: at most one record and one
event per JobSet per placement, and one update per pod. Called by `roundwrites.round_writes`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from placer.controller.adapter import Obj
from placer.controller.decide.kueue.check import DEFAULT_HOLD_QUOTA_S
from placer.controller.decide.observe.domains import domain_id
from placer.controller.decide.observe.state import ClusterState
from placer.controller.decide.observe.survey import Binding, ManagedJobSet
from placer.controller.decide.observed import Announced, Observed
from placer.controller.decide.plan.planning import PlannedRound
from placer.controller.decide.plan.reserving import DURATION_WARNING, reserved_message
from placer.controller.decide.preempting import PREEMPTION_WARNING, Evictions, EvictionStep
from placer.controller.decide.records.bindings import event_body, event_message
from placer.controller.decide.records.writes import (
    EmitEvent,
    RecordAssignment,
    SuspendJobSet,
    Write,
)
from placer.controller.decide.review.holder_names import named, token_owners
from placer.controller.decide.review.releases import RELEASED_MESSAGE
from placer.controller.decide.review.review import Review
from placer.controller.decide.round.bindingwrites import Hostnames, node_writes, pod_writes
from placer.model.assignment import Assignment

__all__ = ["WriteSettings", "placed_message", "plan_writes"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class WriteSettings:
    binding: Binding
    namespaces: tuple[str, ...] = ()
    now: str = ""
    """RFC 3339 time stamped on events (passed in: the function stays pure)."""
    instance: str = ""
    """This controller replica, for the events' reportingInstance."""
    now_s: float = 0.0
    """`now` in epoch seconds: how long a Kueue Workload has held its quota."""
    kueue_hold_s: float = DEFAULT_HOLD_QUOTA_S
    """How long a Workload may hold quota waiting for a placement (--kueue-hold-quota)."""


def placed_message(record: Assignment) -> str:
    """Derived from the record alone, so a controller restarted after writing the record emits the
    very same event (same deterministic name: the create is a harmless 409 if it was sent)."""
    parts = [
        f"{n} -> {domain_id(j.domain) if j.domain else ','.join(sorted(set(j.nodes.values())))}"
        for n, j in record.jobs.items()
    ]
    return f"placed {len(parts)} child Job(s) (plan {record.plan_id}): " + "; ".join(parts)


def _event_on(
    obj: Obj, key: str, reason: str, message: str, type_: str, settings: WriteSettings
) -> EmitEvent:
    """An event on the JobSet object `obj` (`key`: its namespace/name)."""
    body = event_body(
        obj,
        reason=reason,
        message=message,
        type_=type_,
        now=settings.now,
        instance=settings.instance,
    )
    namespace = key.split("/", 1)[0]
    return EmitEvent(jobset=key, namespace=namespace, reason=reason, body=body)


def _event(
    ms: ManagedJobSet,
    reason: str,
    message: str,
    type_: str,
    settings: WriteSettings,
    *,
    plan_id: str = "",
) -> EmitEvent:
    """An event on a managed JobSet; `plan_id` ties a `Placed` event to its record."""
    event = _event_on(ms.obj, ms.key, reason, message, type_, settings)
    return event.model_copy(update={"plan_id": plan_id}) if plan_id else event


def _mine(key: str, namespaces: tuple[str, ...]) -> bool:
    return not namespaces or key.split("/", 1)[0] in namespaces


def _eviction_writes(
    step: EvictionStep, state: ClusterState, settings: WriteSettings, announced: Announced
) -> list[Write]:
    """The writes of one eviction's step, each derived from the ledger entry and the observed
    objects alone (the events' names too). An event goes with the write it reports, and is sent
    again in each later step until this process has sent it: a controller restarted between the
    write and its event sends the event then (answered 409 when it exists). The victim's writes
    are its controller's (`--namespace`), the beneficiaries' events theirs."""
    entry, victim = step.entry, step.victim
    beneficiaries = ", ".join(entry.beneficiaries)
    writes: list[Write] = []

    def event(obj: Obj, key: str, reason: str, message: str) -> None:
        if (reason, key, step.id) not in announced.evictions:
            w = _event_on(obj, key, reason, message, "Normal", settings)
            writes.append(w.model_copy(update={"plan_id": step.id}))

    mine = victim is not None and _mine(entry.owner, settings.namespaces)
    if step.phase == "suspend" and entry.at is not None and victim is not None and mine:
        writes.append(SuspendJobSet.evict(entry.owner, victim, entry.at))
    if step.phase == "suspend" or step.suspended:
        if victim is not None and mine:
            event(
                victim,
                entry.owner,
                "Preempted",
                f"preempted for {beneficiaries}: {entry.note}; suspended, it returns to the "
                "queue once its pods are gone",
            )
        for b in entry.beneficiaries:
            namespace, _, name = b.partition("/")
            obj = state.jobsets.get((namespace, name))
            if obj is not None and _mine(b, settings.namespaces):
                message = f"preempting {entry.owner} ({entry.note}); placed once its pods are gone"
                event(obj, b, "Preempting", message)
    if victim is not None and mine and (step.phase == "resume" or step.resumed):
        if step.phase == "resume":
            writes.append(SuspendJobSet.resume(entry.owner, victim))
        event(
            victim,
            entry.owner,
            "Requeued",
            f"its pods are gone after its preemption for {beneficiaries}: resumed, it waits "
            "for a new placement",
        )
    return writes


def _time_events(
    managed: Sequence[ManagedJobSet],
    planned: PlannedRound,
    announced: Announced,
    settings: WriteSettings,
    preemption_warnings: Mapping[str, str],
) -> list[Write]:
    """A Warning for each JobSet whose expected duration or preemption annotations do not parse
    (once per message); `Reserved` for each reservation this round committed new or moved."""
    events: list[Write] = []
    by_owner = {e.owner: e for e in planned.reserved.values()}
    for ms in managed:
        if ms.warning and announced.duration_warnings.get(ms.key) != event_message(ms.warning):
            events.append(_event(ms, DURATION_WARNING, ms.warning, "Warning", settings))
        bad = preemption_warnings.get(ms.key)
        if bad and announced.preemption_warnings.get(ms.key) != event_message(bad):
            events.append(_event(ms, PREEMPTION_WARNING, bad, "Warning", settings))
        entry = by_owner.get(ms.key)
        if entry is not None:
            events.append(_event(ms, "Reserved", reserved_message(entry), "Normal", settings))
    return events


def _record_write(ms: ManagedJobSet, annotation: str | None) -> RecordAssignment:
    """The JobSet's record set to `annotation` (None: cleared), decided on the text it has."""
    return RecordAssignment(
        jobset=ms.key,
        namespace=ms.namespace,
        name=ms.name,
        uid=ms.uid,
        resource_version=ms.resource_version,
        previous=ms.annotation,
        annotation=annotation,
    )


def _release_writes(ms: ManagedJobSet, settings: WriteSettings) -> list[Write]:
    """A suspended JobSet released (releases.py): its record annotation cleared, then one
    `Released` event. Nothing once the annotation is gone."""
    if ms.annotation is None:
        return []
    return [_record_write(ms, None), _event(ms, "Released", RELEASED_MESSAGE, "Normal", settings)]


def plan_writes(
    observed: Observed,
    rev: Review,
    planned: PlannedRound,
    settings: WriteSettings,
    announced: Announced | None = None,
    evictions: Evictions | None = None,
    preemption_warnings: Mapping[str, str] | None = None,
) -> list[Write]:
    """Every write this cycle needs, in the order they must happen.

    `planned.placed` holds only placements already committed to the ledger. A committed record the
    JobSet's annotation does not show yet (the controller stopped between the two writes, or the
    commit was made in an earlier round) is written first, like a new one. `announced` says which
    events were already sent: the same `Unschedulable` reason is not repeated, and a record this
    process has not announced (new, or found on start) gets its `Placed` event; after a restart
    that is one create per JobSet, answered 409 when the event already exists. `evictions`: the
    evictions in progress (this round's new ones included), see preempting.py.
    """
    announced = announced or Announced()
    evictions = evictions or Evictions()
    evicting = evictions.victims
    state, managed, index = observed.state, observed.managed, observed.index
    hostnames = Hostnames(state)
    writes: list[Write] = []
    labeled: list[tuple[str, Assignment]] = []
    unschedulable_events: list[Write] = []
    owners = token_owners(rev)  # reasons name JobSets, not hold tokens (holder_names)
    names: dict[str, str] = {}
    for step in evictions.steps:
        writes.extend(_eviction_writes(step, state, settings, announced))
    for ms in managed:
        if ms.finished or ms.evicting or ms.key in evicting:
            continue
        if ms.released:
            writes.extend(_release_writes(ms, settings))
            continue
        new = planned.placed.get(ms.key)
        record = new or rev.in_force.get(ms.key)
        reason = planned.unschedulable.get(ms.key) or rev.invalid.get(ms.key)
        if reason:
            reason = named(reason, owners, names)
        if ms.key in rev.broken and new is None and reason:
            problems = "; ".join(f"{j}: {why}" for j, why in sorted(rev.broken[ms.key].items()))
            reason = f"{problems}; cannot re-place: {reason}"
        if reason and announced.unschedulable.get(ms.key) != event_message(reason):
            unschedulable_events.append(_event(ms, "Unschedulable", reason, "Warning", settings))
        rewrite = new is None and record is not None and ms.committed
        if rewrite and record is not None and ms.annotation == record.to_annotation():
            rewrite = False
        if new is not None or rewrite:
            assert record is not None
            writes.append(_record_write(ms, record.to_annotation()))
        if record is None and ms.key in rev.broken and ms.assignment is not None:
            # Not repaired: its domains stay held (labels kept), but no pod is released into them.
            labeled.append((ms.key, ms.assignment))
            continue
        if record is None:
            continue
        if ms.key in evictions.waiting:
            log.info(
                "%s: waiting for the pods of %s to leave its nodes",
                ms.key,
                ", ".join(evictions.waiting[ms.key]),
            )
            continue
        if (ms.key, record.plan_id) not in announced.placed:
            message = placed_message(record)
            writes.append(_event(ms, "Placed", message, "Normal", settings, plan_id=record.plan_id))
        labeled.append((ms.key, record))
        if settings.binding == "gate":
            writes.extend(pod_writes(ms, record, hostnames))
    writes.extend(unschedulable_events)
    if settings.binding == "node-labels":
        writes.extend(node_writes(labeled, state, index, settings.namespaces))
    writes.extend(_time_events(managed, planned, announced, settings, preemption_warnings or {}))
    return writes
