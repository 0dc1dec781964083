"""Time-aware planning around any solver: reservations for waiting JobSets, backfill for the rest.

A solver alone plans who starts now. Round after round that starves wide JobSets: whatever frees up
is taken by narrower ones. `TimeAwareSolver` wraps any solver (CP-SAT or greedy, so the benchmarks
compare policies, not implementations) and adds when:

  timeline    when each running JobSet is expected to end (`release.ReleaseTimeline`)
  units       every domain of the queue's exclusive keys, with the time it frees up, and per
              replicated job the domains that could take a child Job once empty
  reserve     in queue order (priority, plus aging), each JobSet's earliest start and the domains
              it will take then (`reservations.reserve`): `head` stops after the first N that
              must wait (EASY backfill), `all` goes through the queue (conservative); a JobSet
              waiting past `max_wait_s` always gets one; with `--schedule cpsat` the schedule
              decides them, and a JobSet without a stated run time holds its reservation only
              at the head or past `max_wait_s` (`holding`)
  solve       the inner solver plans now, with the future reservations on the snapshot: a domain
              reserved from time t is open only to its JobSet and to JobSets expected to end by t
              (`PlacementContext.domain_open_to`). JobSets the pass starts now form a tier above
              every other for this solve, so no other choice delays them
  annotate    expected start, reserved domains, backfill and who each waits for, per JobSet

Why an event-driven pass around the one model rather than a time-indexed CP-SAT model: the pass is
linear in events x domains and runs every round at fleet scale, and the joint optimization stays
where it pays, in who starts now. Reservations cover child Jobs with an exclusive key; pods
without one are planned now and never reserved for.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Sequence
from datetime import UTC, datetime

from placer.model.cluster import ClusterSnapshot, DomainReservation, Node
from placer.model.options import SolveOptions, TimePolicy
from placer.model.plan import DomainRef, JobSetOutcome, Plan
from placer.model.scheduling import CONDITION_TAINTS
from placer.model.topology import Domain
from placer.model.whatif import given_back
from placer.model.workload import JobSetRequest
from placer.solver.context import PlacementContext
from placer.solver.interface import Solver
from placer.solver.phases import PhaseTimer
from placer.solver.time.calendar import Calendar, UnitLayout
from placer.solver.time.evicting import plan_evicting_first
from placer.solver.time.holding import held_reservations
from placer.solver.time.overlap import sharing
from placer.solver.time.release import ReleaseTimeline, expected_duration_s
from placer.solver.time.reservations import (
    Candidate,
    Need,
    Reservation,
    Unit,
    UnitId,
    fits_some_day,
    reserve,
)
from placer.solver.time.schedule import ScheduleRequest, schedule

__all__ = [
    "TimeAwareSolver",
    "expected_starts_behind",
    "queue_standing",
    "reservation_order",
    "reservations_of",
]


def queue_standing(jobset: JobSetRequest, policy: TimePolicy, now: datetime) -> float:
    """Priority plus `aging_per_hour` points per hour waited since creation."""
    if not policy.aging_per_hour or jobset.creation_timestamp is None:
        return float(jobset.priority)
    waited_h = max(0.0, (now - _aware(jobset.creation_timestamp)).total_seconds() / 3600)
    return jobset.priority + policy.aging_per_hour * waited_h


def reservation_order(
    jobset: JobSetRequest, policy: TimePolicy, now: datetime
) -> tuple[int, float, float, float, int, str]:
    """Sort key of the reservation pass: JobSets waiting past `max_wait_s` first, longest
    waiting first, then standing (priority plus aging), then queue order.

    A JobSet past the maximum wait must not only get a reservation but keep it: were it ordered
    by priority, each later arrival of a higher tier would be reserved ahead of it on the same
    domains round after round, and its start would recede for as long as they keep coming (seen
    in the over-time benchmark: 18-host GB200 JobSets waited 195 h with reservations).
    """
    waited = _waited_s(jobset, now)
    if policy.max_wait_s is not None and waited > policy.max_wait_s:
        return (0, -waited, 0.0, *jobset.queue_key()[1:])
    return (1, 0.0, -queue_standing(jobset, policy, now), *jobset.queue_key()[1:])


def _tiers(
    jobsets: Sequence[JobSetRequest], policy: TimePolicy, now: datetime
) -> dict[str, tuple[int, float]]:
    """Per JobSet, (its priority tier in the schedule's objective, seconds waited): the tier is
    how many of the queue's priority values its standing (priority plus aging) reaches, so a
    JobSet aged past a higher priority weighs as that tier does."""
    values = sorted({js.priority for js in jobsets})
    return {
        js.key: (
            max(0, bisect.bisect_right(values, queue_standing(js, policy, now)) - 1),
            _waited_s(js, now),
        )
        for js in jobsets
    }


def _aware(t: datetime) -> datetime:
    return t if t.tzinfo else t.replace(tzinfo=UTC)


def _waited_s(jobset: JobSetRequest, now: datetime) -> float:
    if jobset.creation_timestamp is None:
        return 0.0
    return max(0.0, (now - _aware(jobset.creation_timestamp)).total_seconds())


def _emptied(snapshot: ClusterSnapshot, *, untainted: bool) -> ClusterSnapshot:
    """The cluster once every running JobSet ended, as the future is planned on.

    A node whose JobSets' usage the source did not record offers its allocatable then (the
    loaders record it; older snapshots may not). NotReady and cordoned hosts are expected back
    (a repair or a drain ends): counting them out for good would mark a JobSet that needs their
    domain as never fitting and leave it without a reservation, the starvation this prevents.
    A reservation on such a domain is re-planned each round until the host is back.

    The taints Kubernetes puts on such hosts (`CONDITION_TAINTS`) stay unless `untainted`:
    `_Units` plans a JobSet on the cluster with them first, and on the untainted one only if it
    fits nowhere else (see `_Units.candidate`).
    """
    nodes = tuple(
        _emptied_node(n, untainted)
        if n.jobsets or not n.usable or (untainted and _condition_tainted(n))
        else n
        for n in snapshot.nodes
    )
    return snapshot.model_copy(update={"nodes": nodes, "reservations": ()})


def _condition_tainted(n: Node) -> bool:
    return any(t.key in CONDITION_TAINTS for t in n.taints)


def _emptied_node(n: Node, untainted: bool) -> Node:
    """One node of `_emptied`, in one copy: every JobSet's recorded usage and host ports given
    back (`whatif.given_back`; all of the node's allocatable when some JobSet's usage was not
    recorded), the host back, and with `untainted` its condition taints gone."""
    free, ports = dict(n.free), n.used_host_ports
    if n.jobsets:
        free, ports, missing = given_back(n, n.jobsets)
        if missing:
            free = dict(n.allocatable)
    taints = tuple(t for t in n.taints if t.key not in CONDITION_TAINTS) if untainted else n.taints
    return n.model_copy(
        update={
            "free": free,
            "used_host_ports": ports,
            "jobsets": (),
            "jobset_usage": {},
            "ready": True,
            "unschedulable": False,
            "taints": taints,
        }
    )


UNHEALTHY_BACK_S = 3600.0
"""When a NotReady or cordoned host is expected back: nothing says, and an hour (a repair, a
reboot, a drain) keeps a reservation on its domain from claiming it is free now."""


def _node_free_at_s(node: Node, timeline: ReleaseTimeline) -> float:
    free_at = timeline.node_free_at_s(node)
    return free_at if node.usable else max(free_at, UNHEALTHY_BACK_S)


class _Units:
    """Domains of the queue's exclusive keys as reservation units, and what each JobSet needs."""

    def __init__(
        self,
        snapshot: ClusterSnapshot,
        jobsets: Sequence[JobSetRequest],
        options: SolveOptions,
        timeline: ReleaseTimeline,
    ) -> None:
        # judged on the cluster without any JobSet: what a domain offers once its runs end
        self.ctx = PlacementContext(_emptied(snapshot, untainted=False), jobsets, options)
        self._untainted: PlacementContext | None = None
        self._source = (snapshot, jobsets, options)
        self._tainted = any(_condition_tainted(n) for n in snapshot.nodes)
        live = snapshot.by_name()
        self.domains: dict[UnitId, Domain] = {}
        units: list[Unit] = []
        for key in self.ctx.exclusive_keys:
            for d in self.ctx.domains(key):
                unit_id = (key, d.id)
                self.domains[unit_id] = d
                units.append(Unit(unit_id, frozenset(d.nodes)))
        self.units = units
        self.layout = UnitLayout(units)
        """Shared by the reservation pass and the estimates that follow the solve."""
        # NotReady and cordoned hosts are not waited for: a domain's size once empty says
        # whether it can take a child Job without them
        self.free_at = {
            n.name: f for n in snapshot.nodes if (f := _node_free_at_s(n, timeline)) > 0
        }
        self.timeline = timeline
        self.live = live
        self._eligible: dict[tuple[bool, str, int, int], frozenset[UnitId]] = {}
        """(untainted, key, shape number, pods per child Job) -> the units one such child Job
        fits."""
        self._within: dict[
            tuple[tuple[bool, str, int, int], str | None], tuple[frozenset[UnitId], ...]
        ] = {}
        self._empty = Calendar(self.layout, {})

    def unit_of(self, key: str, path: Sequence[tuple[str, str]]) -> UnitId | None:
        """The unit a domain named elsewhere is (a plan's `DomainRef`, a reservation of this
        round or an earlier one), whichever levels its path lists (`Topology.find`)."""
        exact = (key, _id(path))
        if exact in self.domains:
            return exact
        found = self.ctx.topology.find(key, path)
        unit = (key, found.id) if found is not None else None
        return unit if unit in self.domains else None

    def candidate(self, jobset: JobSetRequest, duration_s: float) -> Candidate:
        """What `jobset` needs, judged with the taints of NotReady, cordoned and pressured hosts
        kept; only a JobSet that fits nowhere so is judged with those hosts back, untainted.

        Why both: kept for everyone, a JobSet needing every host of a domain with one NotReady
        host would never fit, and under Kueue be Rejected (seen on real Kueue: a GB200 JobSet of
        four whole NVLink cliques). Dropped for everyone, every domain with such a host looks
        whole an hour from now (`UNHEALTHY_BACK_S`), round after round while the host stays
        down: the reservation pass then promised JobSets domains that never came back instead
        of healthy ones that did (the over-time GB200 world, whose broken hosts stay broken:
        easy-aging's longest wait went from 41 h to 230 h, its utilization from 61% to 46%)."""
        needs = self._needs(jobset, self.ctx, untainted=False)
        if self._tainted and not fits_some_day(needs, self._empty):
            needs = self._needs(jobset, self._untainted_ctx(), untainted=True)
        return Candidate(jobset.key, duration_s, needs)

    def _untainted_ctx(self) -> PlacementContext:
        if self._untainted is None:
            snapshot, jobsets, options = self._source
            self._untainted = PlacementContext(_emptied(snapshot, untainted=True), jobsets, options)
        return self._untainted

    def _needs(
        self, jobset: JobSetRequest, ctx: PlacementContext, *, untainted: bool
    ) -> tuple[Need, ...]:
        needs: list[Need] = []
        for jc in ctx.classes_of(jobset):
            key = jc.exclusive_key
            if key is None:
                continue
            # JobSets of one shape share the answer: the queue holds few shapes, many JobSets;
            # the shape index numbers them once (equal pod shapes, equal numbers)
            number = ctx.shape_index.shape_numbers[jc.index]
            shape = (untainted, key, number, jc.rjob.pods_per_job)
            eligible = self._eligible.get(shape)
            if eligible is None:
                eligible = self._eligible[shape] = frozenset(
                    (key, d.id)
                    for d in ctx.domains(key)
                    if (key, d.id) in self.domains
                    and ctx.domain_capacity(jc, d) >= jc.rjob.pods_per_job
                )
            level = jc.rjob.required_topology
            within = self._within.get((shape, level))
            if within is None:
                within = self._within[(shape, level)] = self._enclosed(ctx, key, level, eligible)
            needs.append(Need(jc.rjob.name, jc.rjob.replicas, eligible, within))
        return tuple(needs)

    def _enclosed(
        self, ctx: PlacementContext, key: str, level: str | None, eligible: frozenset[UnitId]
    ) -> tuple[frozenset[UnitId], ...]:
        """Per domain of the required level, the eligible units inside it (a unit straddling
        two such domains is in neither: its child Job could not keep the topology)."""
        if level is None or level == key:
            # one child Job per domain of its own key: the key's domains are the enclosing ones
            return tuple(frozenset({u}) for u in sorted(eligible)) if level else ()
        groups = []
        nodes_of = {u.id: u.nodes for u in self.units}
        for enclosing in ctx.domains(level):
            nodes = frozenset(enclosing.nodes)
            inside = frozenset(u for u in eligible if nodes_of[u] <= nodes)
            if inside:
                groups.append(inside)
        return tuple(groups) or (frozenset(),)

    def waits_for(self, reservation: Reservation) -> list[str]:
        nodes = [
            self.live[n]
            for group in reservation.units.values()
            for unit in group
            for n in self.domains[unit].nodes
            if n in self.live
        ]
        return self.timeline.waiting_for(nodes)


