"""Facts every solver needs, computed once per solve: queue order, domains, who fits where.

Greedy baselines, CP-SAT and the explanations all read this, so they agree on what "fits" means; the
independent plan checker does not (it re-derives everything from the snapshot). Phase "snapshot" of
the planner.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from functools import cached_property

from placer.model.cluster import NODE_RESERVATION_KEY, ClusterSnapshot, DomainReservation, Node
from placer.model.kueue.annotations import podset_groups
from placer.model.options import SolveOptions
from placer.model.resources import is_accelerator
from placer.model.topology import Domain, Topology, default_levels
from placer.model.workload import JobSetRequest, PodShape, ReplicatedJobRequest
from placer.solver.preempt.candidates import Victims
from placer.solver.shape_index import (
    MISSING_LABEL,
    ShapeFacts,
    ShapeIndex,
    node_exclusion,
    node_pod_capacity,
)
from placer.solver.time.release import expected_duration_s

__all__ = [
    "MISSING_LABEL",
    "JobClass",
    "KeyDomains",
    "PlacementContext",
    "ShapeFacts",
    "node_exclusion",
    "node_pod_capacity",
]
# MISSING_LABEL, ShapeFacts, node_exclusion and node_pod_capacity live in
# placer.solver.shape_index; re-exported here for the modules that read them beside the context.


@dataclass(frozen=True)
class JobClass:
    """The interchangeable child Jobs of one replicatedJob of one JobSet."""

    index: int
    jobset: JobSetRequest
    rjob: ReplicatedJobRequest

    @property
    def name(self) -> str:
        return f"{self.jobset.key}/{self.rjob.name}"

    @property
    def exclusive_key(self) -> str | None:
        return self.rjob.exclusive_key


@dataclass(frozen=True)
class KeyDomains:
    """The domains of one exclusive key and what the solvers read of each, aligned by position."""

    domains: tuple[Domain, ...]
    held_by: tuple[tuple[str, ...], ...]
    """JobSets with running pods in the domain (it is closed to every other JobSet)."""
    free_accelerators: tuple[int, ...]
    capacity: Mapping[int, tuple[int, ...]]
    """shape number (`ShapeIndex.shape_numbers`) -> pods of that shape each domain takes, for the
    shapes of the job classes exclusive on this key."""


@dataclass
class PlacementContext:
    """One snapshot and queue, and what is derived from them alone (computed once each)."""

    snapshot: ClusterSnapshot
    jobsets_given: Sequence[JobSetRequest]
    options: SolveOptions
    victims: Victims | None = None
    """With preemption (CP-SAT only): running JobSets already taken off `snapshot` that the
    queue may evict; a domain they held opens to a JobSet that may evict every one of them."""

    @cached_property
    def jobsets(self) -> list[JobSetRequest]:
        """Queue order: priority descending, creation time, order given, name."""
        return sorted(self.jobsets_given, key=lambda j: j.queue_key())

    @cached_property
    def job_classes(self) -> list[JobClass]:
        classes: list[JobClass] = []
        for js in self.jobsets:
            for rj in js.replicated_jobs:
                if rj.replicas > 0:
                    classes.append(JobClass(len(classes), js, rj))
        return classes

    @cached_property
    def _classes_by_jobset(self) -> dict[str, list[JobClass]]:
        result: dict[str, list[JobClass]] = {js.key: [] for js in self.jobsets}
        for c in self.job_classes:
            result[c.jobset.key].append(c)
        return result

    def classes_of(self, jobset: JobSetRequest) -> list[JobClass]:
        return list(self._classes_by_jobset.get(jobset.key, []))

    @cached_property
    def _podset_groups(self) -> dict[int, tuple[JobClass, JobClass]]:
        """class index -> (workers, leader) of the podset group it belongs to."""
        found: dict[int, tuple[JobClass, JobClass]] = {}
        for js in self.jobsets:
            groups = podset_groups(js)
            if not groups:
                continue
            classes = {c.rjob.name: c for c in self.classes_of(js) if c.rjob.pod_count > 0}
            for g in groups:
                workers = classes.get(js.replicated_jobs[g.workers].name)
                leader = classes.get(js.replicated_jobs[g.leader].name)
                if workers is not None and leader is not None:
                    found[workers.index] = found[leader.index] = (workers, leader)
        return found

    def podset_group(self, jc: JobClass) -> tuple[JobClass, JobClass] | None:
        """(workers, leader) when `jc` is one of a Kueue podset group's two members, both with
        pods (`placer.model.kueue.annotations.podset_groups` says which leads); a group whose
        other member has no pods is no group: its one member is placed alone."""
        return self._podset_groups.get(jc.index)

    @cached_property
    def exclusive_keys(self) -> list[str]:
        return sorted({c.exclusive_key for c in self.job_classes if c.exclusive_key})

    @cached_property
    def topology(self) -> Topology:
        keys: list[str] = []
        for c in self.job_classes:
            for k in (c.rjob.required_topology, c.rjob.preferred_topology, c.exclusive_key):
                if k:
                    keys.append(k)
        levels = self.options.levels or default_levels(self.snapshot, keys)
        return Topology(self.snapshot, levels)

    @cached_property
    def topology_labels(self) -> tuple[str, ...]:
        """Label keys of the levels of a Kueue Topology in use: a node missing one is left out, as
        Kueue TAS leaves it out (`NodeMatchesFlavor`), `kubernetes.io/hostname` included when the
        Topology lists it. Levels from `--levels` or a cluster description keep placer's older
        rule (such a node is in no domain of that level, yet usable; without a hostname label it
        is named by its node name)."""
        snap = self.snapshot
        if not snap.kueue_topology or self.options.levels not in ((), snap.levels):
            return ()
        return tuple(snap.levels)

    @cached_property
    def nodes(self) -> dict[str, Node]:
        return self.snapshot.by_name()

    def domains(self, key: str) -> list[Domain]:
        return self.topology.domains(key)

    @cached_property
    def exclusive_domains(self) -> list[Domain]:
        """Every domain of every exclusive key in the queue, sorted by (key, path)."""
        return [d for k in self.exclusive_keys for d in self.domains(k)]

    @cached_property
    def held_by(self) -> dict[tuple[str, tuple[tuple[str, str], ...]], tuple[str, ...]]:
        """(key, path) -> JobSets with running pods there; the domain is closed to other JobSets."""
        held: dict[tuple[str, tuple[tuple[str, str], ...]], tuple[str, ...]] = {}
        for d in self.exclusive_domains:
            owners = sorted({j for n in d.nodes for j in self.nodes[n].jobsets})
            if owners:
                held[(d.key, d.path)] = tuple(owners)
        return held

    def domain_held_by(self, domain: Domain) -> tuple[str, ...]:
        return self.held_by.get((domain.key, domain.path), ())

    def domain_evicts(self, domain: Domain) -> tuple[str, ...]:
        """Victim candidates running in the domain (all must be evicted to use it), sorted."""
        if self.victims is None:
            return ()
        on_node = self.victims.on_node
        return tuple(sorted({v for n in domain.nodes for v in on_node.get(n, ())}))

    @cached_property
    def reserved(
        self,
    ) -> dict[tuple[str, tuple[tuple[str, str], ...]], tuple[DomainReservation, ...]]:
        """(key, path) -> reservations for pending JobSets' future starts of the domain or of a
        domain sharing a node with it: with overlapping exclusive keys a block reserved from t
        keeps its pools from t as well (else a JobSet started now on a pool ran into the block's
        reservation, and no rule saw it), and a domain holding a reserved node
        (`reserved_nodes`) is held with it."""
        found: dict[tuple[str, tuple[tuple[str, str], ...]], list[DomainReservation]] = {}
        for r in self.snapshot.reservations:
            if r.key == NODE_RESERVATION_KEY:
                continue  # a node: `reserved_nodes`
            # named by this queue's levels (another round's may differ: `Topology.find`)
            domain = self.topology.find(r.key, r.path)
            found.setdefault((r.key, domain.path if domain else r.path), []).append(r)
        on_node = self._reserved_on_node(found)
        for n, rs in self.reserved_nodes.items():
            on_node.setdefault(n, []).extend(rs)
        for d in self.exclusive_domains if on_node else ():
            own = found.get((d.key, d.path), [])
            near = {id(r): r for n in d.nodes for r in on_node.get(n, ())}
            more = [r for r in near.values() if all(r is not o for o in own)]
            if more:
                found[(d.key, d.path)] = [*own, *more]
        return {k: tuple(sorted(v, key=lambda r: r.start_s)) for k, v in found.items()}

    @cached_property
    def reserved_nodes(self) -> dict[str, list[DomainReservation]]:
        """Node -> the reservations holding it alone (`NODE_RESERVATION_KEY`): closed, as a
        reserved domain is, to pods of JobSets that would not end before they start, and so is
        every domain holding it to exclusive child Jobs."""
        found: dict[str, list[DomainReservation]] = {}
        for r in self.snapshot.reservations:
            if r.key == NODE_RESERVATION_KEY:
                node = dict(r.path).get(NODE_RESERVATION_KEY)
                if node in self.nodes:
                    found.setdefault(node, []).append(r)
        return found

    def _reserved_on_node(
        self, found: Mapping[tuple[str, tuple[tuple[str, str], ...]], list[DomainReservation]]
    ) -> dict[str, list[DomainReservation]]:
        """Node -> the reservations of the domains holding it, when two exclusive keys of the
        queue overlap (else empty: a domain's own reservations are all that reach it)."""
        if not found:
            return {}
        keys = self.exclusive_keys
        by_node: dict[str, set[str]] = {}
        for d in self.exclusive_domains:
            for n in d.nodes:
                by_node.setdefault(n, set()).add(d.key)
        if all(len(ks) < 2 for ks in by_node.values()):
            return {}
        on_node: dict[str, list[DomainReservation]] = {}
        for key in {k for k, _ in found} & set(keys):
            for d in self.domains(key):
                for r in found.get((d.key, d.path), ()):
                    for n in d.nodes:
                        on_node.setdefault(n, []).append(r)
        return on_node

    def domain_reservations(self, domain: Domain) -> tuple[DomainReservation, ...]:
        return self.reserved.get((domain.key, domain.path), ())

    def domain_open_to(self, domain: Domain, jobset: JobSetRequest) -> bool:
        """No other JobSet runs there, and every reservation of it is the JobSet's own or starts
        after the JobSet is expected to end (backfill)."""
        if any(owner != jobset.key for owner in self.domain_held_by(domain)):
            return False
        victims = self.victims
        if victims is not None and not all(
            victims.can_evict(jobset.key, v) for v in self.domain_evicts(domain)
        ):
            return False
        reservations = self.domain_reservations(domain)
        if not reservations:
            return True
        duration = expected_duration_s(jobset, self.options.time)
        return not any(_closes(r, jobset.key, duration) for r in reservations)

    @cached_property
    def _reservations_on_node(self) -> dict[str, tuple[DomainReservation, ...]]:
        """Node -> the reservations of the exclusive domains holding it (overlapping domains'
        included, as `reserved` gives them), and those holding it alone (`reserved_nodes`)."""
        found: dict[str, dict[int, DomainReservation]] = {}
        for d in self.exclusive_domains:
            for r in self.domain_reservations(d):
                for n in d.nodes:
                    found.setdefault(n, {})[id(r)] = r
        for n, rs in self.reserved_nodes.items():
            for r in rs:
                found.setdefault(n, {})[id(r)] = r
        return {n: tuple(rs.values()) for n, rs in found.items()}

    def node_reservations(self, node: str) -> tuple[DomainReservation, ...]:
        """The reservations of the exclusive domains holding `node`, and of `node` alone."""
        return self._reservations_on_node.get(node, ())

    def node_open_to(self, node: str, jobset: JobSetRequest) -> bool:
        """A pod of `jobset` without an exclusive key may use `node` as far as reservations go:
        no domain holding it is reserved for another JobSet's start before `jobset` is expected
        to end. Such pods hold no domain of their own, yet one running into a reservation
        delays its JobSet's start as an exclusive child Job would (the rule of
        `domain_open_to`, node by node). With victims to evict, a node one of them runs on is
        open only to a JobSet that may evict every one there, as its domain is: freed for
        another's sake, it was taken by a JobSet of the victim's own priority, and the checker
        refused the plan ("preempted by ... of priority 100", `placer explain` on a busy
        fleet)."""
        victims = self.victims
        if victims is not None and not all(
            victims.can_evict(jobset.key, v) for v in victims.on_node.get(node, ())
        ):
            return False
        return not self.node_reserved_against(node, jobset)

    def closing_run_s(self, jobset: JobSetRequest) -> float | None:
        """How long `jobset` runs as reservations judge it (`node_open_to`): a longer run finds
        every node a shorter one does closed, and more; 0 when the snapshot holds no
        reservation. None when `jobset` holds one itself (its own domains stay open to it, so
        runs of other JobSets tell nothing of its)."""
        reserving = {r.jobset for r in self.snapshot.reservations}
        if not reserving:
            return 0.0
        if jobset.key in reserving:
            return None
        return expected_duration_s(jobset, self.options.time)

    def node_reserved_against(self, node: str, jobset: JobSetRequest | None) -> tuple[str, ...]:
        """`reserved_against` for the domains holding `node`: the JobSets whose reservations
        close it to `jobset`'s pods without an exclusive key (None: to an outsider)."""
        return _against(self.node_reservations(node), jobset, self.options)

    def reserved_against(self, domain: Domain, jobset: JobSetRequest | None) -> tuple[str, ...]:
        """The JobSets whose reservations of `domain` close it to `jobset` (`domain_open_to`),
        sorted; for no JobSet (`None`: an outsider expected to run past every start), every
        JobSet holding a reservation of it."""
        return _against(self.domain_reservations(domain), jobset, self.options)

    @cached_property
    def shape_index(self) -> ShapeIndex:
        """What each node offers each job class's pod shape (see `placer.solver.shape_index`)."""
        return ShapeIndex(
            self.snapshot.nodes,
            [jc.rjob.pod for jc in self.job_classes],
            extended_resource_toleration=self.options.extended_resource_toleration,
            topology_labels=self.topology_labels,
        )

    def shape_facts(self, pod: PodShape) -> ShapeFacts:
        """What each node of the snapshot offers pods of this shape."""
        return self.shape_index.facts_for(pod)

    def class_facts(self, jc: JobClass) -> ShapeFacts:
        """`shape_facts` of `jc`'s pod shape; `jc` is one of this context's job classes."""
        return self.shape_index.facts[jc.index]

    def node_capacity(self, jc: JobClass, node: Node) -> int:
        """Pods of `jc`'s shape the node (one of the snapshot's, by name) can take."""
        return self.class_facts(jc).capacity(node.name)

    def domain_capacity(self, jc: JobClass, domain: Domain) -> int:
        """Pods of `jc`'s shape that fit on the domain's nodes, when the domain is its alone."""
        return self.class_facts(jc).total_capacity(domain.nodes)

    def fits(self, jc: JobClass, domain: Domain) -> bool:
        """Can one child Job of `jc` take `domain` to itself, ignoring the rest of the plan?"""
        return (
            domain.key == jc.exclusive_key
            and self.domain_open_to(domain, jc.jobset)
            and self.domain_capacity(jc, domain) >= jc.rjob.pods_per_job
        )

    @cached_property
    def _free_accelerator_units(self) -> dict[str, Decimal]:
        """usable node -> its free accelerator units"""
        names = {k for n in self.snapshot.nodes for k in n.free}
        accelerators = sorted(k for k in names if is_accelerator(k))
        return {
            n.name: sum((n.free.get(k, Decimal(0)) for k in accelerators), Decimal(0))
            for n in self.snapshot.nodes
            if n.usable
        }

    @cached_property
    def key_domains(self) -> dict[str, KeyDomains]:
        """exclusive key -> its domains and their facts, for every exclusive key of the queue."""
        numbers = self.shape_index.shape_numbers
        facts = self.shape_index.facts
        shapes: dict[str, dict[int, ShapeFacts]] = {k: {} for k in self.exclusive_keys}
        for jc in self.job_classes:
            if jc.exclusive_key:
                shapes[jc.exclusive_key][numbers[jc.index]] = facts[jc.index]
        result: dict[str, KeyDomains] = {}
        for key, by_number in shapes.items():
            domains = tuple(self.domains(key))
            result[key] = KeyDomains(
                domains=domains,
                held_by=tuple(self.domain_held_by(d) for d in domains),
                free_accelerators=tuple(self.free_accelerators(d) for d in domains),
                capacity={
                    number: tuple(f.total_capacity(d.nodes) for d in domains)
                    for number, f in sorted(by_number.items())
                },
            )
        return result

    @cached_property
    def nodes_in_exclusive_domains(self) -> frozenset[str]:
        """The nodes of every exclusive domain of the queue."""
        return frozenset(n for d in self.exclusive_domains for n in d.nodes)

    def shared_pod_order(self, nodes: Iterable[str], rank: Mapping[str, int]) -> list[str]:
        """`nodes` in the order pods without an exclusive key are packed on them, one rule for
        the ledger (`PlacementLedger.place_shared`) and the reservation pass
        (`time.shared.timeline`): outside every exclusive domain of the queue first (such pods
        close a domain to every exclusive child Job), then by `rank` (`shared_pod_rank`,
        missing: 0), then by name."""
        inside = self.nodes_in_exclusive_domains
        return sorted(nodes, key=lambda n: (n in inside, rank.get(n, 0), n))

    def shared_pod_rank(self, busy: Collection[str] = frozenset()) -> dict[str, int]:
        """Per node inside a free exclusive domain of the queue, how many of the queue's
        exclusive job classes could take a domain holding it: what pods without an exclusive key
        there would cost the JobSets of the queue (their pods close the domain to every
        exclusive child Job). The ledger packs such pods on the nodes of the lowest rank first
        (`PlacementLedger.place_shared`), and the reservation pass judges them the same way
        (`time.shared.room`). A domain held by a running JobSet, or with a node in `busy`,
        counts no class: it is closed already."""
        numbers = self.shape_index.shape_numbers
        rank: dict[str, int] = {}
        for key, table in self.key_domains.items():
            # classes of one pod shape and size share the answer: count them once each
            sizes = Counter(
                (numbers[jc.index], jc.rjob.pods_per_job)
                for jc in self.job_classes
                if jc.exclusive_key == key
            )
            for i, domain in enumerate(table.domains):
                if table.held_by[i] or (busy and any(n in busy for n in domain.nodes)):
                    continue
                count = sum(
                    n for (shape, need), n in sizes.items() if table.capacity[shape][i] >= need
                )
                if count:
                    for node in domain.nodes:
                        rank[node] = rank.get(node, 0) + count
        return rank

    def free_accelerators(self, domain: Domain) -> int:
        """Free accelerator units on the domain's usable nodes: what stranding is measured in."""
        units = self._free_accelerator_units
        return int(sum((units.get(n, Decimal(0)) for n in domain.nodes), Decimal(0)))

    def job_units(self, jc: JobClass) -> int:
        return jc.rjob.accelerator_units_per_job


def _closes(reservation: DomainReservation, jobset: str, duration_s: float) -> bool:
    """A reservation of another JobSet starting before `jobset`, expected to run `duration_s`,
    would end: it may not take the domain now (one ending by then runs as backfill)."""
    return reservation.jobset != jobset and duration_s > reservation.start_s


def _against(
    reservations: Sequence[DomainReservation], jobset: JobSetRequest | None, options: SolveOptions
) -> tuple[str, ...]:
    """The JobSets of `reservations` that close their domain to `jobset` (all of them for
    `None`), sorted."""
    if not reservations:
        return ()
    if jobset is None:
        return tuple(sorted({r.jobset for r in reservations}))
    duration = expected_duration_s(jobset, options.time)
    return tuple(sorted({r.jobset for r in reservations if _closes(r, jobset.key, duration)}))
