"""Time-aware planning around any solver: reservations for waiting JobSets, backfill for the rest.

A solver alone plans who starts now. Round after round that starves wide JobSets: whatever frees up
is taken by narrower ones. `TimeAwareSolver` wraps any solver (CP-SAT or greedy, so the benchmarks
compare policies, not implementations) and adds when:

  timeline    when each running JobSet is expected to end (`release.ReleaseTimeline`)
  units       every domain of the queue's exclusive keys, with the time it frees up, and per
              replicated job the domains that could take a child Job once empty (`units`)
  reserve     in queue order (priority, plus aging: `standing`), each JobSet's earliest start
              and the domains it will take then (`reservations.reserve`): `head` stops after
              the first N that must wait (EASY backfill), `all` goes through the queue
              (conservative); a JobSet waiting past `max_wait_s` always gets one; with
              `--schedule cpsat` the schedule decides them, and a JobSet without a stated run
              time holds its reservation only at the head or past `max_wait_s` (`holding`)
  solve       the inner solver plans now, with the future reservations on the snapshot: a domain
              reserved from time t is open only to its JobSet and to JobSets expected to end by t
              (`PlacementContext.domain_open_to`), and so are its nodes to pods without an
              exclusive key (`node_open_to`). JobSets the pass starts now form a tier above
              every other for this solve, so no other choice delays them, ordered within by
              their own priorities
  annotate    expected start, reserved domains, backfill and who each waits for, per JobSet
              (`annotate`)

Why an event-driven pass around the one model rather than a time-indexed CP-SAT model: the pass is
linear in events x domains and runs every round at fleet scale, and the joint optimization stays
where it pays, in who starts now. Reservations cover child Jobs with an exclusive key, and the
nodes the other pods of a JobSet with both kinds take at its reserved start
(`Reservation.nodes`); a JobSet of such pods alone is planned now, never reserved for, and
kept off reserved nodes it would not leave in time. A JobSet made only of such pods starts now
only if its pods fit, node by node, at its turn in queue order, and the domains they take are
then closed to the JobSets behind it (`shared.room`); left out, it is timed node by node
(`shared_starts`), and so are the pods without an exclusive key of a JobSet that has both
kinds, from its domains' start on.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime

from placer.model.cluster import NODE_RESERVATION_KEY, ClusterSnapshot, DomainReservation
from placer.model.options import SolveOptions, TimePolicy
from placer.model.plan import DomainRef, Plan
from placer.model.workload import JobSetRequest
from placer.solver.interface import Solver
from placer.solver.phases import PhaseTimer
from placer.solver.time.annotate import Annotator
from placer.solver.time.evicting import plan_evicting_first
from placer.solver.time.release import ReleaseTimeline, expected_duration_s
from placer.solver.time.reservations import Reservation, reserve
from placer.solver.time.reserving import ReservationPhase
from placer.solver.time.shared.starts import SharedStart, domains_when_pods_fit, starts_beside
from placer.solver.time.standing import past_max_wait, reservation_order
from placer.solver.time.units import Units

__all__ = [
    "TimeAwareSolver",
    "planned_on",
    "reservations_of",
]


class TimeAwareSolver:
    """Any solver, planning when every waiting JobSet starts as well as who starts now."""

    def __init__(self, inner: Solver) -> None:
        self.inner = inner
        self.name = inner.name
        self._repeatable = bool(getattr(inner, "repeatable", False))
        """The inner solver gives the same plan for the same input (the greedy ones; CP-SAT's
        search is bounded by wall time): see `solve`'s trial solves."""

    def solve(
        self, snapshot: ClusterSnapshot, jobsets: Sequence[JobSetRequest], options: SolveOptions
    ) -> Plan:
        if options.preemption.mode == "lower-priority":
            return plan_evicting_first(
                snapshot, jobsets, options, evict=self.inner.solve, plan_round=self.solve
            )
        policy = options.time
        now = policy.now or datetime.now(UTC)
        started = time.perf_counter()
        timer = PhaseTimer()
        with timer("timeline"):
            timeline = ReleaseTimeline.of_policy(snapshot, policy, now)
            units = Units(snapshot, jobsets, options, timeline)
        with timer("reserve"):
            durations = {js.key: expected_duration_s(js, policy) for js in jobsets}
            order = sorted(jobsets, key=lambda js: reservation_order(js, policy, now))
            reservations: dict[str, Reservation] = {}
            notes: list[str] = []
            # reservations of JobSets outside this queue (another controller's): held as they are
            queued = {js.key for js in jobsets}
            others = tuple(r for r in snapshot.reservations if r.jobset not in queued)
            overdue = past_max_wait(jobsets, policy, now)
            if policy.active:
                phase = ReservationPhase(
                    snapshot, jobsets, options, units, durations, others, overdue
                )
                reservations, notes = phase.reserve(order)
        start_now = {k for k, r in reservations.items() if r.start_s == 0}
        held = units.held([r for r in reservations.values() if r.start_s]) + others
        inner_snapshot = snapshot.model_copy(update={"reservations": held})
        # above every other, and among themselves in the order of their own priorities: in one
        # tier CP-SAT's objective did not see them, and started a priority-0 JobSet on the pools
        # a priority-10 one queued ahead of it needed (one without an exclusive key, which the
        # pass then counted as starting now whatever the room). The issue-21 cell repeats to the
        # digit.
        top = max((js.priority for js in jobsets), default=0) + 1
        ranks = {p: i for i, p in enumerate(sorted({js.priority for js in jobsets}))}
        inner_jobsets = [
            js.model_copy(
                update={"priority": top + ranks[js.priority], "declared_priority": js.priority}
            )
            if js.key in start_now
            else js
            for js in jobsets
        ]
        plan = self.inner.solve(inner_snapshot, inner_jobsets, options)
        # the first solve's phases; solving again for JobSets it left out is `start-now`, so the
        # phases add up to no more than the wall time (a second solve doubled it unseen)
        inner_phases = plan.solver.phases
        # trial solves are compared and mostly dropped: a repeatable inner solver makes them
        # without reasons and solves the one kept again with them, the same plan
        trial = options.model_copy(update={"reasons": False}) if self._repeatable else options

        def solve_with(rest: tuple[DomainReservation, ...], opts: SolveOptions = trial) -> Plan:
            return self.inner.solve(
                snapshot.model_copy(update={"reservations": rest}), inner_jobsets, opts
            )

        with timer("start-now"):
            plan, kept, pins = _keep_start_now(
                lambda pins: solve_with(held + units.held(pins)),
                plan,
                units,
                reservations,
                start_now,
            )
            plan, released, rest = _release_started(
                solve_with, plan, held + units.held(pins), durations
            )
            solved_on = rest if rest is not None else held + units.held(pins) if pins else None
            if solved_on is not None and trial is not options:
                plan = solve_with(solved_on, options)
        notes += kept + released
        with timer("estimate"):
            placed = [o for o in plan.jobsets if o.status == "placed"]
            running_now = {o.key for o in placed}
            # a later reservation of a JobSet the plan starts now holds nothing: released, or
            # kept only because the plan without it lost a JobSet; counted, it made a JobSet
            # started on its domains "backfill" and timed others behind it
            held = tuple(r for r in held if r.jobset not in running_now)
            estimates, shared = _estimated(units, plan, order, reservations, held, durations)
            priorities = {js.key: js.priority for js in jobsets}
            after = Annotator(units, reservations, estimates, held, priorities, overdue, shared)
            outcomes = [after.outcome(o) for o in plan.jobsets]
        report = plan.solver.model_copy(
            update={
                "phases": {**timer.seconds, **inner_phases},
                "wall_seconds": time.perf_counter() - started,
                "notes": [*plan.solver.notes, *notes],
            }
        )
        return plan.model_copy(update={"jobsets": outcomes, "solver": report})