class TimeAwareSolver:
    """Any solver, planning when every waiting JobSet starts as well as who starts now."""

    def __init__(self, inner: Solver) -> None:
        self.inner = inner
        self.name = inner.name

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
            timeline = ReleaseTimeline.build(
                snapshot,
                now,
                policy.default_duration_s,
                default_for_priority=policy.default_duration_by_priority,
            )
            units = _Units(snapshot, jobsets, options, timeline)
        with timer("reserve"):
            durations = {js.key: expected_duration_s(js, policy) for js in jobsets}
            order = sorted(jobsets, key=lambda js: reservation_order(js, policy, now))
            reservations: dict[str, Reservation] = {}
            notes: list[str] = []
            # reservations of JobSets outside this queue (another controller's): held as they are
            queued = {js.key for js in jobsets}
            others = tuple(r for r in snapshot.reservations if r.jobset not in queued)
            other_holds = [
                (unit, r.start_s, max(r.end_s, r.start_s))
                for r in others
                if (unit := units.unit_of(r.key, r.path)) is not None
            ]
            if policy.active:
                reservations, notes = _reserve_all(
                    snapshot, jobsets, options, units, order, durations, other_holds
                )
        start_now = {k for k, r in reservations.items() if r.start_s == 0}
        future = [r for r in reservations.values() if r.start_s]
        held = (
            tuple(
                DomainReservation(
                    jobset=r.jobset,
                    key=unit[0],
                    path=units.domains[unit].path,
                    start_s=float(r.start_s or 0.0),
                    end_s=float(r.end_s or 0.0),
                )
                for r in future
                for group in r.units.values()
                for unit in group
            )
            + others
        )
        inner_snapshot = snapshot.model_copy(update={"reservations": held})
        top = max((js.priority for js in jobsets), default=0) + 1
        inner_jobsets = [
            js.model_copy(update={"priority": top, "declared_priority": js.priority})
            if js.key in start_now
            else js
            for js in jobsets
        ]
        plan = self.inner.solve(inner_snapshot, inner_jobsets, options)
        with timer("estimate"):
            estimates = _estimates(units, plan, order, reservations, held, durations)
            priorities = {js.key: js.priority for js in jobsets}
            after = _Annotator(units, reservations, estimates, held, priorities)
            outcomes = [after.outcome(o) for o in plan.jobsets]
        report = plan.solver.model_copy(
            update={
                "phases": {**timer.seconds, **plan.solver.phases},
                "wall_seconds": time.perf_counter() - started,
                "notes": [*plan.solver.notes, *notes],
            }
        )
        return plan.model_copy(update={"jobsets": outcomes, "solver": report})


