"""Kueue TAS BestFit for one replicated job: which nodes get how many of its pods.

`best-fit` places shared (non-exclusive) replicated jobs that carry Kueue topology annotations
with this, so its plans are the ones Kueue would make; the CP-SAT planner uses it to pack pods
inside the domain it chose. Facts read in Kueue's `pkg/cache/scheduler/tas_flavor_snapshot.go`
(see /work/notes/kueue-tas.md and the README's Kueue section); no code taken from it.

Algorithm overview (`find_assignment`), per replicated job (Kueue's PodSet: replicas x pods):
  fill     pods that fit per node, summed up the tree; slices (pods // slice size) at the slice
           level, summed above it, none below it
  level    domains of the requested level sorted by (slices desc, pods asc, level values asc)
           (unconstrained: slices asc, Kueue's LeastFreeCapacity, and no best-fit step);
           when the first holds every slice, the first with the fewest slices still enough
           (BestFit); else required fails, preferred tries one level up, and at the top level
           (or unconstrained) whole domains are taken in order, the last one best-fit
  descend  level by level: above the slice level the chosen domains' children are pooled, at
           and below it each domain's pods go to its own children; each time whole domains in
           sorted order, the last one best-fit ("fewest racks, then fewest hosts")
  assign   nodes with pods, sorted by level values

Placer's tree always ends with the nodes: when the hostname is not a declared level, the nodes
form one more level below the lowest declared one (Kueue would then stop at that level and let
kube-scheduler pick the nodes; its counts per domain are the same when nodes are uniform).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from placer.model.cluster import Node
from placer.model.plan import JobPlacement
from placer.model.topology import HOSTNAME
from placer.model.workload import ReplicatedJobRequest
from placer.solver.context import MISSING_LABEL, JobClass, PlacementContext
from placer.solver.ledger import Ledger

__all__ = [
    "TasRequest",
    "TasTree",
    "exclusion_stats",
    "find_assignment",
    "labeled",
    "place_with_kueue",
    "split_by_rank",
]


@dataclass(frozen=True)
class TasRequest:
    """Kueue's topology request of one PodSet (a whole replicated job of a JobSet)."""

    count: int
    level: str | None
    """Required or preferred level; None for unconstrained or slice-only requests."""
    required: bool = False
    unconstrained: bool = False
    slice_level: str | None = None
    slice_size: int = 1

    @classmethod
    def of(cls, rjob: ReplicatedJobRequest) -> TasRequest:
        return cls(
            count=rjob.pod_count,
            level=rjob.required_topology or rjob.preferred_topology,
            required=rjob.required_topology is not None,
            unconstrained=rjob.unconstrained
            or not (rjob.required_topology or rjob.preferred_topology),
            slice_level=rjob.slice_topology,
            slice_size=rjob.slice_size or 1,
        )


@dataclass(eq=False)
class _Domain:
    values: tuple[str, ...]
    """Level values from the top level down to this domain (Kueue's levelValues)."""
    children: list[_Domain] = field(default_factory=list)
    node: str | None = None
    """The node, for a leaf."""
    pods: int = 0
    slices: int = 0


class TasTree:
    """Kueue's domain tree over the nodes that carry every declared level's label.

    Read-only after construction; each `find_assignment` call keeps its counts in its own state.
    """

    def __init__(
        self, levels: Sequence[str], nodes: Iterable[Node], *, strict: bool = True
    ) -> None:
        """`strict`: leave out nodes missing a level's label (Kueue; placer does so when the levels
        come from a Kueue Topology). Otherwise such a node sits under an unnamed ("") domain at
        that level, usable by requests that do not name the level (placer's older rule)."""
        upper = [lv for lv in levels if lv != HOSTNAME]
        self.level_keys: tuple[str, ...] = (*upper, HOSTNAME)
        """Level label keys coarse to fine; the last is the nodes' (their hostname)."""
        self.levels_by_index: list[list[_Domain]] = [[] for _ in self.level_keys]
        index: dict[tuple[str, ...], _Domain] = {}
        self.roots: list[_Domain] = []
        for node in sorted(nodes, key=lambda n: n.name):
            if strict and any(lv not in node.labels for lv in upper):
                continue  # Kueue leaves such nodes out of every domain
            values: tuple[str, ...] = ()
            parent: _Domain | None = None
            for depth, lv in enumerate(upper):
                values = (*values, node.labels.get(lv, ""))
                found = index.get(values)
                if found is None:
                    found = index[values] = _Domain(values)
                    self.levels_by_index[depth].append(found)
                    (parent.children if parent else self.roots).append(found)
                parent = found
            leaf = _Domain((*values, node.labels.get(HOSTNAME, node.name)), node=node.name)
            self.levels_by_index[-1].append(leaf)
            (parent.children if parent else self.roots).append(leaf)

    @classmethod
    def of(cls, ctx: PlacementContext) -> TasTree:
        """The tree of a solve: strict when the levels come from a Kueue Topology."""
        return cls(ctx.topology.levels, ctx.snapshot.nodes, strict=bool(ctx.topology_labels))

    @property
    def nodes(self) -> list[str]:
        return [d.node for d in self.levels_by_index[-1] if d.node is not None]

    def level_index(self, key: str) -> int | None:
        return self.level_keys.index(key) if key in self.level_keys else None