def _keep_start_now(
    solve: Callable[[list[Reservation]], Plan],
    plan: Plan,
    units: Units,
    reservations: dict[str, Reservation],
    start_now: set[str],
) -> tuple[Plan, list[str], list[Reservation]]:
    """The inner solve's plan, solved again while it leaves out a JobSet the pass starts now
    because another took its domains; a note, and the reservations it held them to, when it
    was.

    A greedy inner solver places the JobSets starting now one by one, each on the domain it
    likes best, and may take the one the pass meant for another, which then finds no room: a
    priority-0 JobSet started where a priority-10 one was to (found by a property test; in the
    TPU over-time benchmark a priority-1000 JobSet waited while two of priority 100 started).
    Each time, the JobSets so left out are held to the pass's domains from now, and the others
    keep choosing theirs (holding every JobSet starting now to the pass's domains took the TPU
    fleet's p95 at 90% load, over-estimates, from 34.07 h to 36.57 h: RESULTS-backfill, round
    11). A new plan is kept only if it starts more of them."""
    pinned: set[str] = set()
    kept: set[str] = set()
    for _ in range(len(start_now)):
        displaced = set(_displaced(units, plan, reservations, start_now)) - pinned
        if not displaced:
            break
        pinned |= displaced
        again = solve([reservations[k] for k in sorted(pinned)])
        if _placed(again, start_now) <= _placed(plan, start_now):
            break
        plan, kept = again, set(pinned)
    if not kept:
        return plan, [], []
    pins = [reservations[k] for k in sorted(kept)]
    return (
        plan,
        [
            f"start now: solved again with {', '.join(sorted(kept))} held to the domains the "
            "pass gave them, which other JobSets had taken"
        ],
        pins,
    )


