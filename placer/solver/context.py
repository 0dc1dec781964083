"""Facts every solver needs, computed once per solve: queue order, domains, who fits where.

Greedy baselines, CP-SAT and the explanations all read this, so they agree on what "fits" means; the
independent plan checker does not (it re-derives everything from the snapshot). Phase "snapshot" of
the planner.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cached_property

from placer.model.cluster import ClusterSnapshot, DomainReservation, Node
from placer.model.options import SolveOptions
from placer.model.resources import is_accelerator, is_extended_resource, pods_that_fit
from placer.model.scheduling import Toleration, matches_term, tolerates
from placer.model.topology import Domain, Topology, default_levels
from placer.model.workload import JobSetRequest, PodShape, ReplicatedJobRequest
from placer.solver.release import expected_duration_s

__all__ = ["JobClass", "PlacementContext", "ShapeFacts", "node_exclusion", "node_pod_capacity"]


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


def node_exclusion(node: Node, pod: PodShape, *, extended_resource_toleration: bool) -> str | None:
    """Why `node` can never take a pod of this shape, or None. The strings feed explanations."""
    if not node.ready:
        return "NotReady"
    if node.unschedulable:
        return "cordoned"
    for key, value in sorted(pod.node_selector.items()):
        if node.labels.get(key) != value:
            return f"nodeSelector {key}={value}"
    if pod.affinity_terms and not any(
        matches_term(node.labels, node.name, t) for t in pod.affinity_terms
    ):
        return "node affinity " + " | ".join(str(t) for t in pod.affinity_terms)
    tolerations = pod.tolerations
    if extended_resource_toleration:
        extra = tuple(_ert_toleration(r) for r in pod.requests if is_extended_resource(r))
        tolerations = (*tolerations, *extra)
    for taint in node.taints:
        if taint.blocks_scheduling and not tolerates(tolerations, taint):
            return f"taint {taint}"
    return None


def _ert_toleration(resource: str) -> Toleration:
    """What the ExtendedResourceToleration admission plugin adds for each extended resource."""
    return Toleration(key=resource, operator="Exists")


def node_pod_capacity(node: Node, pod: PodShape) -> int:
    """Pods of this shape that fit on the node's free capacity, host ports included."""
    fit = pods_that_fit(node.free, pod.requests)
    if pod.host_ports:
        used = set(node.used_host_ports)
        if any(p in used for p in pod.host_ports):
            return 0
        fit = min(fit, 1)
    return fit


class ShapeFacts:
    """What each node of a snapshot offers one pod shape, whatever the plan.

    `node_exclusion` and `node_pod_capacity` read a node's readiness, cordon, taints, free
    resources and host ports, and only the labels (and name) the pod's selector and affinity name.
    Nodes that agree on all of those get one answer: a fleet of thousands of nodes has a handful of
    such profiles, and every solver asks about every node for every shape.
    """

    def __init__(
        self, pod: PodShape, nodes: Mapping[str, Node], states: Mapping[str, int], *, ert: bool
    ) -> None:
        self.pod = pod
        self._nodes = nodes
        self._states = states
        self._ert = ert
        keys = set(pod.node_selector)
        keys.update(r.key for t in pod.affinity_terms for r in t.match_expressions)
        self._label_keys = tuple(sorted(keys))
        self._by_name = any(t.match_node_names for t in pod.affinity_terms)
        self._profiles: dict[str, Hashable] = {}
        self._facts: dict[Hashable, tuple[str | None, int]] = {}

    def profile(self, name: str) -> Hashable:
        """Equal for nodes that offer this shape the same."""
        found = self._profiles.get(name)
        if found is None:
            labels = self._nodes[name].labels
            found = (
                self._states[name],
                tuple(labels.get(k) for k in self._label_keys),
                name if self._by_name else None,
            )
            self._profiles[name] = found
        return found

    def _of(self, name: str) -> tuple[str | None, int]:
        key = self.profile(name)
        found = self._facts.get(key)
        if found is None:
            node = self._nodes[name]
            exclusion = node_exclusion(node, self.pod, extended_resource_toleration=self._ert)
            found = self._facts[key] = (exclusion, node_pod_capacity(node, self.pod))
        return found

    def exclusion(self, name: str) -> str | None:
        """`node_exclusion` of the node."""
        return self._of(name)[0]

    def raw(self, name: str) -> int:
        """`node_pod_capacity` of the node: pods that fit by room and ports, exclusions ignored."""
        return self._of(name)[1]

    def capacity(self, name: str) -> int:
        """Pods of this shape the node can take: 0 when excluded, else its room."""
        exclusion, raw = self._of(name)
        return 0 if exclusion else raw


