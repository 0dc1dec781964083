"""Phase "aggregate": fold interchangeable domains into classes so the model counts, not enumerates.

Child Jobs of one replicatedJob are interchangeable (a `JobClass`). Domains are interchangeable when
their nodes look the same to every pod in the queue: same free capacity, same relevant labels,
taints and health, same enclosing higher-level domains, same running JobSets. Such domains form a
`DomainClass`; the model decides how many of each class every JobClass takes. A fleet of 2,000 node
pools typically folds into a few dozen classes, which is what makes CP-SAT prove optimality quickly.

Nodes outside every exclusive domain form `NodeGroup`s for child Jobs without an exclusive key.
When domains of two exclusive keys overlap (say racks and blocks in one queue), domains are not
folded: each is its own class and overlapping pairs are recorded, so the model can forbid both.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from placer.model.cluster import Node
from placer.model.resources import is_accelerator
from placer.model.topology import HOSTNAME, Domain
from placer.solver.context import JobClass, PlacementContext

__all__ = ["AggregatedProblem", "DomainClass", "NodeGroup", "aggregate"]


@dataclass(frozen=True)
class DomainClass:
    id: str
    key: str
    members: tuple[Domain, ...]
    """Interchangeable domains, sorted by path: materialization takes them in this order."""
    fits: frozenset[int]
    """Indices of the exclusive JobClasses one member can host."""
    stranded: dict[int, int]
    """JobClass index -> free accelerators left idle in a member that JobClass takes."""
    parents: dict[str, str]
    """Locality level -> id of the enclosing domain at that level."""
    shared_capacity: dict[int, int]
    """Non-exclusive JobClass index -> its pods that fit on one member left unreserved."""
    shared_resources: dict[str, int]
    """Free resources of one member (scaled integers) for the shared-pod relaxation."""

    @property
    def size(self) -> int:
        return len(self.members)


@dataclass(frozen=True)
class NodeGroup:
    """Nodes outside every exclusive domain with the same capacity for every shared JobClass."""

    id: str
    nodes: tuple[str, ...]
    capacity: dict[int, int]
    """Non-exclusive JobClass index -> pods that fit on one node."""
    resources: dict[str, int]
    """Free resources of one node (scaled integers)."""
    parents: dict[str, str] = field(default_factory=dict)
    """Required-locality level of a shared JobClass -> id of the enclosing domain."""


@dataclass
class AggregatedProblem:
    ctx: PlacementContext
    exclusive: list[JobClass]
    shared: list[JobClass]
    domain_classes: list[DomainClass]
    node_groups: list[NodeGroup]
    overlaps: list[tuple[str, str]] = field(default_factory=list)
    span_levels: dict[str, list[str]] = field(default_factory=dict)
    """Exclusive key -> levels above it whose domains a JobSet should span as few of as possible."""
    required_level: dict[int, str] = field(default_factory=dict)
    """JobClass index -> level all its child Jobs must share (Kueue required topology)."""
    shared_levels: list[str] = field(default_factory=list)
    """Required-topology levels of shared JobClasses: their pods must share one such domain."""
    preferred_level: dict[int, str] = field(default_factory=dict)
    impossible: dict[str, str] = field(default_factory=dict)
    """JobSet key -> why no plan can admit it, found before solving."""
    resource_scale: dict[str, Decimal] = field(default_factory=dict)

    def classes_for(self, jc: JobClass) -> list[DomainClass]:
        return [c for c in self.domain_classes if jc.index in c.fits]


def _scale_for(values: list[Decimal]) -> Decimal:
    """Integer unit per resource: milli-units for small quantities, MiB for byte-sized ones."""
    biggest = max(values, default=Decimal(0))
    return Decimal(2**20) if biggest > Decimal(10**9) else Decimal("0.001")


NodeSignature = tuple[Any, ...]
"""What a node looks like to the queue; sortable so domain signatures are canonical."""


class _Signatures:
    """Hashable descriptions of nodes and domains as the queue sees them (cached)."""

    def __init__(self, ctx: PlacementContext) -> None:
        self.ctx = ctx
        keys: set[str] = set()
        by_name = False
        for jc in ctx.job_classes:
            keys.update(jc.rjob.pod.node_selector)
            for term in jc.rjob.pod.affinity_terms:
                keys.update(r.key for r in term.match_expressions)
                by_name = by_name or bool(term.match_node_names)
        self.label_keys = sorted(keys)
        self.by_name = by_name
        self._node: dict[str, NodeSignature] = {}

    def node(self, node: Node) -> NodeSignature:
        if node.name not in self._node:
            self._node[node.name] = (
                tuple(node.labels.get(k) for k in self.label_keys),
                node.name if self.by_name else "",
                tuple(sorted((t.key, t.value, t.effect) for t in node.taints)),
                tuple(sorted(node.free.items())),
                node.ready,
                node.unschedulable,
                tuple(sorted(node.used_host_ports)),
            )
        return self._node[node.name]


def _parents(ctx: PlacementContext, domain: Domain, levels: list[str]) -> dict[str, str]:
    result: dict[str, str] = {}
    for level in levels:
        ids = {ctx.topology.enclosing(ctx.nodes[n], level) for n in domain.nodes}
        if len(ids) == 1 and None not in ids:
            path = ids.pop()
            assert path is not None
            result[level] = "/".join(v for _, v in path)
    return result


def _holders_seen_by_queue(holders: tuple[str, ...], queued: set[str]) -> tuple[str, ...]:
    """What the queue can tell apart about who holds a domain: holders outside the queue all look
    alike (closed to every queued JobSet), so thousands of held domains still fold together."""
    if not holders:
        return ()
    return tuple(sorted({h if h in queued else "<other>" for h in holders}))


def _node_parents(ctx: PlacementContext, node: Node, levels: list[str]) -> dict[str, str]:
    result: dict[str, str] = {}
    for level in levels:
        path = ctx.topology.enclosing(node, level)
        if path is not None:
            result[level] = "/".join(v for _, v in path)
    return result


def _span_levels(ctx: PlacementContext, key: str) -> list[str]:
    """Levels strictly coarser than `key`: every domain of `key` lies inside one domain of them."""
    levels = [lv for lv in ctx.topology.levels if lv not in (key, HOSTNAME)]
    if key in ctx.topology.levels:
        depth = ctx.topology.levels.index(key)
        levels = [lv for lv in levels if ctx.topology.levels.index(lv) < depth]
    coarser = []
    for level in levels:
        spans = [
            {ctx.topology.enclosing(ctx.nodes[n], level) for n in d.nodes} - {None}
            for d in ctx.domains(key)
        ]
        if all(len(s) <= 1 for s in spans) and any(spans):
            coarser.append(level)
    return coarser


def _domains_overlap(ctx: PlacementContext) -> bool:
    seen: dict[str, str] = {}
    for d in ctx.exclusive_domains:
        for n in d.nodes:
            if seen.setdefault(n, d.key) != d.key:
                return True
    return False


def aggregate(ctx: PlacementContext) -> AggregatedProblem:
    exclusive = [jc for jc in ctx.job_classes if jc.exclusive_key]
    shared = [jc for jc in ctx.job_classes if not jc.exclusive_key]
    problem = AggregatedProblem(ctx, exclusive, shared, [], [])
    problem.shared_levels = sorted(
        {jc.rjob.required_topology for jc in shared if jc.rjob.required_topology}
    )
    _locality_requirements(problem)
    sig = _Signatures(ctx)
    overlap = _domains_overlap(ctx)
    per_resource: dict[str, list[Decimal]] = defaultdict(list)
    for n in ctx.snapshot.nodes:
        for name, value in n.free.items():
            per_resource[name].append(value)
    for jc in shared:
        for name, value in jc.rjob.pod.requests.items():
            per_resource[name].append(value)
    problem.resource_scale = {r: _scale_for(v) for r, v in sorted(per_resource.items())}

    shape_of = {jc.index: jc.rjob.pod.signature() for jc in ctx.job_classes}
    cap_cache: dict[tuple[str, Hashable], int] = {}

    def node_cap(jc: JobClass, node: Node) -> int:
        k = (shape_of[jc.index], sig.node(node))
        if k not in cap_cache:
            cap_cache[k] = ctx.node_capacity(jc, node)
        return cap_cache[k]

    def domain_caps(classes: list[JobClass], nodes: list[Node]) -> dict[int, int]:
        """Pods of each JobClass that fit on `nodes`, computed once per distinct pod shape."""
        per_shape: dict[str, int] = {}
        result: dict[int, int] = {}
        for jc in classes:
            shape = shape_of[jc.index]
            if shape not in per_shape:
                per_shape[shape] = sum(node_cap(jc, n) for n in nodes)
            result[jc.index] = per_shape[shape]
        return result

    queued = {js.key for js in ctx.jobsets}

    def scaled_free(nodes: list[Node]) -> dict[str, int]:
        total: dict[str, Decimal] = defaultdict(Decimal)
        for n in nodes:
            if n.usable:
                for r, v in n.free.items():
                    total[r] += v
        return {
            r: int(v / problem.resource_scale[r])
            for r, v in sorted(total.items())
            if r in problem.resource_scale
        }

    for key in ctx.exclusive_keys:
        problem.span_levels[key] = _span_levels(ctx, key)
        key_classes = [jc for jc in exclusive if jc.exclusive_key == key]
        groups: dict[tuple[Any, ...], list[Domain]] = defaultdict(list)
        for d in ctx.domains(key):
            parents = _parents(ctx, d, [*problem.span_levels[key], *problem.shared_levels])
            raw = (
                d.path if overlap else "",
                tuple(sorted(parents.items())),
                tuple(sorted(sig.node(ctx.nodes[n]) for n in d.nodes)),
                _holders_seen_by_queue(ctx.domain_held_by(d), queued),
            )
            groups[raw].append(d)
        for raw, members in sorted(groups.items(), key=lambda kv: kv[1][0].path):
            rep = members[0]
            rep_nodes = [ctx.nodes[n] for n in rep.nodes]
            caps = domain_caps(key_classes, rep_nodes)
            fits = frozenset(
                jc.index
                for jc in key_classes
                if caps[jc.index] >= jc.rjob.pods_per_job and ctx.domain_open_to(rep, jc.jobset)
            )
            free_acc = ctx.free_accelerators(rep)
            stranded = {i: max(0, free_acc - _accelerators_used(ctx, i)) for i in sorted(fits)}
            shared_cap = domain_caps(shared, rep_nodes)
            if not fits and not any(shared_cap.values()):
                continue
            problem.domain_classes.append(
                DomainClass(
                    id=f"c{len(problem.domain_classes)}",
                    key=key,
                    members=tuple(members),
                    fits=fits,
                    stranded=stranded,
                    parents=dict(raw[1]),
                    shared_capacity=shared_cap,
                    shared_resources=scaled_free(rep_nodes) if shared else {},
                )
            )

    if overlap:
        problem.overlaps = _overlapping_pairs(problem.domain_classes)
    if shared:
        _node_groups(problem, sig, node_cap, scaled_free, overlap)
    return problem


def _accelerators_used(ctx: PlacementContext, jc_index: int) -> int:
    rjob = ctx.job_classes[jc_index].rjob
    per_pod = sum((v for k, v in rjob.pod.requests.items() if is_accelerator(k)), Decimal(0))
    return int(per_pod * rjob.pods_per_job)


def _locality_requirements(problem: AggregatedProblem) -> None:
    """Kueue required/preferred topology per JobClass; a level not above the key is checked here."""
    ctx = problem.ctx
    for jc in problem.exclusive:
        key = jc.exclusive_key
        assert key is not None
        for level, target in (
            (jc.rjob.required_topology, problem.required_level),
            (jc.rjob.preferred_topology, problem.preferred_level),
        ):
            if not level:
                continue
            if level == key and jc.rjob.replicas == 1:
                continue
            coarser = _span_levels(ctx, key) if level != key else []
            if level in coarser:
                target[jc.index] = level
            elif target is problem.required_level:
                problem.impossible.setdefault(
                    jc.jobset.key,
                    f"{jc.rjob.name}: required topology {level} does not contain whole domains of "
                    f"{key}, so {jc.rjob.replicas} child Jobs cannot share one",
                )


def _overlapping_pairs(classes: list[DomainClass]) -> list[tuple[str, str]]:
    owner: dict[str, list[str]] = defaultdict(list)
    for c in classes:
        for d in c.members:
            for n in d.nodes:
                owner[n].append(c.id)
    pairs = {tuple(sorted((a, b))) for ids in owner.values() for a in ids for b in ids if a < b}
    return sorted((a, b) for a, b in pairs)


NodeCapacity = Callable[[JobClass, Node], int]
ScaledFree = Callable[[list[Node]], dict[str, int]]


def _node_groups(
    problem: AggregatedProblem,
    sig: _Signatures,
    node_cap: NodeCapacity,
    scaled_free: ScaledFree,
    overlap: bool,
) -> None:
    """Free nodes (in no exclusive domain) grouped by signature."""
    ctx = problem.ctx
    in_domain = {n for d in ctx.exclusive_domains for n in d.nodes}
    groups: dict[Hashable, list[Node]] = defaultdict(list)
    for node in sorted(ctx.snapshot.nodes, key=lambda n: n.name):
        if node.name in in_domain or not node.usable:
            continue
        parents = tuple(sorted(_node_parents(ctx, node, problem.shared_levels).items()))
        groups[(sig.node(node), parents)].append(node)
    for nodes in sorted(groups.values(), key=lambda ns: ns[0].name):
        capacity = {jc.index: node_cap(jc, nodes[0]) for jc in problem.shared}
        if not any(capacity.values()):
            continue
        problem.node_groups.append(
            NodeGroup(
                id=f"g{len(problem.node_groups)}",
                nodes=tuple(n.name for n in nodes),
                capacity=capacity,
                resources=scaled_free([nodes[0]]),
                parents=_node_parents(ctx, nodes[0], problem.shared_levels),
            )
        )
    if overlap:
        _shared_room_by_owner(problem, node_cap, scaled_free)


def _shared_room_by_owner(
    problem: AggregatedProblem, node_cap: NodeCapacity, scaled_free: ScaledFree
) -> None:
    """With overlapping keys (singleton classes) each node's shared room is counted once, in the
    first class holding it; the model then also closes that room when an overlapping domain is
    taken (see `add_overlapping_domains`)."""
    ctx = problem.ctx
    owner: dict[str, str] = {}
    for c in problem.domain_classes:
        for n in c.members[0].nodes:
            owner.setdefault(n, c.id)
    for i, c in enumerate(problem.domain_classes):
        owned = [ctx.nodes[n] for n in c.members[0].nodes if owner[n] == c.id]
        room = {jc.index: sum(node_cap(jc, n) for n in owned) for jc in problem.shared}
        problem.domain_classes[i] = DomainClass(
            id=c.id,
            key=c.key,
            members=c.members,
            fits=c.fits,
            stranded=c.stranded,
            parents=c.parents,
            shared_capacity=room,
            shared_resources=scaled_free(owned),
        )