def _reserve_all(
    snapshot: ClusterSnapshot,
    jobsets: Sequence[JobSetRequest],
    options: SolveOptions,
    units: _Units,
    order: Sequence[JobSetRequest],
    durations: dict[str, float],
    other_holds: list[tuple[UnitId, float, float]],
) -> tuple[dict[str, Reservation], list[str]]:
    """The reservation phase: the schedule's (`--schedule cpsat`) unless it has no answer, else
    the greedy pass's, per JobSet in `order`; and what the schedule has to say."""
    policy = options.time
    now = policy.now or datetime.now(UTC)
    notes: list[str] = []
    limit = None if policy.reservations == "all" else policy.head
    if policy.reservations == "none":
        limit = 0
    overdue = {
        js.key
        for js in jobsets
        if policy.max_wait_s is not None and _waited_s(js, now) > policy.max_wait_s
    }
    candidates = tuple(units.candidate(js, durations[js.key]) for js in order)
    kept = _kept(snapshot, units)
    found: Sequence[Reservation] | None = None
    if policy.schedule == "cpsat":
        request = ScheduleRequest(
            units.layout,
            candidates,
            units.free_at,
            tuple(other_holds),
            kept,
            _tiers(jobsets, policy, now),
            policy.max_wait_s,
        )
        outcome = schedule(request, options)
        found, notes = outcome.reservations, [outcome.note]
    if found is None:
        found = reserve(
            units.layout,
            candidates,
            free_at=units.free_at,
            limit=limit,
            always=overdue,
            kept=kept,
            holds=other_holds,
        )
    reservations = {r.jobset: r for r in found}
    if policy.schedule == "cpsat":
        stated = {js.key for js in jobsets if js.expected_duration_s is not None}
        order_keys = [js.key for js in order]
        reservations, dropped = held_reservations(
            reservations, order_keys, stated, overdue, policy.head
        )
        notes += [dropped] if dropped else []
    return reservations, notes