def find_assignment(
    tree: TasTree, capacity: Mapping[str, int], request: TasRequest
) -> list[tuple[str, int]] | str:
    """(node, pods) in Kueue's order (level values ascending), or why the PodSet does not fit.

    `capacity` is pods of the PodSet's shape that fit on each node now (0 or absent: none).
    """
    return _Search(tree, capacity, request).run()


def labeled(node: Node, levels: Iterable[str]) -> bool:
    """Does the node carry every level's label (a hostname it always has)?"""
    return all(lv == HOSTNAME or lv in node.labels for lv in levels)


def place_with_kueue(
    ledger: Ledger,
    tree: TasTree,
    jc: JobClass,
    within: Iterable[str] | None = None,
    limit: Mapping[str, int] | None = None,
) -> list[JobPlacement] | None:
    """Every child Job of the shared `jc` where Kueue TAS would put them, through `ledger`.

    Capacity is what the plan so far leaves on each node (reserved nodes none); `within` limits the
    nodes (the domain the CP-SAT planner chose), `limit` the pods per node (the planner's counts).
    None, and the ledger unchanged, if it fails.
    """
    allowed = set(tree.nodes if within is None else within)
    named = [lv for lv in (jc.rjob.required_topology, jc.rjob.slice_topology) if lv]
    nodes = ledger.ctx.nodes
    capacity = {
        n: 0
        if ledger.is_reserved(n) or n not in allowed or not labeled(nodes[n], named)
        else ledger.node_capacity(jc, n)
        for n in tree.nodes
    }
    if limit is not None:
        capacity = {n: min(k, limit.get(n, 0)) for n, k in capacity.items()}
    found = find_assignment(tree, capacity, TasRequest.of(jc.rjob))
    if isinstance(found, str):
        return None
    mark = ledger.checkpoint()
    jobs: list[JobPlacement] = []
    for i, counts in enumerate(split_by_rank(found, jc.rjob.pods_per_job, jc.rjob.replicas)):
        job = ledger.place_shared_counts(jc, i, counts)
        if job is None:
            ledger.rollback(mark)
            return None
        jobs.append(job)
    return jobs


def exclusion_stats(ctx: PlacementContext, jc: JobClass, tree: TasTree) -> str:
    """Kueue's tail of a failure message: `Total nodes: N; excluded: <why>: <count>, ...`, or ""
    when no node is ruled out for the class's pods (nodes only too full are not counted)."""
    facts = ctx.class_facts(jc)
    in_tree = set(tree.nodes)
    upper = [lv for lv in tree.level_keys if lv != HOSTNAME]
    counts: Counter[str] = Counter()
    for name, node in ctx.nodes.items():
        why = facts.exclusion(name)
        if why is None and name not in in_tree:
            missing = next(lv for lv in upper if lv not in node.labels)
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


