"""Reservation units: the domains of the queue's exclusive keys, judged on the cluster once its
runs end, with when each frees up and which of them each waiting JobSet's child Jobs could take.

Both the reservation pass and the estimates after the solve work on one `Units`; domains named
elsewhere (a plan, a ledger, an earlier round) are found with `Units.unit_of`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from placer.model.cluster import NODE_RESERVATION_KEY, ClusterSnapshot, DomainReservation, Node
from placer.model.options import SolveOptions
from placer.model.plan import JobSetOutcome
from placer.model.scheduling import CONDITION_TAINTS
from placer.model.topology import Domain
from placer.model.whatif import given_back
from placer.model.workload import JobSetRequest
from placer.solver.context import PlacementContext
from placer.solver.time.calendar import Calendar, UnitLayout
from placer.solver.time.release import ReleaseTimeline
from placer.solver.time.reservations import (
    Candidate,
    Need,
    Reservation,
    Unit,
    UnitId,
    fits_some_day,
)

__all__ = ["UNHEALTHY_BACK_S", "Units", "domain_id", "emptied"]


def domain_id(path: Sequence[tuple[str, str]]) -> str:
    return "/".join(v for _, v in path)


def emptied(snapshot: ClusterSnapshot, *, untainted: bool) -> ClusterSnapshot:
    """The cluster once every running JobSet ended, as the future is planned on.

    A node whose JobSets' usage the source did not record offers its allocatable then (the
    loaders record it; older snapshots may not). NotReady and cordoned hosts are expected back
    (a repair or a drain ends): counting them out for good would mark a JobSet that needs their
    domain as never fitting and leave it without a reservation, the starvation this prevents.
    A reservation on such a domain is re-planned each round until the host is back.

    The taints Kubernetes puts on such hosts (`CONDITION_TAINTS`) stay unless `untainted`:
    `Units` plans a JobSet on the cluster with them first, and on the untainted one only if it
    fits nowhere else (see `Units.candidate`).
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
    """One node of `emptied`, in one copy: every JobSet's recorded usage and host ports given
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


def _reservation(
    jobset: str, key: str, path: tuple[tuple[str, str], ...], start_s: float, end_s: float
) -> DomainReservation:
    return DomainReservation(jobset=jobset, key=key, path=path, start_s=start_s, end_s=end_s)


def _node_free_at_s(node: Node, timeline: ReleaseTimeline) -> float:
    free_at = timeline.node_free_at_s(node)
    return free_at if node.usable else max(free_at, UNHEALTHY_BACK_S)


class Units:
    """Domains of the queue's exclusive keys as reservation units, and what each JobSet needs."""

    def __init__(
        self,
        snapshot: ClusterSnapshot,
        jobsets: Sequence[JobSetRequest],
        options: SolveOptions,
        timeline: ReleaseTimeline,
    ) -> None:
        # judged on the cluster without any JobSet: what a domain offers once its runs end
        self.ctx = PlacementContext(emptied(snapshot, untainted=False), jobsets, options)
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
        # each host's release, a NotReady or cordoned one's no sooner than it is expected back
        # (UNHEALTHY_BACK_S): its domain waits for it, even where its healthy hosts would do
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
        self._on_node: dict[str, list[UnitId]] | None = None

    def units_on(self, node: str) -> Sequence[UnitId]:
        """The units holding `node` (one per exclusive key whose domains it is in)."""
        if self._on_node is None:
            self._on_node = {}
            for unit in self.units:
                for n in unit.nodes:
                    self._on_node.setdefault(n, []).append(unit.id)
        return self._on_node.get(node, ())

    def taken_by(self, placed: JobSetOutcome) -> list[UnitId]:
        """The units a placed JobSet holds until it ends: its child Jobs' domains, and the
        domains holding the nodes of its pods without an exclusive key (which close them to
        every exclusive child Job, the ledger's rule)."""
        taken = {
            unit
            for j in placed.jobs
            if j.domain is not None and (unit := self.unit_of(j.domain.key, j.domain.path))
        }
        taken |= {
            u
            for j in placed.jobs
            if j.domain is None
            for p in j.pods
            for u in self.units_on(p.node)
        }
        return sorted(taken)

    def running(self, placed: JobSetOutcome, end_s: float) -> list[tuple[UnitId, float, float]]:
        """A JobSet started now as the pass holds it: every unit it takes (`taken_by`), from
        now until its expected end."""
        return [(unit, 0.0, end_s) for unit in self.taken_by(placed)]

    def held(self, reservations: Iterable[Reservation]) -> tuple[DomainReservation, ...]:
        """The domains and nodes of `reservations` as a snapshot names them: each held from
        its start to its end (from now for one starting now)."""
        result: list[DomainReservation] = []
        for r in reservations:
            start, end = float(r.start_s or 0.0), float(r.end_s or 0.0)
            for group in r.units.values():
                for unit in group:
                    path = self.domains[unit].path
                    result.append(_reservation(r.jobset, unit[0], path, start, end))
            for node in sorted(r.nodes):
                path = ((NODE_RESERVATION_KEY, node),)
                result.append(_reservation(r.jobset, NODE_RESERVATION_KEY, path, start, end))
        return tuple(result)

    def holds(self, reservations: Iterable[DomainReservation]) -> list[tuple[UnitId, float, float]]:
        """`reservations` (named as a snapshot names them) as the pass holds them: (unit,
        start, end), a node's for every unit holding it; one naming a domain the cluster no
        longer has holds nothing."""
        return [
            (unit, r.start_s, max(r.end_s, r.start_s))
            for r in reservations
            for unit in self.units_of(r)
        ]

    def nodes_of(self, reservation: DomainReservation) -> Sequence[str]:
        """The nodes `reservation` holds: its domain's, or its node (none the units know)."""
        if reservation.key == NODE_RESERVATION_KEY:
            node = dict(reservation.path).get(NODE_RESERVATION_KEY, "")
            return (node,) if node in self.live else ()
        unit = self.unit_of(reservation.key, reservation.path)
        return self.domains[unit].nodes if unit is not None else ()

    def units_of(self, reservation: DomainReservation) -> Sequence[UnitId]:
        """The units `reservation` holds: its domain's, or every one holding its node."""
        if reservation.key == NODE_RESERVATION_KEY:
            return self.units_on(dict(reservation.path).get(NODE_RESERVATION_KEY, ""))
        unit = self.unit_of(reservation.key, reservation.path)
        return (unit,) if unit is not None else ()

    def unit_of(self, key: str, path: Sequence[tuple[str, str]]) -> UnitId | None:
        """The unit a domain named elsewhere is (a plan's `DomainRef`, a reservation of this
        round or an earlier one), whichever levels its path lists (`Topology.find`)."""
        exact = (key, domain_id(path))
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

    def last_resort(self) -> PlacementContext:
        """The cluster a waiting JobSet is judged on last (`candidate`): every running JobSet
        ended and, when some hosts carry the taints of NotReady, cordoned or pressured hosts,
        those hosts back untainted. A JobSet that fits no domain set there never fits, and why
        is what its diagnosis there says (`never`)."""
        return self._untainted_ctx() if self._tainted else self.ctx

    def _untainted_ctx(self) -> PlacementContext:
        if self._untainted is None:
            snapshot, jobsets, options = self._source
            self._untainted = PlacementContext(emptied(snapshot, untainted=True), jobsets, options)
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