def _kept(snapshot: ClusterSnapshot, units: _Units) -> dict[str, frozenset[UnitId]]:
    """The units each JobSet was reserved in an earlier round (`snapshot.reservations`); a
    reservation naming a domain the cluster no longer has keeps nothing (it is a new one)."""
    kept: dict[str, set[UnitId]] = {}
    stale: set[str] = set()
    for r in snapshot.reservations:
        unit = units.unit_of(r.key, r.path)
        if unit is not None:
            kept.setdefault(r.jobset, set()).add(unit)
        else:
            stale.add(r.jobset)
    return {k: frozenset(v) for k, v in kept.items() if k not in stale}


def reservations_of(
    plan: Plan, jobsets: Sequence[JobSetRequest], policy: TimePolicy
) -> tuple[DomainReservation, ...]:
    """The plan's reservations as the next round's input (`ClusterSnapshot.reservations`), so
    they stay where they are (see `reservations.reserve`'s `kept`)."""
    durations = {js.key: expected_duration_s(js, policy) for js in jobsets}
    return tuple(
        DomainReservation(
            jobset=o.key,
            key=d.key,
            path=tuple(d.path) if d.path else ((d.key, d.value),),
            start_s=o.expected_start_seconds,
            end_s=o.expected_start_seconds + durations.get(o.key, policy.default_duration_s),
        )
        for o in plan.jobsets
        if o.reserved_domains and o.expected_start_seconds is not None
        for d in o.reserved_domains
    )