class _Search:
    def __init__(self, tree: TasTree, capacity: Mapping[str, int], request: TasRequest) -> None:
        self.tree = tree
        self.capacity = capacity
        self.request = request
        self.pods: dict[int, int] = {}
        self.slices: dict[int, int] = {}
        """id(domain) -> its count in this search (the tree is shared, the counts are not)."""

    # -- state --

    def _pods(self, d: _Domain) -> int:
        return self.pods.get(id(d), 0)

    def _slices(self, d: _Domain) -> int:
        return self.slices.get(id(d), 0)

    def run(self) -> list[tuple[str, int]] | str:
        r = self.request
        last = len(self.tree.level_keys) - 1
        if r.level is not None:
            level = self.tree.level_index(r.level)
            if level is None:
                return f"no requested topology level: {r.level}"
        else:
            level = 0 if r.slice_level else last
        slice_level = last if r.slice_level is None else self.tree.level_index(r.slice_level)
        if slice_level is None:
            return f"no requested topology level for slices: {r.slice_level}"
        if level > slice_level:
            return (
                f"podset slice topology {self.tree.level_keys[slice_level]} is above the podset "
                f"topology {self.tree.level_keys[level]}"
            )
        if r.count == 0:
            return []
        self.size = r.slice_size
        self.slice_level = slice_level
        for root in self.tree.roots:
            self._fill(root, 0)
        found = self._fit_level(level)
        if isinstance(found, str):
            return found
        fit_level, chosen = found
        chosen = self._to_minimum(chosen, r.count, self.size, slices=True)
        depth = fit_level
        while depth < min(last, slice_level):
            pooled = [c for d in chosen for c in d.children]
            chosen = self._to_minimum(self._sorted(pooled), r.count, self.size, slices=True)
            depth += 1
        while depth < last:
            below: list[_Domain] = []
            for d in chosen:
                below += self._to_minimum(self._sorted(d.children), self._pods(d), 1, slices=False)
            chosen = below
            depth += 1
        leaves = sorted((d for d in chosen if self._pods(d) > 0), key=lambda d: d.values)
        return [(d.node, self._pods(d)) for d in leaves if d.node is not None]

    # -- phase fill --

    def _fill(self, d: _Domain, depth: int) -> None:
        if d.node is not None:
            pods = max(self.capacity.get(d.node, 0), 0)
            self.pods[id(d)] = pods
            if depth == self.slice_level:
                self.slices[id(d)] = pods // self.size
            return
        pods = slices = 0
        for c in d.children:
            self._fill(c, depth + 1)
            pods += self._pods(c)
            slices += self._slices(c)
        self.pods[id(d)] = pods
        self.slices[id(d)] = pods // self.size if depth == self.slice_level else slices

    # -- phase level --

    def _sorted(self, domains: Iterable[_Domain]) -> list[_Domain]:
        """BestFit order: most slices first, then fewest pods, then level values; unconstrained
        requests (LeastFreeCapacity; Kueue TASProfileMixed, on by default): fewest slices first."""
        sign = 1 if self.request.unconstrained else -1
        return sorted(domains, key=lambda d: (sign * self._slices(d), self._pods(d), d.values))

    def _best_fit(self, domains: Sequence[_Domain], needed: int, *, slices: bool) -> _Domain:
        """The first domain with the fewest slices (pods) still `needed`; else the first."""
        best, best_count = domains[0], None
        for d in domains:
            count = self._slices(d) if slices else self._pods(d)
            if count >= needed and (best_count is None or count < best_count):
                best, best_count = d, count
        return best

    def _not_fit(self, fit: int, needed: int) -> str:
        unit = "slice" if self.size > 1 else "pod"
        if fit == 0:
            return f"topology doesn't allow to fit any of {needed} {unit}(s)"
        return f"topology allows to fit only {fit} out of {needed} {unit}(s)"

    def _fit_level(self, level: int) -> tuple[int, list[_Domain]] | str:
        r = self.request
        domains = self._sorted(self.tree.levels_by_index[level])
        if not domains:
            return f"no topology domains at level: {self.tree.level_keys[level]}"
        needed = r.count // self.size
        if r.unconstrained:
            for d in domains:
                if self._slices(d) >= needed:
                    return level, [d]
        top = domains[0]
        if self._slices(top) >= needed:
            return level, [self._best_fit(domains, needed, slices=True)]
        if r.required:
            return self._not_fit(self._slices(top), needed)
        if level > 0 and not r.unconstrained:
            return self._fit_level(level - 1)
        chosen: list[_Domain] = []
        remaining = needed
        for i, d in enumerate(domains):
            if remaining <= 0:
                break
            if self._slices(d) >= remaining and not r.unconstrained:
                d = self._best_fit(domains[i:], remaining, slices=True)
            chosen.append(d)
            remaining -= self._slices(d)
        if remaining > 0:
            return self._not_fit(needed - remaining, needed)
        return level, chosen

    # -- phase descend --

    def _to_minimum(
        self, domains: Sequence[_Domain], count: int, size: int, *, slices: bool
    ) -> list[_Domain]:
        """Whole domains in order until one can hold the rest; that last one best-fit."""
        remaining = count // size if slices else count
        chosen: list[_Domain] = []
        for i, d in enumerate(domains):
            have = self._slices(d) if slices else self._pods(d)
            if have >= remaining:
                if not self.request.unconstrained:
                    d = self._best_fit(domains[i:], remaining, slices=slices)
                if slices:
                    self.slices[id(d)] = remaining
                self.pods[id(d)] = remaining * size if slices else remaining
                chosen.append(d)
                return chosen
            if slices:
                self.pods[id(d)] = have * size
            remaining -= have
            chosen.append(d)
        return chosen