@dataclass
class PlacementContext:
    snapshot: ClusterSnapshot
    jobsets_given: Sequence[JobSetRequest]
    options: SolveOptions
    _capacity: dict[tuple[int, str], int] = field(default_factory=dict, repr=False)
    _shapes: dict[str, ShapeFacts] = field(default_factory=dict, repr=False)
    """pod shape signature -> its facts"""
    _class_shapes: dict[int, tuple[PodShape, ShapeFacts]] = field(default_factory=dict, repr=False)
    """job class index -> its pod shape and that shape's facts (signatures are slow to compute)"""
    _free_accelerators: dict[tuple[str, ...], int] = field(default_factory=dict, repr=False)
    """domain's nodes -> their free accelerator units"""

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

    @cached_property
    def reserved(
        self,
    ) -> dict[tuple[str, tuple[tuple[str, str], ...]], tuple[DomainReservation, ...]]:
        """(key, path) -> reservations of the domain for pending JobSets' future starts."""
        found: dict[tuple[str, tuple[tuple[str, str], ...]], list[DomainReservation]] = {}
        for r in self.snapshot.reservations:
            found.setdefault((r.key, r.path), []).append(r)
        return {k: tuple(sorted(v, key=lambda r: r.start_s)) for k, v in found.items()}

    def domain_reservations(self, domain: Domain) -> tuple[DomainReservation, ...]:
        return self.reserved.get((domain.key, domain.path), ())

    def domain_open_to(self, domain: Domain, jobset: JobSetRequest) -> bool:
        """No other JobSet runs there, and every reservation of it is the JobSet's own or starts
        after the JobSet is expected to end (backfill)."""
        if any(owner != jobset.key for owner in self.domain_held_by(domain)):
            return False
        reservations = self.domain_reservations(domain)
        if not reservations:
            return True
        duration = expected_duration_s(jobset, self.options.time)
        return all(r.jobset == jobset.key or duration <= r.start_s for r in reservations)

    @cached_property
    def _node_states(self) -> dict[str, int]:
        """node -> an id shared by nodes equal in all but labels and name, as `ShapeFacts` reads."""
        ids: dict[Hashable, int] = {}
        states: dict[str, int] = {}
        for n in self.snapshot.nodes:
            state = (
                n.ready,
                n.unschedulable,
                n.taints,
                tuple(sorted(n.free.items())),
                n.used_host_ports,
            )
            states[n.name] = ids.setdefault(state, len(ids))
        return states

    def shape_facts(self, pod: PodShape) -> ShapeFacts:
        """What each node of the snapshot offers pods of this shape (memoized per shape)."""
        signature = pod.signature()
        found = self._shapes.get(signature)
        if found is None:
            ert = self.options.extended_resource_toleration
            found = ShapeFacts(pod, self.nodes, self._node_states, ert=ert)
            self._shapes[signature] = found
        return found

    def class_facts(self, jc: JobClass) -> ShapeFacts:
        """`shape_facts` of `jc`'s pod shape."""
        found = self._class_shapes.get(jc.index)
        if found is None or found[0] is not jc.rjob.pod:
            found = self._class_shapes[jc.index] = (jc.rjob.pod, self.shape_facts(jc.rjob.pod))
        return found[1]

    def node_capacity(self, jc: JobClass, node: Node) -> int:
        if self.nodes.get(node.name) is node:
            return self.class_facts(jc).capacity(node.name)
        # a node from elsewhere (a what-if): judged on its own
        if node_exclusion(
            node,
            jc.rjob.pod,
            extended_resource_toleration=self.options.extended_resource_toleration,
        ):
            return 0
        return node_pod_capacity(node, jc.rjob.pod)

    def domain_capacity(self, jc: JobClass, domain: Domain) -> int:
        """Pods of `jc`'s shape that fit on the domain's nodes, when the domain is its alone."""
        key = (jc.index, f"{domain.key}\0{domain.id}")
        if key not in self._capacity:
            facts = self.class_facts(jc)
            self._capacity[key] = sum(facts.capacity(n) for n in domain.nodes)
        return self._capacity[key]

    def fits(self, jc: JobClass, domain: Domain) -> bool:
        """Can one child Job of `jc` take `domain` to itself, ignoring the rest of the plan?"""
        return (
            domain.key == jc.exclusive_key
            and self.domain_open_to(domain, jc.jobset)
            and self.domain_capacity(jc, domain) >= jc.rjob.pods_per_job
        )

    def free_accelerators(self, domain: Domain) -> int:
        """Free accelerator units on the domain's usable nodes: what stranding is measured in."""
        found = self._free_accelerators.get(domain.nodes)
        if found is None:
            total = Decimal(0)
            for n in domain.nodes:
                node = self.nodes[n]
                if node.usable:
                    total += sum((v for k, v in node.free.items() if is_accelerator(k)), Decimal(0))
            found = self._free_accelerators[domain.nodes] = int(total)
        return found

    def job_units(self, jc: JobClass) -> int:
        return jc.rjob.accelerator_units_per_job