def _estimates(
    units: _Units,
    plan: Plan,
    order: Sequence[JobSetRequest],
    reservations: dict[str, Reservation],
    held: Sequence[DomainReservation],
    durations: dict[str, float],
) -> dict[str, Reservation]:
    """Expected starts of the waiting JobSets without a reservation, reserving nothing.

    The same pass over what this plan leaves: runs started now hold their domains for their
    expected duration, and reservations hold theirs.
    """
    placed = {o.key: o for o in plan.jobsets if o.status == "placed"}
    holds = [
        (unit, 0.0, durations[key])
        for key, o in placed.items()
        for j in o.jobs
        if j.domain is not None and (unit := units.unit_of(j.domain.key, j.domain.path)) is not None
    ]
    holds += [
        (unit, h.start_s, h.end_s)
        for h in held
        if h.jobset not in placed and (unit := units.unit_of(h.key, h.path)) is not None
    ]
    future = {k for k, r in reservations.items() if r.start_s}
    rest = [js for js in order if js.key not in placed and js.key not in future]
    if not rest:
        return {}
    found = reserve(
        units.layout,
        [units.candidate(js, durations[js.key]) for js in rest],
        free_at=units.free_at,
        holds=holds,
    )
    return {r.jobset: r for r in found}


class _Annotator:
    """Expected start, reserved domains, backfill and who it waits for, on each outcome."""

    def __init__(
        self,
        units: _Units,
        reservations: dict[str, Reservation],
        estimates: dict[str, Reservation],
        held: Sequence[DomainReservation],
        priorities: dict[str, int],
    ) -> None:
        self.units = units
        self.reservations = reservations
        self.estimates = estimates
        self.held_on: dict[tuple[str, str], list[DomainReservation]] = {}
        for h in held:
            unit = units.unit_of(h.key, h.path) or (h.key, _id(h.path))
            self.held_on.setdefault(unit, []).append(h)
        self.priorities = priorities

    def _sharing(self, unit: UnitId) -> list[UnitId]:
        """The unit and those sharing a node with it (overlapping keys: a pool run now ahead of
        its block's reservation is backfill too)."""
        layout = self.units.layout
        number = layout.number.get(unit)
        if number is None:
            return [unit]
        return [layout.ids[u] for u in sorted(sharing(layout, number))]

    def outcome(self, o: JobSetOutcome) -> JobSetOutcome:
        update: dict[str, object] = {"priority": self.priorities.get(o.key, o.priority)}
        if o.status == "placed":
            ahead = [
                h
                for j in o.jobs
                if j.domain is not None
                for unit in self._sharing(
                    self.units.unit_of(j.domain.key, j.domain.path)
                    or (j.domain.key, _id(j.domain.path))
                )
                for h in self.held_on.get(unit, [])
                if h.jobset != o.key
            ]
            update |= {"expected_start_seconds": 0.0, "backfill": bool(ahead)}
            return o.model_copy(update=update)
        reserved = self.reservations.get(o.key)
        if reserved is not None and not reserved.start_s:
            reserved = None  # meant to start now, yet not placed: estimated like the rest
        r = reserved or self.estimates.get(o.key)
        if r is None:
            return o.model_copy(update=update)
        if r.start_s is None:
            return o.model_copy(update=update | {"expected_start_seconds": None})
        refs = [
            DomainRef(
                key=u[0], value=self.units.domains[u].value, path=list(self.units.domains[u].path)
            )
            for group in r.units.values()
            for u in group
        ]
        update |= {
            "expected_start_seconds": r.start_s,
            "reserved_domains": refs if reserved is not None and r.start_s > 0 else [],
            "waits_for": self.units.waits_for(r),
        }
        return o.model_copy(update=update)


