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
  is new, on other domains, its expected start moved by more than `RETIME_S`, or its JobSet
  passed `--max-wait` (the extender then guards it from now on); removed when a JobSet planned
  this cycle no longer has one. Only JobSets planned this cycle are touched.
- `running_timing`: when each running JobSet started and how long it is expected to run, read
  from this cycle's pods and JobSet objects by the snapshot loaders' own functions
  (`placer.model.snapshots.running`: `running_starts`, `with_expected_durations`), and the same
  for every hold the planner adds. Computed only while time-aware planning is on
  (planning.planning_inputs), so a cycle without it does no extra work.

The `Reserved` events and the warnings about unreadable durations are decided with every other
event, in writeplan.plan_writes.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence, Set
from dataclasses import dataclass
from typing import Any

from placer.controller.decide.observe.domains import Hold
from placer.controller.decide.observe.state import ClusterState
from placer.controller.decide.observe.survey import ManagedJobSet, PodEntry
from placer.controller.decide.records.ledger import RESERVATION, LedgerEntry, entry_key
from placer.model.assignment import Assignment, JobAssignment
from placer.model.cluster import (
    NODE_RESERVATION_KEY,
    ClusterSnapshot,
    DomainReservation,
    RunningJobSet,
)
from placer.model.durations import format_rfc3339
from placer.model.options import TimePolicy
from placer.model.plan import DomainRef, Plan
from placer.model.snapshots.running import running_starts, with_expected_durations
from placer.model.topology import paths_agree
from placer.solver.time.release import expected_duration_s

__all__ = [
    "DURATION_WARNING",
    "RETIME_S",
    "ReservationChanges",
    "reservation_changes",
    "reserved_message",
    "running_timing",
    "snapshot_reservations",
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


def _same_domains(old: Sequence[DomainRef], new: Sequence[DomainRef]) -> bool:
    """The same domains, whichever levels each round named them under: levels come from the
    queue's keys, so a round with JobSets exclusive per block names pool `B0/p0` and one without
    names it `p0`. Each must pair with one of the other of the same key and value whose path
    agrees with it (`paths_agree`, as `Topology.find` resolves them)."""
    if len(old) != len(new):
        return False
    left = list(old)
    for ref in new:
        match = next(
            (
                o
                for o in left
                if o.key == ref.key and o.value == ref.value and paths_agree(o.path, ref.path)
            ),
            None,
        )
        if match is None:
            return False
        left.remove(match)
    return True


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
        # its reserved nodes too, as domains of `NODE_RESERVATION_KEY`: read back by
        # `snapshot_reservations`, they keep closing those nodes after a restart
        nodes = [
            DomainRef(key=NODE_RESERVATION_KEY, value=n, path=[(NODE_RESERVATION_KEY, n)])
            for n in o.reserved_nodes
        ]
        domains = sorted([*o.reserved_domains, *nodes], key=lambda d: (d.key, d.path, d.value))
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
            past_max_wait=o.past_max_wait,
        )
        if old is None or not _same_domains(_domains(old), domains):
            put[k] = entry
            announce[k] = entry
        elif (
            _domains(old) != domains
            or old.start is None
            or abs(old.start - start) > RETIME_S
            or old.past_max_wait != entry.past_max_wait
        ):
            put[k] = entry  # renamed, retimed or now past --max-wait: rewritten, not announced
    return ReservationChanges(put=put, remove=frozenset(remove), announce=announce)


def reserved_message(entry: LedgerEntry) -> str:
    when = format_rfc3339(entry.start or 0.0)
    where = ", ".join(f"{d.key}={d.value}" for d in _domains(entry))
    return f"reserved from {when} (expected start): {where}"


def _manifests(
    state: ClusterState, keys: Iterable[str]
) -> Iterable[tuple[str, str, Mapping[str, Any]]]:
    """(source, key, object) of the JobSets in `keys` the cache holds."""
    for key in sorted(keys):
        namespace, _, name = key.partition("/")
        obj = state.jobsets.get((namespace, name))
        if obj is not None:
            yield "cluster", key, obj


def _pod_starts(
    pods: Mapping[str, list[PodEntry]], keys: Set[str]
) -> Iterator[tuple[str, object, object]]:
    """(JobSet key, `status.phase`, `status.startTime`) of every pod of the JobSets in `keys`."""
    for key, entries in pods.items():
        if key in keys:
            for e in entries:
                status = e.pod.get("status") or {}
                yield key, status.get("phase"), status.get("startTime")


def running_timing(
    state: ClusterState,
    snapshot: ClusterSnapshot,
    holds: Sequence[Hold],
    pods: Mapping[str, list[PodEntry]],
) -> dict[str, RunningJobSet]:
    """`ClusterSnapshot.running` for time-aware planning: the snapshot's, updated for every
    JobSet on its nodes from this cycle's pods (earliest live `status.startTime`) and JobSet
    objects (expected duration; an unreadable one leaves the default, the survey warns), plus
    one entry per hold token (domains.holds): its JobSet's timing, or, for a placement whose
    pods do not run yet, its expected duration from now. `pods`: the survey's
    `jobset_pods(state)`, so pods are not read again."""
    on_nodes = {k for n in snapshot.nodes for k in n.jobsets}
    starts = running_starts(_pod_starts(pods, on_nodes))
    fresh = with_expected_durations(starts, _manifests(state, on_nodes), warn=False)
    running = {**snapshot.running, **fresh}
    waiting = {h.owner for h in holds} - running.keys()
    expected = with_expected_durations({}, _manifests(state, waiting), warn=False)
    timing = {
        h.token: running.get(h.owner) or expected.get(h.owner, RunningJobSet()) for h in holds
    }
    return {**running, **timing}
