"""Kueue TAS placement of shared replicated jobs: what `tas_search` decides, made child Jobs.

`best-fit` places shared (non-exclusive) replicated jobs that carry Kueue topology annotations
with this, so its plans are the ones Kueue would make; the CP-SAT planner uses it to pack pods
inside the domain it chose, and to refuse up front what Kueue could not place even on the
cluster as it stands (`kueue_failure`). The search itself is `placer.solver.greedy.tas_search`; this
module reads the plan in the making (the ledger) into pods per node, pairs the members of a
podset group (a leader and its workers, placed as one, as Kueue does), and hands the pods out to
child Jobs by rank, as Kueue's ungater does.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from placer.model.cluster import Node
from placer.model.plan import JobPlacement
from placer.model.topology import HOSTNAME
from placer.solver.context import MISSING_LABEL, JobClass, PlacementContext
from placer.solver.greedy.group_room import group_room
from placer.solver.greedy.tas_request import TasRequest
from placer.solver.greedy.tas_search import GroupAssignment, find_assignment, find_group_assignment
from placer.solver.greedy.tas_tree import TasTree
from placer.solver.ledger import PlacementLedger

__all__ = [
    "TasRequest",
    "TasTree",
    "exclusion_stats",
    "find_assignment",
    "kueue_failure",
    "labeled",
    "place_with_kueue",
    "room_beside_leader",
    "split_by_rank",
]


def labeled(node: Node, levels: Iterable[str]) -> bool:
    """Does the node carry every level's label (a hostname it always has)?"""
    return all(lv == HOSTNAME or lv in node.labels for lv in levels)


def _search(
    ledger: PlacementLedger,
    tree: TasTree,
    jc: JobClass,
    group: tuple[JobClass, JobClass] | None,
    within: Iterable[str] | None,
    limit: Mapping[str, int] | None,
) -> list[tuple[str, int]] | GroupAssignment | str:
    """Kueue's answer for `jc` (the workers of `group`, if any) beside what `ledger` holds:
    reserved nodes, nodes outside `within` and nodes missing a named level's label take none of
    its pods; `limit` caps the (workers') pods per node."""
    allowed = set(tree.nodes if within is None else within)
    named = [lv for lv in (jc.rjob.required_topology, jc.rjob.slice_topology) if lv]
    nodes = ledger.ctx.nodes
    open_nodes = [
        n
        for n in tree.nodes
        if n in allowed and not ledger.is_reserved(n) and labeled(nodes[n], named)
    ]
    capacity = {n: ledger.node_capacity(jc, n) for n in open_nodes}
    if limit is not None:
        capacity = {n: min(k, limit.get(n, 0)) for n, k in capacity.items()}
    request = TasRequest.of(jc.rjob)
    if group is None:
        return find_assignment(tree, capacity, request)
    leader = group[1]
    beside = {
        n: min(ledger.node_capacity_beside_pod(jc, n, leader.rjob.pod), capacity[n])
        for n in open_nodes
        if ledger.node_capacity(leader, n) >= 1
    }
    return find_group_assignment(tree, capacity, beside, request)


def place_with_kueue(
    ledger: PlacementLedger,
    tree: TasTree,
    jc: JobClass,
    within: Iterable[str] | None = None,
    limit: Mapping[str, int] | None = None,
) -> list[JobPlacement] | None:
    """Every child Job of the shared `jc` where Kueue TAS would put them, through `ledger`.

    Capacity is what the plan so far leaves on each node (reserved nodes none); `within` limits the
    nodes (the domain the CP-SAT planner chose), `limit` the pods per node (the planner's counts).
    None, and the ledger unchanged, if it fails.

    A podset group is placed as one, when its workers are: their child Jobs come back with the
    leader's, and the leader's own call places nothing (an empty list), whichever comes first.
    """
    group = ledger.ctx.podset_group(jc)
    if group is not None and jc.index == group[1].index:
        return []
    found = _search(ledger, tree, jc, group, within, limit)
    if isinstance(found, str):
        return None
    pods = list(found.workers) if isinstance(found, GroupAssignment) else found
    mark = ledger.checkpoint()
    jobs: list[JobPlacement] = []
    for i, counts in enumerate(split_by_rank(pods, jc.rjob.pods_per_job, jc.rjob.replicas)):
        job = ledger.place_shared_counts(jc, i, counts)
        if job is None:
            ledger.rollback(mark)
            return None
        jobs.append(job)
    if isinstance(found, GroupAssignment) and group is not None:
        job = ledger.place_shared_counts(group[1], 0, [(found.leader, 1)])
        if job is None:
            ledger.rollback(mark)
            return None
        jobs.append(job)
    return jobs


def kueue_failure(ctx: PlacementContext, tree: TasTree, jc: JobClass) -> str | None:
    """Why Kueue TAS could not place the shared `jc` (with its podset group's leader) even on the
    cluster as it stands, nothing else planned, with Kueue's exclusion counts; None if it could
    (and for a group's leader, whose verdict is its workers')."""
    group = ctx.podset_group(jc)
    if group is not None and jc.index == group[1].index:
        return None
    found = _search(PlacementLedger(ctx), tree, jc, group, None, None)
    if not isinstance(found, str):
        return None
    stats = exclusion_stats(ctx, jc, tree)
    return f"{found}. {stats}" if stats else found


def room_beside_leader(
    ctx: PlacementContext, workers: JobClass, leader: JobClass, nodes: Iterable[str]
) -> int:
    """Workers' pods that fit on `nodes` with their leader among them, on the cluster as it
    stands: Kueue's count of a domain for a podset group (`group_room`); 0 when no node fits
    the leader."""
    ledger = PlacementLedger(ctx)
    return group_room(
        (
            ledger.node_capacity(workers, n),
            ledger.node_capacity_beside_pod(workers, n, leader.rjob.pod)
            if ledger.node_capacity(leader, n) >= 1
            else None,
        )
        for n in nodes
    )


def exclusion_stats(ctx: PlacementContext, jc: JobClass, tree: TasTree) -> str:
    """Kueue's tail of a failure message: `Total nodes: N; excluded: <why>: <count>, ...`, or ""
    when no node is ruled out for the class's pods (nodes only too full are not counted)."""
    facts = ctx.class_facts(jc)
    in_tree = set(tree.nodes)
    counts: Counter[str] = Counter()
    for name, node in ctx.nodes.items():
        why = facts.exclusion(name)
        if why is None and name not in in_tree:
            missing = next((lv for lv in tree.required if lv not in node.labels), "")
            why = f"{MISSING_LABEL} {missing}"
        if why:
            counts[why] += 1
    if not counts:
        return ""
    listed = ", ".join(f"{why}: {n}" for why, n in sorted(counts.items()))
    return f"Total nodes: {len(ctx.nodes)}; excluded: {listed}"


def split_by_rank(
    assignment: Sequence[tuple[str, int]], pods_per_job: int, jobs: int
) -> list[list[tuple[str, int]]]:
    """Per child Job, its (node, pods): pods ranked by (job index, completion index) fill the
    assignment's domains in order, as Kueue's ungater hands out a PodSet's assignment."""
    ranks = [n for n, k in assignment for _ in range(k)]
    result: list[list[tuple[str, int]]] = []
    for j in range(jobs):
        counts: dict[str, int] = {}
        for n in ranks[j * pods_per_job : (j + 1) * pods_per_job]:
            counts[n] = counts.get(n, 0) + 1
        result.append(list(counts.items()))
    return result
