"""Time-aware planning in the controller: reservations in the ledger, running JobSets' timing.

With `--reservations head|all` (or `--max-wait`) the controller plans with `TimeAwareSolver`: a
waiting JobSet gets the domains it is expected to start on, and others may start there only if
they are expected to end before (backfill). Those reservations must outlive a cycle and a
restart, and two controllers must never promise or place conflicting domains, so they live in the
placement ledger, committed with the placements under the same precondition and fence:

- `snapshot_reservations`: the ledger's reservations as `ClusterSnapshot.reservations` (times
  relative to this cycle's instant). The planner keeps a JobSet's reservation where it is while
  it fits (`TimeAwareSolver`, `reservations.reserve(kept=...)`) and plans everyone else around
  it; reservations are read back even when this controller does not reserve itself.
- `reservation_changes`: what the cycle's plans change in the ledger: a reservation put when it
  is new, on other domains, or its expected start moved by more than `RETIME_S`; removed when a
  JobSet planned this cycle no longer has one. Only JobSets planned this cycle are touched.
- `running_jobsets`: when each running JobSet started (its pods' earliest `status.startTime`)
  and how long it is expected to run (the JobSet object's annotation), for the release timeline.
  Computed only while time-aware planning is on, so a cycle without it does no extra work.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from placer.controller.decide.bindings import event_body
from placer.controller.decide.domains import HOLD_PREFIX, hold_token
from placer.controller.decide.ledger import RESERVATION, LedgerEntry, entry_key
from placer.controller.decide.state import ClusterState
from placer.controller.decide.survey import ManagedJobSet, RefMemo, jobset_pods
from placer.controller.decide.writes import EmitEvent
from placer.model.assignment import Assignment, JobAssignment
from placer.model.cluster import ClusterSnapshot, DomainReservation, RunningJobSet
from placer.model.durations import jobset_expected_duration, parse_rfc3339
from placer.model.errors import InputError
from placer.model.options import SolveOptions, TimePolicy
from placer.model.plan import DomainRef, Plan
from placer.solver.time.release import expected_duration_s

__all__ = [
    "DURATION_WARNING",
    "RETIME_S",
    "ReservationChanges",
    "reservation_changes",
    "reserved_message",
    "running_jobsets",
    "snapshot_reservations",
    "time_events",
    "timed_planning",
]

log = logging.getLogger(__name__)

DURATION_WARNING = "InvalidExpectedDuration"
RETIME_S = 300.0
"""A kept reservation's recorded start is rewritten only when it moved by more than this: the
ledger is not rewritten every cycle for a start that drifts by seconds."""


def snapshot_reservations(
    reserved: Iterable[LedgerEntry], now_epoch_s: float
) -> tuple[DomainReservation, ...]:
    result: list[DomainReservation] = []
    for entry in reserved:
        if entry.start is None:
            continue
        start_s = max(0.0, entry.start - now_epoch_s)
        end_s = max(start_s, (entry.end if entry.end is not None else entry.start) - now_epoch_s)
        for _, job in sorted(entry.record.jobs.items()):
            if job.domain is None:
                continue
            path = tuple(job.domain.path) or ((job.domain.key, job.domain.value),)
            result.append(
                DomainReservation(
                    jobset=entry.owner, key=job.domain.key, path=path, start_s=start_s, end_s=end_s
                )
            )
    return tuple(result)


def _domains(entry: LedgerEntry) -> list[DomainRef]:
    return sorted(
        (j.domain for j in entry.record.jobs.values() if j.domain is not None),
        key=lambda d: (d.key, d.path, d.value),
    )


@dataclass(frozen=True)
class ReservationChanges:
    put: dict[str, LedgerEntry]
    remove: frozenset[str]
    announce: dict[str, LedgerEntry]
    """Entry key -> a reservation that is new or on other domains: one `Reserved` event each."""


def reservation_changes(
    plans: Sequence[Plan],
    managed: Sequence[ManagedJobSet],
    reserved: Mapping[str, LedgerEntry],
    now_epoch_s: float,
    policy: TimePolicy,
) -> ReservationChanges:
    """The ledger changes for the reservations of the JobSets these plans covered."""
    by_key = {ms.key: ms for ms in managed}
    outcomes = {o.key: o for plan in plans for o in plan.jobsets}
    put: dict[str, LedgerEntry] = {}
    remove: set[str] = set()
    announce: dict[str, LedgerEntry] = {}
    for key, o in sorted(outcomes.items()):
        ms = by_key.get(key)
        k = entry_key(RESERVATION, key)
        old = reserved.get(k)
        start_s = o.expected_start_seconds
        # a JobSet with a record (placed, or repairing child Jobs) holds its domains already
        if ms is None or o.status == "placed" or ms.assignment is not None:
            if old is not None:
                remove.add(k)
            continue
        if not o.reserved_domains or not start_s:
            if old is not None:
                remove.add(k)
            continue
        domains = sorted(o.reserved_domains, key=lambda d: (d.key, d.path, d.value))
        start = now_epoch_s + start_s
        duration = policy.default_duration_s
        if ms.request is not None:
            duration = expected_duration_s(ms.request, policy)
        entry = LedgerEntry(
            kind=RESERVATION,
            owner=key,
            uid=ms.uid,
            record=Assignment(
                jobset=key,
                jobs={f"r{i}": JobAssignment(domain=d) for i, d in enumerate(domains)},
            ),
            start=start,
            end=start + duration,
        )
        if old is None or _domains(old) != domains:
            put[k] = entry
            announce[k] = entry
        elif old.start is None or abs(old.start - start) > RETIME_S:
            put[k] = entry
    return ReservationChanges(put=put, remove=frozenset(remove), announce=announce)


def reserved_message(entry: LedgerEntry) -> str:
    when = datetime.fromtimestamp(entry.start or 0.0, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    where = ", ".join(f"{d.key}={d.value}" for d in _domains(entry))
    return f"reserved from {when} (expected start): {where}"


def _start_time(pod: Mapping[str, Any]) -> datetime | None:
    text = (pod.get("status") or {}).get("startTime")
    if not isinstance(text, str):
        return None
    try:
        return parse_rfc3339(text, field="status.startTime")
    except InputError:
        return None


def running_jobsets(
    state: ClusterState, snapshot: ClusterSnapshot, refs: RefMemo | None = None
) -> dict[str, RunningJobSet]:
    """Start (earliest pod `status.startTime`) and expected duration of every JobSet running on
    the snapshot's nodes. An unreadable duration leaves the default (the survey warns). `refs`:
    the survey's memo of pod labels, so pods are not read again."""
    on_nodes = {k for n in snapshot.nodes for k in n.jobsets}
    started: dict[str, datetime] = {}
    for key, entries in jobset_pods(state, refs).items():
        if key not in on_nodes:
            continue
        times = [t for e in entries if not e.terminal and (t := _start_time(e.pod)) is not None]
        if times:
            started[key] = min(times)
    result: dict[str, RunningJobSet] = {}
    for key in sorted(on_nodes):
        namespace, _, name = key.partition("/")
        obj = state.jobsets.get((namespace, name))
        seconds, source = None, "default"
        if obj is not None:
            try:
                expected = jobset_expected_duration(obj, source="cluster", key=key)
                seconds, source = expected.seconds, expected.source
            except InputError:
                pass
        if key in started or seconds is not None:
            result[key] = RunningJobSet(
                started_at=started.get(key),
                expected_duration_s=seconds,
                duration_source=source,  # type: ignore[arg-type]
            )
    return result