def _release_started(
    solve: Callable[[tuple[DomainReservation, ...]], Plan],
    plan: Plan,
    held: tuple[DomainReservation, ...],
    durations: Mapping[str, float],
) -> tuple[Plan, list[str], tuple[DomainReservation, ...] | None]:
    """The inner solve's plan, solved again without the later reservations of JobSets it
    started now when it left some JobSet out; a note when that plan is kept, and the
    reservations it was solved with (None: `plan` is returned as given).

    A JobSet the pass reserves for later may still start now: the inner solve finds room the
    pass did not count on (the healthy hosts of a domain with one down, which the pass holds
    busy for the hour the host is expected back). Its reservation then held domains for a
    start that will not come, and a JobSet behind it was kept off them, told it waits an hour
    beside a free domain, while `placer explain`, reading the plan (where the JobSet started
    now holds no reservation), found the domain free (a property test found it:
    tests/solver/reasons/test_reasons_agree.py).

    The new plan is kept if it places every JobSet the first one did. One that places fewer
    (free of those reservations, the inner solve chose otherwise and lost a JobSet) is solved
    once more with every JobSet the first plan placed held to the domains it took there
    (`_pinned`), so it places them again, and kept if it does: keeping the first plan would
    leave its reasons naming reservations the plan no longer holds ("reserved for the later
    start of" a JobSet it starts now, found by the same property test). A JobSet the new plan
    starts that held a later reservation too gives it up in turn (the same test: the release
    let a JobSet start that the pass had reserved in an hour)."""
    notes: list[str] = []
    solved_on: tuple[DomainReservation, ...] | None = None
    for _ in plan.jobsets:  # each turn places more JobSets than the last, or is the last
        placed = _placed_keys(plan)
        started = {r.jobset for r in held if r.jobset in placed}
        if not started or len(placed) == len(plan.jobsets):
            break
        held = tuple(r for r in held if r.jobset not in started)
        note = (
            "start now: solved again without the later reservations of "
            f"{', '.join(sorted(started))}, started now"
        )
        rest = held
        again = solve(rest)
        if not placed <= _placed_keys(again):
            rest = held + _pinned(plan, durations)
            again = solve(rest)
            note += ", each JobSet it placed held to its domains"
            if not placed <= _placed_keys(again):
                break
        plan, solved_on = again, rest
        notes.append(note)
    return plan, notes, solved_on


def _pinned(plan: Plan, durations: Mapping[str, float]) -> tuple[DomainReservation, ...]:
    """The domains each placed JobSet's exclusive child Jobs took in `plan`, and the nodes its
    other pods took, held for it from now to its expected end: open to it alone
    (`PlacementContext.domain_open_to`, `node_open_to`). Its domains alone let a JobSet that
    ends later take the room its other pods had (a node reserved for its later start, released,
    was taken so), and it was left out again."""
    pins: list[DomainReservation] = []
    for o in plan.jobsets:
        if o.status != "placed":
            continue
        nodes = sorted({p.node for j in o.jobs if j.domain is None for p in j.pods})
        paths = [(j.domain.key, _path(j.domain)) for j in o.jobs if j.domain is not None]
        paths += [(NODE_RESERVATION_KEY, ((NODE_RESERVATION_KEY, n),)) for n in nodes]
        pins += [
            DomainReservation(jobset=o.key, key=k, path=p, start_s=0.0, end_s=durations[o.key])
            for k, p in paths
        ]
    return tuple(pins)


def _path(ref: DomainRef) -> tuple[tuple[str, str], ...]:
    """A plan's domain as a reservation names it: its path, or its key and value alone."""
    return tuple(ref.path) if ref.path else ((ref.key, ref.value),)


def _placed_keys(plan: Plan) -> set[str]:
    return {o.key for o in plan.jobsets if o.status == "placed"}


