"""Phase "aggregate": fold interchangeable domains into classes so the model counts, not enumerates.

Child Jobs of one replicatedJob are interchangeable (a `JobClass`). Domains are interchangeable when
their nodes look the same to every pod in the queue: same free capacity, same relevant labels,
taints and health, same enclosing higher-level domains, same running JobSets. Such domains form a
`DomainClass`; the model decides how many of each class every JobClass takes. A fleet of 2,000 node
pools typically folds into a few dozen classes, which is what makes CP-SAT prove optimality quickly.

Nodes outside every exclusive domain form `NodeGroup`s for child Jobs without an exclusive key.
When domains of two exclusive keys overlap (say racks and blocks in one queue), domains are not
folded: each is its own class and overlapping pairs are recorded, so the model can forbid both.

Steps of `aggregate`, each one function below:
  split       exclusive and shared JobClasses
  scales      an integer unit per resource for the shared-pod relaxation
  locality    required and preferred levels per JobClass; what no plan can satisfy
  packing     levels whose domains each Kueue-annotated shared JobClass should use few of
  kueue       shared JobClasses whose Kueue TAS request (slices included) fails on an empty plan
  classes     domain classes of every exclusive key
  overlaps    pairs of classes whose domains share a node (only when keys overlap)
  groups      node groups for shared pods, outside every exclusive domain
  room        with overlapping keys, each node's shared room counted in one class only
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

from placer.model.cluster import Node
from placer.model.resources import is_accelerator
from placer.model.topology import HOSTNAME, Domain
from placer.solver.context import JobClass, PlacementContext
from placer.solver.cpsat.problem import AggregatedProblem, DomainClass, NodeGroup, room_owners
from placer.solver.cpsat.signatures import QueueView, enclosing_ids, node_parents, span_levels_of
from placer.solver.greedy.tas import TasTree, kueue_failure

__all__ = [
    "KUEUE_VERDICT",
    "TopologyRequests",
    "aggregate",
    "domain_classes",
    "kueue_impossible",
    "locality_requirements",
    "node_groups",
    "overlapping_pairs",
    "packing_levels",
    "resource_scales",
    "shared_room_by_owner",
    "split_job_classes",
]


def aggregate(ctx: PlacementContext) -> AggregatedProblem:
    """The queue and the cluster in class terms, through the steps listed above."""
    exclusive, shared = split_job_classes(ctx)
    shared_levels = tuple(
        sorted({jc.rjob.required_topology for jc in shared if jc.rjob.required_topology})
    )
    view = QueueView(ctx, resource_scales(ctx, shared))
    span_levels = {key: span_levels_of(ctx, key) for key in ctx.exclusive_keys}
    locality = locality_requirements(ctx, exclusive, span_levels)
    packing = packing_levels(ctx, shared)
    where_levels = tuple(
        lv
        for lv in ctx.topology.levels
        if lv in shared_levels or any(lv in p for p in packing.values())
    )
    overlap = _domains_overlap(ctx)
    classes = domain_classes(view, exclusive, shared, span_levels, where_levels, overlap=overlap)
    groups: tuple[NodeGroup, ...] = ()
    if shared:
        groups = node_groups(view, shared, where_levels)
        if overlap:
            classes = shared_room_by_owner(view, shared, classes)
    return AggregatedProblem(
        ctx=ctx,
        exclusive=exclusive,
        shared=shared,
        domain_classes=classes,
        node_groups=groups,
        overlaps=overlapping_pairs(classes) if overlap else (),
        span_levels=span_levels,
        required_level=locality.required,
        shared_levels=shared_levels,
        preferred_level=locality.preferred,
        packing_levels=packing,
        impossible={**kueue_impossible(ctx, shared), **locality.impossible},
        resource_scale=view.resource_scale,
    )


def split_job_classes(ctx: PlacementContext) -> tuple[tuple[JobClass, ...], tuple[JobClass, ...]]:
    """(exclusive, shared): JobClasses with an exclusive key, and those without."""
    exclusive = tuple(jc for jc in ctx.job_classes if jc.exclusive_key)
    shared = tuple(jc for jc in ctx.job_classes if not jc.exclusive_key)
    return exclusive, shared


def _scale_for(values: list[Decimal]) -> Decimal:
    """Integer unit per resource: milli-units for small quantities, MiB for byte-sized ones."""
    biggest = max(values, default=Decimal(0))
    return Decimal(2**20) if biggest > Decimal(10**9) else Decimal("0.001")


def resource_scales(ctx: PlacementContext, shared: Sequence[JobClass]) -> dict[str, Decimal]:
    """Resource -> integer unit, sized by the largest free amount or shared request seen."""
    per_resource: dict[str, list[Decimal]] = defaultdict(list)
    for n in ctx.snapshot.nodes:
        for name, value in n.free.items():
            per_resource[name].append(value)
    for jc in shared:
        for name, value in jc.rjob.pod.requests.items():
            per_resource[name].append(value)
    return {r: _scale_for(v) for r, v in sorted(per_resource.items())}


@dataclass(frozen=True)
class TopologyRequests:
    """Kueue topology requests per JobClass, as the model states them."""

    required: Mapping[int, str]
    preferred: Mapping[int, str]
    impossible: Mapping[str, str]
    """JobSet key -> why its required topology cannot hold (the level does not contain whole
    domains of its exclusive key)."""


def locality_requirements(
    ctx: PlacementContext,
    exclusive: Sequence[JobClass],
    span_levels: Mapping[str, Sequence[str]],
) -> TopologyRequests:
    """Kueue required/preferred topology per JobClass; a level not above the key is checked here."""
    required: dict[int, str] = {}
    preferred: dict[int, str] = {}
    impossible: dict[str, str] = {}
    for jc in exclusive:
        key = jc.exclusive_key
        assert key is not None
        for level, target in (
            (jc.rjob.required_topology, required),
            (jc.rjob.preferred_topology, preferred),
        ):
            if not level:
                continue
            if level == key and jc.rjob.replicas == 1:
                continue
            coarser = span_levels[key] if level != key else ()
            if level in coarser:
                target[jc.index] = level
            elif target is required:
                impossible.setdefault(
                    jc.jobset.key,
                    f"{jc.rjob.name}: required topology {level} does not contain whole domains of "
                    f"{key}, so {jc.rjob.replicas} child Jobs cannot share one",
                )
    return TopologyRequests(required=required, preferred=preferred, impossible=impossible)


def packing_levels(ctx: PlacementContext, shared: Sequence[JobClass]) -> dict[int, tuple[str, ...]]:
    """Shared JobClass with a Kueue required or preferred topology -> the levels (coarse to fine,
    hosts left out; none below a required lowest level) whose domains its pods should use as few
    of as possible; its hosts are counted too (per node group).

    Kueue's rule, stated as counts: a preferred topology wants one domain of its level, else one
    of the level above (and the fewest of its level inside), and so on up: fewest domains of each
    level, coarsest first. A required topology fixes one domain of its level and of every level
    above; below it Kueue takes the fewest domains, level by level ("fewest racks, then fewest
    hosts"). Hosts are folded into node groups, so the model counts them per group.
    """
    levels = [lv for lv in ctx.topology.levels if lv != HOSTNAME]
    result: dict[int, tuple[str, ...]] = {}
    for jc in shared:
        r = jc.rjob
        if r.unconstrained or not (r.required_topology or r.preferred_topology):
            continue
        counted = levels
        if r.required_topology in levels:
            counted = levels[levels.index(r.required_topology) + 1 :]
        elif r.required_topology:
            counted = []
        result[jc.index] = tuple(counted)
    return result


KUEUE_VERDICT = "Kueue TAS"
"""What `kueue_impossible`'s verdicts say after the replicated job's name."""


def kueue_impossible(ctx: PlacementContext, shared: Sequence[JobClass]) -> dict[str, str]:
    """JobSet key -> why Kueue TAS could not place one of its shared replicated jobs (a podset
    group: leader and workers together) even on the cluster as it is now, with nothing else
    planned (slices that fit no domain, say). The model does not state slices nor the leader's
    node; this keeps it from admitting what no packing can honor."""
    kueue = [jc for jc in shared if jc.rjob.kueue_topology]
    if not kueue:
        return {}
    tree = TasTree.of(ctx)
    impossible: dict[str, str] = {}
    for jc in kueue:
        if jc.jobset.key in impossible:
            continue
        why = kueue_failure(ctx, tree, jc)
        if why is not None:
            impossible[jc.jobset.key] = f"{jc.rjob.name}: {KUEUE_VERDICT}: {why}"
    return impossible


def _holders_seen_by_queue(holders: tuple[str, ...], queued: set[str]) -> tuple[str, ...]:
    """What the queue can tell apart about who holds a domain: holders outside the queue all look
    alike (closed to every queued JobSet), so thousands of held domains still fold together."""
    if not holders:
        return ()
    return tuple(sorted({h if h in queued else "<other>" for h in holders}))


def _domains_overlap(ctx: PlacementContext) -> bool:
    seen: dict[str, str] = {}
    for d in ctx.exclusive_domains:
        for n in d.nodes:
            if seen.setdefault(n, d.key) != d.key:
                return True
    return False


def _accelerators_used(jc: JobClass) -> int:
    per_pod = sum((v for k, v in jc.rjob.pod.requests.items() if is_accelerator(k)), Decimal(0))
    return int(per_pod * jc.rjob.pods_per_job)


def domain_classes(
    view: QueueView,
    exclusive: Sequence[JobClass],
    shared: Sequence[JobClass],
    span_levels: Mapping[str, Sequence[str]],
    shared_levels: Sequence[str],
    *,
    overlap: bool,
) -> tuple[DomainClass, ...]:
    """Domains of each exclusive key folded by what the queue can tell apart; with overlapping
    keys every domain is its own class (the overlap rule needs them one by one)."""
    ctx = view.ctx
    queued = {js.key for js in ctx.jobsets}
    classes: list[DomainClass] = []
    for key in ctx.exclusive_keys:
        key_classes = [jc for jc in exclusive if jc.exclusive_key == key]
        by_index = {jc.index: jc for jc in key_classes}
        groups: dict[tuple[Any, ...], list[Domain]] = defaultdict(list)
        for d in ctx.domains(key):
            parents = enclosing_ids(ctx, d, [*span_levels[key], *shared_levels])
            signature = (
                d.path if overlap else "",
                tuple(sorted(parents.items())),
                tuple(sorted(view.node_signature(ctx.nodes[n]) for n in d.nodes)),
                _holders_seen_by_queue(ctx.domain_held_by(d), queued),
                tuple((r.jobset, r.start_s) for r in ctx.domain_reservations(d)),
                ctx.domain_evicts(d),
            )
            groups[signature].append(d)
        for signature, members in sorted(groups.items(), key=lambda kv: kv[1][0].path):
            rep = members[0]
            rep_nodes = [ctx.nodes[n] for n in rep.nodes]
            caps = view.capacities(key_classes, rep_nodes)
            fits = frozenset(
                jc.index
                for jc in key_classes
                if caps[jc.index] >= jc.rjob.pods_per_job and ctx.domain_open_to(rep, jc.jobset)
            )
            free_acc = ctx.free_accelerators(rep)
            stranded = {i: max(0, free_acc - _accelerators_used(by_index[i])) for i in sorted(fits)}
            shared_cap = view.capacities(shared, rep_nodes)
            if not fits and not any(shared_cap.values()):
                continue
            classes.append(
                DomainClass(
                    id=f"c{len(classes)}",
                    key=key,
                    members=tuple(members),
                    fits=fits,
                    stranded=stranded,
                    parents=dict(signature[1]),
                    shared_capacity=shared_cap,
                    shared_resources=view.scaled_free(rep_nodes) if shared else {},
                    evicts=signature[5],
                )
            )
    return tuple(classes)


def overlapping_pairs(classes: Sequence[DomainClass]) -> tuple[tuple[str, str], ...]:
    """Pairs of class ids (sorted) whose domains share at least one node."""
    owner: dict[str, list[str]] = defaultdict(list)
    for c in classes:
        for d in c.members:
            for n in d.nodes:
                owner[n].append(c.id)
    pairs = {tuple(sorted((a, b))) for ids in owner.values() for a in ids for b in ids if a < b}
    return tuple(sorted((a, b) for a, b in pairs))


def node_groups(
    view: QueueView, shared: Sequence[JobClass], shared_levels: Sequence[str]
) -> tuple[NodeGroup, ...]:
    """Usable nodes in no exclusive domain, grouped by signature, enclosing domains and the
    reservations holding them (`PlacementContext.reserved_nodes`): a group takes no pod of a
    JobSet its reservations close it to (`PlacementContext.node_open_to`)."""
    ctx = view.ctx
    in_domain = {n for d in ctx.exclusive_domains for n in d.nodes}
    if ctx.victims is not None:  # eviction frees domains only: shared pods stay off their nodes
        in_domain.update(ctx.victims.on_node)
    by_signature: dict[Hashable, list[Node]] = defaultdict(list)
    for node in sorted(ctx.snapshot.nodes, key=lambda n: n.name):
        if node.name in in_domain or not node.usable:
            continue
        parents = tuple(sorted(node_parents(ctx, node, shared_levels).items()))
        held = tuple((r.jobset, r.start_s) for r in ctx.reserved_nodes.get(node.name, ()))
        by_signature[(view.node_signature(node), parents, held)].append(node)
    groups: list[NodeGroup] = []
    for nodes in sorted(by_signature.values(), key=lambda ns: ns[0].name):
        capacity = {
            jc.index: ctx.node_capacity(jc, nodes[0])
            if ctx.node_open_to(nodes[0].name, jc.jobset)
            else 0
            for jc in shared
        }
        if not any(capacity.values()):
            continue
        groups.append(
            NodeGroup(
                id=f"g{len(groups)}",
                nodes=tuple(n.name for n in nodes),
                capacity=capacity,
                resources=view.scaled_free([nodes[0]]),
                parents=node_parents(ctx, nodes[0], shared_levels),
            )
        )
    return tuple(groups)


def shared_room_by_owner(
    view: QueueView, shared: Sequence[JobClass], classes: Sequence[DomainClass]
) -> tuple[DomainClass, ...]:
    """With overlapping keys (singleton classes) each node's shared room is counted once, in the
    first class holding it; the model then also closes that room when an overlapping domain is
    taken (see `add_overlapping_domains`)."""
    ctx = view.ctx
    owner = room_owners(classes)
    result = []
    for c in classes:
        owned = [ctx.nodes[n] for n in c.members[0].nodes if owner[n] == c.id]
        room = {jc.index: sum(ctx.node_capacity(jc, n) for n in owned) for jc in shared}
        result.append(replace(c, shared_capacity=room, shared_resources=view.scaled_free(owned)))
    return tuple(result)