def _id(path: Sequence[tuple[str, str]]) -> str:
    return "/".join(v for _, v in path)


def expected_starts_behind(
    snapshot: ClusterSnapshot,
    later: Sequence[JobSetRequest],
    options: SolveOptions,
    planned: tuple[Plan, Sequence[JobSetRequest]] | None = None,
) -> list[JobSetOutcome]:
    """When each JobSet of `later` could start were it queued now behind everything the
    `planned` round (its plan and the requests it was given) placed or reserved, and behind the
    snapshot's reservations; in reservation order, reserving nothing. One unplaced outcome each,
    with its expected start, domains and whom it waits for.

    For JobSets that may not start this round whatever the room, so are not planned: a Kueue
    Workload without reserved quota, whose estimate assumes quota were reserved now.
    """
    policy = options.time
    now = policy.now or datetime.now(UTC)
    plan, queued = planned if planned is not None else (None, ())
    timeline = ReleaseTimeline.build(
        snapshot,
        now,
        policy.default_duration_s,
        default_for_priority=policy.default_duration_by_priority,
    )
    units = _Units(snapshot, [*queued, *later], options, timeline)
    durations = {js.key: expected_duration_s(js, policy) for js in [*queued, *later]}
    holds: list[tuple[UnitId, float, float]] = []
    for o in plan.jobsets if plan is not None else []:
        placed = o.status == "placed"
        start = 0.0 if placed else o.expected_start_seconds
        refs = [j.domain for j in o.jobs if j.domain] if placed else o.reserved_domains
        if start is None:
            continue
        end = start + durations.get(o.key, policy.default_duration_s)
        holds += [
            (unit, start, end) for d in refs if (unit := units.unit_of(d.key, d.path)) is not None
        ]
    planned_keys = {o.key for o in plan.jobsets} if plan is not None else set()
    holds += [
        (unit, r.start_s, max(r.end_s, r.start_s))
        for r in snapshot.reservations
        if r.jobset not in planned_keys and (unit := units.unit_of(r.key, r.path)) is not None
    ]
    order = sorted(later, key=lambda js: reservation_order(js, policy, now))
    found = reserve(
        units.layout,
        [units.candidate(js, durations[js.key]) for js in order],
        free_at=units.free_at,
        holds=holds,
    )
    after = _Annotator(units, {}, {r.jobset: r for r in found}, [], {})
    return [
        after.outcome(
            JobSetOutcome(
                namespace=js.namespace, name=js.name, status="unschedulable", priority=js.priority
            )
        )
        for js in order
    ]