def time_events(
    managed: Sequence[ManagedJobSet],
    announce: Mapping[str, LedgerEntry],
    warned: Mapping[str, str],
    *,
    now: str,
    instance: str,
) -> list[EmitEvent]:
    """`Reserved` for each reservation just committed new or moved; a Warning for each JobSet
    whose expected duration does not parse (once per message)."""
    events: list[EmitEvent] = []
    by_owner = {e.owner: e for e in announce.values()}
    for ms in managed:
        if ms.warning and warned.get(ms.key) != ms.warning:
            events.append(_event(ms, DURATION_WARNING, ms.warning, "Warning", now, instance))
        entry = by_owner.get(ms.key)
        if entry is not None:
            events.append(_event(ms, "Reserved", reserved_message(entry), "Normal", now, instance))
    return events


def _event(
    ms: ManagedJobSet, reason: str, message: str, type_: str, now: str, instance: str
) -> EmitEvent:
    body = event_body(
        ms.obj, reason=reason, message=message, type_=type_, now=now, instance=instance
    )
    return EmitEvent(jobset=ms.key, namespace=ms.namespace, reason=reason, body=body)


def timed_planning(
    snapshot: ClusterSnapshot,
    state: ClusterState,
    reserved: Mapping[str, LedgerEntry],
    options: SolveOptions,
    wall_s: float,
    *,
    records: Mapping[str, Mapping[str, JobAssignment]],
    foreign: Mapping[str, Mapping[str, JobAssignment]],
    refs: RefMemo | None = None,
) -> tuple[ClusterSnapshot, SolveOptions]:
    """The snapshot and options of a cycle's planning at `wall_s` (epoch seconds): the ledger's
    reservations on the snapshot (honored by every solver) and, with time-aware planning on,
    running JobSets' timing and the planning instant. Without either, both as they are: a cycle
    without reservations does no extra work. `records` (JobSet key -> its recorded child Jobs)
    and `foreign` (holder label -> child Jobs) are the holds the planner adds as tokens: each
    token ends when its JobSet is expected to."""
    policy = options.time
    if not reserved and not policy.active:
        return snapshot, options
    update: dict[str, object] = {"reservations": snapshot_reservations(reserved.values(), wall_s)}
    if policy.active:
        running = {**snapshot.running, **running_jobsets(state, snapshot, refs)}
        update["running"] = {**running, **_holder_timing(records, foreign, running, state)}
        instant = datetime.fromtimestamp(wall_s, UTC)
        options = options.model_copy(update={"time": policy.model_copy(update={"now": instant})})
    return snapshot.model_copy(update=update), options


