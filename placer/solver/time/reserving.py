"""The reservation phase of the time-aware pass: each waiting JobSet's start and the domains
held for it, from the schedule (`--schedule cpsat`) or, without an answer from it, the greedy
pass (`reservations.reserve`).

A JobSet with child Jobs of both kinds (workers with an exclusive key, a coordinator without
one) whose coordinator has no room until after its domains' start gets its domains found again
from then (`shared.starts.domains_when_pods_fit`): the phase runs again, with that JobSet's
child Jobs starting no earlier (`Candidate.not_before_s`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from placer.model.cluster import NODE_RESERVATION_KEY, ClusterSnapshot, DomainReservation
from placer.model.options import SolveOptions
from placer.model.workload import JobSetRequest
from placer.solver.time.holding import held_reservations
from placer.solver.time.reservations import Candidate, Reservation, UnitId, reserve
from placer.solver.time.shared.room import NodeRoom
from placer.solver.time.shared.starts import (
    SharedStart,
    domains_when_pods_fit,
    has_mixed,
    has_shared,
    never_beside_domains,
    shared_starts,
)
from placer.solver.time.standing import tiers
from placer.solver.time.units import Units

__all__ = ["ReservationPhase"]


@dataclass(frozen=True)
class ReservationPhase:
    """What the reservation phase plans on, fixed while it runs again."""

    snapshot: ClusterSnapshot
    jobsets: Sequence[JobSetRequest]
    options: SolveOptions
    units: Units
    durations: Mapping[str, float]
    others: tuple[DomainReservation, ...]
    """Reservations of JobSets outside this queue (another controller's): held as they are."""
    overdue: frozenset[str]
    """The JobSets past `--max-wait` (`standing.past_max_wait`), which the greedy pass always
    reserves."""

    def reserve(self, order: Sequence[JobSetRequest]) -> tuple[dict[str, Reservation], list[str]]:
        """Every JobSet of `order` (reservation order) with its start and domains, and what the
        schedule has to say. A JobSet whose pods without an exclusive key fit no node gets none
        (`never_beside_domains`); one whose pods have room only after its domains' start gets
        its domains from then (the module doc)."""
        never = never_beside_domains(self.units, order, self.durations)
        order = [js for js in order if js.key not in never]
        candidates = tuple(self.units.candidate(js, self.durations[js.key]) for js in order)
        notes: list[str] = []

        def find(not_before: Mapping[str, float]) -> dict[str, Reservation]:
            timed = tuple(_not_before(c, not_before.get(c.jobset)) for c in candidates)
            found, said = self._once(order, timed)
            notes[:] = said
            return {r.jobset: r for r in found}

        def starts(
            domains: Mapping[str, Reservation], asked: Collection[str] | None
        ) -> dict[str, SharedStart]:
            # beside the pods without an exclusive key of the JobSets ahead and the domains
            # reserved for later starts; not beside the domains of JobSets starting now, which
            # the inner solve chooses for itself: held, a coordinator the inner solve starts
            # now beside them was moved later (10,000 nodes, 50 such JobSets: a JobSet of the
            # top priority started now became one reserved in 4 h)
            if not has_mixed(self.units.ctx, order):
                return {}
            later = [r for r in domains.values() if r.start_s]
            held = (*self.units.held(later), *self.others)
            judged = shared_starts(
                self.units,
                order,
                self.durations,
                (),
                held,
                domains,
                domains_free=asked is None,
                until=asked,
            )
            last[:] = [(domains, judged)]
            return judged

        last: list[tuple[Mapping[str, Reservation], dict[str, SharedStart]]] = []
        found, _ = domains_when_pods_fit(find, starts, whole_first=False)
        # the pods' nodes beside the domains found: judged already unless found again since
        # (the pods alone, every JobSet with domains asked: judging again cost 0.3 s of a
        # 2.3 s pass at 10,000 nodes with 50 such JobSets, benchmarks/RESULTS-controller.md)
        judged = last[0][1] if last and last[0][0] is found else starts(found, None)
        reservations = _with_nodes(found, judged)
        policy = self.options.time
        if policy.schedule == "cpsat":
            stated = {js.key for js in self.jobsets if js.expected_duration_s is not None}
            order_keys = [js.key for js in order]
            reservations, dropped = held_reservations(
                reservations, order_keys, stated, self.overdue, policy.head
            )
            notes += [dropped] if dropped else []
        never_reserved = {k: Reservation(k, None, None) for k in never}
        return reservations | never_reserved, notes

    def _once(
        self, order: Sequence[JobSetRequest], candidates: tuple[Candidate, ...]
    ) -> tuple[Sequence[Reservation], list[str]]:
        """One pass: the schedule's reservations unless it has no answer, else the greedy
        pass's, per candidate; and the schedule's note."""
        policy = self.options.time
        limit = None if policy.reservations == "all" else policy.head
        if policy.reservations == "none":
            limit = 0
        kept, kept_starts = _kept(self.snapshot, self.units)
        shared = any(has_shared(self.units.ctx, js) for js in order)
        other_holds = self.units.holds(self.others)
        # a fresh room per pass: it keeps the pods of the JobSets it started
        room = NodeRoom(self.units, order, self.durations) if shared else None

        def greedy() -> list[Reservation]:
            return reserve(
                self.units.layout,
                candidates,
                free_at=self.units.free_at,
                limit=limit,
                always=self.overdue,
                kept=kept,
                kept_starts=kept_starts,
                holds=other_holds,
                room=room,
            )

        if policy.schedule != "cpsat":
            return greedy(), []
        # imported here: the schedule is a CP-SAT model, and a greedy policy without it should
        # not load OR-Tools (0.4 s and its memory for `placer plan --solver best-fit`)
        from placer.solver.time.schedule.solve import ScheduleRequest, schedule

        # JobSets without an exclusive key are not in the schedule's model: the greedy pass
        # decides which start now, in queue order, and the domains their pods take are held
        # from now in the schedule (`shared.room`)
        passed: list[Reservation] = []
        closed: list[tuple[UnitId, float, float]] = []
        if room is not None and room.shared:
            passed, closed = greedy(), room.closures()
        now = policy.now or datetime.now(UTC)
        request = ScheduleRequest(
            self.units.layout,
            candidates,
            self.units.free_at,
            (*other_holds, *closed),
            kept,
            tiers(self.jobsets, policy, now),
            policy.max_wait_s,
        )
        outcome = schedule(request, self.options)
        found: Sequence[Reservation] | None = outcome.reservations
        if room is not None and room.shared:
            mine = {r.jobset: r for r in passed if r.jobset in room.shared}
            found = passed if found is None else [mine.get(r.jobset, r) for r in found]
        return (found if found is not None else greedy()), [outcome.note]


def _with_nodes(
    found: Mapping[str, Reservation], starts: Mapping[str, SharedStart]
) -> dict[str, Reservation]:
    """`found`, each later start of a JobSet with child Jobs of both kinds holding the nodes its
    pods without an exclusive key take then (`Reservation.nodes`), when they fit then: the
    inner solve keeps JobSets that would not end by then off them, as off its domains. Without
    them a JobSet started there ran into that start, which moved past the starts reserved
    behind it on its domains, and those JobSets were told they wait for a reservation the plan
    no longer held (a property test found it: tests/solver/reasons/test_reasons_agree.py)."""
    result = dict(found)
    for key, start in starts.items():
        r = result.get(key)
        if r is None or not r.start_s or not any(r.units.values()):
            continue  # none later, or a JobSet without domains: never reserved for
        if start.with_domains and start.start_s == r.start_s:
            result[key] = replace(r, nodes=start.nodes)
    return result


def _not_before(candidate: Candidate, start_s: float | None) -> Candidate:
    """`candidate` starting no earlier than `start_s` (None: as it was)."""
    return candidate if start_s is None else replace(candidate, not_before_s=start_s)


def _kept(
    snapshot: ClusterSnapshot, units: Units
) -> tuple[dict[str, frozenset[UnitId]], dict[str, float]]:
    """The units each JobSet was reserved in an earlier round (`snapshot.reservations`), and
    when that reservation was to start (the order `reserve` re-times them in); a reservation
    naming a domain the cluster no longer has keeps nothing (it is a new one)."""
    kept: dict[str, set[UnitId]] = {}
    starts: dict[str, float] = {}
    stale: set[str] = set()
    for r in snapshot.reservations:
        if r.key == NODE_RESERVATION_KEY:
            continue  # found again with the JobSet's domains (`ReservationPhase.reserve`)
        unit = units.unit_of(r.key, r.path)
        if unit is not None:
            kept.setdefault(r.jobset, set()).add(unit)
            starts[r.jobset] = min(starts.get(r.jobset, r.start_s), r.start_s)
        else:
            stale.add(r.jobset)
    fresh = {k: frozenset(v) for k, v in kept.items() if k not in stale}
    return fresh, {k: starts[k] for k in fresh}