def _placed(plan: Plan, keys: set[str]) -> int:
    return sum(1 for o in plan.jobsets if o.key in keys and o.status == "placed")


def _displaced(
    units: Units, plan: Plan, reservations: dict[str, Reservation], start_now: set[str]
) -> list[str]:
    """JobSets the pass starts now that the inner solve left out while another JobSet it placed
    took a node of the domains the pass gave them (left out for a reason of their own, such
    as pods without an exclusive key that fit nowhere, they are not listed)."""
    placed = _placed_keys(plan)
    taken = {
        pod.node for o in plan.jobsets if o.status == "placed" for j in o.jobs for pod in j.pods
    }
    return sorted(
        key
        for key in start_now - placed
        if any(
            n in taken
            for group in reservations[key].units.values()
            for unit in group
            for n in units.domains[unit].nodes
        )
    )


def reservations_of(
    plan: Plan, jobsets: Sequence[JobSetRequest], policy: TimePolicy
) -> tuple[DomainReservation, ...]:
    """The plan's reservations as the next round's input (`ClusterSnapshot.reservations`), so
    they stay where they are (see `reservations.reserve`'s `kept`)."""
    durations = {js.key: expected_duration_s(js, policy) for js in jobsets}
    found: list[DomainReservation] = []
    for o in plan.jobsets:
        start = o.expected_start_seconds
        if not o.reserved_domains or start is None:
            continue
        end = start + durations.get(o.key, policy.default_duration_s)
        paths = [(d.key, _path(d)) for d in o.reserved_domains]
        paths += [(NODE_RESERVATION_KEY, ((NODE_RESERVATION_KEY, n),)) for n in o.reserved_nodes]
        found += [
            DomainReservation(jobset=o.key, key=key, path=path, start_s=start, end_s=end)
            for key, path in paths
        ]
    return tuple(found)


def planned_on(
    snapshot: ClusterSnapshot,
    plan: Plan,
    jobsets: Sequence[JobSetRequest],
    options: SolveOptions,
) -> ClusterSnapshot:
    """The snapshot a time-aware `plan`'s inner solve planned on: the reservations of JobSets
    outside the queue as given, and the plan's own future reservations (`reservations_of`) in
    place of the queue's earlier ones. A diagnosis beside the plan counts on it (`placer
    explain`), as the planner's own reasons did: a domain reserved for a later start is closed
    to JobSets that would not end before it (`PlacementContext.domain_open_to`)."""
    queued = {js.key for js in jobsets}
    others = tuple(r for r in snapshot.reservations if r.jobset not in queued)
    mine = reservations_of(plan, jobsets, options.time)
    return snapshot.model_copy(update={"reservations": others + mine})


def _estimated(
    units: Units,
    plan: Plan,
    order: Sequence[JobSetRequest],
    reservations: dict[str, Reservation],
    held: Sequence[DomainReservation],
    durations: dict[str, float],
) -> tuple[dict[str, Reservation], dict[str, SharedStart]]:
    """Expected starts of the waiting JobSets without a reservation, reserving nothing, and
    the starts of the pods without an exclusive key of every waiting JobSet (`shared_starts`).

    The same pass over what this plan leaves: runs started now hold their domains for their
    expected duration, and reservations hold theirs (`held` names none of a JobSet started now).
    Child Jobs with an exclusive key start from the domains the pass (or the estimate) gave
    them, and a JobSet's pods without one not before; an estimate's domains are found again
    from its pods' start when that is later (`domains_when_pods_fit`).
    """
    placed = {o.key: o for o in plan.jobsets if o.status == "placed"}
    # pods without an exclusive key hold domains too (`Units.taken_by`): without them a JobSet
    # they kept out was told "now"
    holds = [h for key, o in placed.items() for h in units.running(o, durations[key])]
    holds += units.holds(held)
    future = {k: r for k, r in reservations.items() if r.start_s}
    rest = [js for js in order if js.key not in placed and js.key not in future]
    candidates = [units.candidate(js, durations[js.key]) for js in rest]
    waiting = [js for js in order if js.key not in placed]

    def find(not_before: Mapping[str, float]) -> dict[str, Reservation]:
        if not candidates:
            return {}
        timed = [replace(c, not_before_s=not_before.get(c.jobset, 0.0)) for c in candidates]
        found = reserve(units.layout, timed, free_at=units.free_at, holds=holds)
        return {r.jobset: r for r in found}

    starts = starts_beside(units, waiting, durations, placed.values(), held, future)
    found, shared = domains_when_pods_fit(find, starts)
    return dict(found), shared