def _expected(state: ClusterState, owner: str) -> RunningJobSet:
    namespace, _, name = owner.partition("/")
    obj = state.jobsets.get((namespace, name))
    if obj is not None:
        try:
            expected = jobset_expected_duration(obj, source="cluster", key=owner)
        except InputError:
            return RunningJobSet()
        return RunningJobSet(
            expected_duration_s=expected.seconds,
            duration_source=expected.source,
        )
    return RunningJobSet()


def _holder_timing(
    records: Mapping[str, Mapping[str, JobAssignment]],
    foreign: Mapping[str, Mapping[str, JobAssignment]],
    running: Mapping[str, RunningJobSet],
    state: ClusterState,
) -> dict[str, RunningJobSet]:
    """Timing of the hold tokens (domains.hold_token, decisions._holders): their JobSet's, or,
    for a placement whose pods do not run yet, its expected duration from now."""
    owners: dict[str, str] = {}
    for key, jobs in records.items():
        namespace = key.split("/", 1)[0]
        for name in jobs:
            owners[hold_token(namespace, name)] = key
    for label, jobs in foreign.items():
        owner = label.split(".", 1)[-1].replace(".", "/", 1)
        for name in jobs:
            owners[f"{HOLD_PREFIX}{label}:{name}"] = owner
    timing: dict[str, RunningJobSet] = {}
    result: dict[str, RunningJobSet] = {}
    for token, owner in owners.items():
        if owner not in timing:
            timing[owner] = running.get(owner) or _expected(state, owner)
        result[token] = timing[owner]
    return result
