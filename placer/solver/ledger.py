"""Mutable bookkeeping of one plan being built: who holds which node, and what room is left.

The greedy baselines build their plans through a `PlacementLedger`, and the CP-SAT planner
materializes its chosen (child Job -> domain) assignment through one too, so both turn decisions
into pod placements the same way. The ledger enforces the placement rules as it goes:

- an exclusive child Job takes one domain of its key to itself: no other child Job of the plan
  (exclusive or not) and no running pod of another JobSet may be on any node of that domain;
  domains of different keys may share nodes, so taking one closes every domain it overlaps;
- a child Job without an exclusive key shares nodes with other such Jobs for resource fit only,
  and never enters a node reserved for an exclusive child Job of the plan;
- per node, free resources, `pods` slots and host ports are decremented as pods are placed.

Every mutation is recorded in an undo log, so `checkpoint()` / `rollback()` give all-or-nothing per
JobSet at the cost of the changes made since the checkpoint, not of a copy of the cluster.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from placer.model.plan import DomainRef, JobPlacement, PodPlacement
from placer.model.resources import ResourceMap, left_after, pods_that_fit, pods_usage
from placer.model.topology import Domain, DomainPath
from placer.model.workload import JobSetRequest, PodShape, child_job_name
from placer.solver.context import JobClass, PlacementContext

__all__ = ["DomainKey", "PlacementLedger"]

DomainKey = tuple[str, DomainPath]
"""(key, path): a domain's identity across keys."""

_ABSENT = object()
"""In the undo log: the key was not in the table."""


class PlacementLedger:
    """One plan in the making over a `PlacementContext`; cheap to checkpoint and roll back."""

    def __init__(self, ctx: PlacementContext) -> None:
        self.ctx = ctx
        self._free: dict[str, ResourceMap] = {}
        """node -> remaining free resources; only nodes the plan touched (else the snapshot's)."""
        self._ports: dict[str, set[tuple[int, str]]] = {}
        """node -> host ports planned pods bind there (running pods' ports are in the snapshot)."""
        self._reserved: dict[str, tuple[str, str]] = {}
        """node -> (JobSet key, child Job name) of the exclusive child Job holding it."""
        self._shared: dict[str, dict[str, int]] = {}
        """node -> {JobSet key: planned non-exclusive pods of it there}."""
        self._taken: dict[DomainKey, str] = {}
        """domain -> JobSet key of the exclusive child Job that took it."""
        self._undo: list[tuple[dict[Any, Any], object, object]] = []
        """(table, key, value before) per change, newest last; `_ABSENT` when there was none."""
        self._shared_nodes: dict[int, list[str]] = {}
        """shape number -> the nodes that could ever take a pod of that shape, in `place_shared`'s
        order (`_shared_order`)."""
        self._all_shared: list[str] = []
        """Every node in `place_shared`'s order."""
        self._rank: dict[str, int] | None = None
        self._unfit: dict[tuple[int, int], list[tuple[float, int]]] = {}
        """(shape number, pods per child Job) -> per child Job of that shape and size without an
        exclusive key that fit no node: how long its JobSet runs (`closing_run_s`) and the undo
        log's length then (`_known_unfit`)."""

    # -- all-or-nothing --

    def checkpoint(self) -> object:
        """A token for `rollback`: the plan as it is now."""
        return len(self._undo)

    def rollback(self, token: object) -> None:
        """Undo every change made since `checkpoint()` returned `token`."""
        if not isinstance(token, int) or not 0 <= token <= len(self._undo):
            raise ValueError(f"not a checkpoint of this ledger: {token!r}")
        while len(self._undo) > token:
            table, key, old = self._undo.pop()
            if old is _ABSENT:
                del table[key]
            else:
                table[key] = old
        for key, failed in list(self._unfit.items()):
            kept = [(run, at) for run, at in failed if at <= token]
            if kept:
                self._unfit[key] = kept
            else:
                del self._unfit[key]

    # -- queries --

    def free(self, node: str) -> ResourceMap:
        """Free resources left on `node` after the pods planned so far (a copy)."""
        return dict(self._free_of(node))

    def is_reserved(self, node: str) -> bool:
        return node in self._reserved

    def domain_available(self, domain: Domain, jobset: JobSetRequest) -> bool:
        """Could a child Job of `jobset` take `domain` now? Open to it, and no planned pod inside.

        Capacity is not considered here: see `domain_fits`.
        """
        return self.ctx.domain_open_to(domain, jobset) and self.domain_untouched(domain)

    def domain_untouched(self, domain: Domain) -> bool:
        """No pod of this plan on any node of `domain` (running JobSets aside).

        Only grows false as the plan grows, until a rollback: callers may skip such domains.
        """
        nodes = domain.nodes
        return self._reserved.keys().isdisjoint(nodes) and self._shared.keys().isdisjoint(nodes)

    def domain_fits(self, jc: JobClass, domain: Domain) -> bool:
        """Available to `jc`'s JobSet, of its key, and big enough for one child Job of it."""
        return (
            domain.key == jc.exclusive_key
            and self.domain_available(domain, jc.jobset)
            and self.ctx.domain_capacity(jc, domain) >= jc.rjob.pods_per_job
        )

    def taken_by(self) -> dict[DomainKey, str]:
        """Domains taken in this plan -> JobSet key; what explanations call "taken"."""
        return dict(self._taken)

    def shared_by(self) -> dict[str, tuple[str, ...]]:
        """Nodes carrying planned non-exclusive pods -> JobSet keys of those pods (sorted)."""
        return {n: tuple(sorted(owners)) for n, owners in self._shared.items()}

    def node_capacity(self, jc: JobClass, node: str) -> int:
        """Pods of `jc`'s shape still fitting on `node` beside planned pods; none on a node a
        reservation closes to its JobSet (`PlacementContext.node_open_to`)."""
        if self.ctx.class_facts(jc).exclusion(node) or not self.ctx.node_open_to(node, jc.jobset):
            return 0
        return self._pods_fitting(jc, node, self._free_of(node), ())

    def node_capacity_beside_pod(self, jc: JobClass, node: str, other: PodShape) -> int:
        """Pods of `jc`'s shape still fitting on `node` once one pod of `other` is placed there too
        (a podset group's workers beside their leader: Kueue counts both on one node; the
        explanations count it with `reasons.nodes.capacity_after_planned`)."""
        if self.ctx.class_facts(jc).exclusion(node) or not self.ctx.node_open_to(node, jc.jobset):
            return 0
        free = left_after(self._free_of(node), pods_usage(other.requests, 1))
        return self._pods_fitting(jc, node, free, other.host_ports)

    def _pods_fitting(
        self, jc: JobClass, node: str, free: ResourceMap, taken_ports: Iterable[tuple[int, str]]
    ) -> int:
        """Pods of `jc`'s shape fitting in `free` on `node`, host ports counted: the node's own,
        the plan's there and `taken_ports` (at most one pod when the shape asks for any)."""
        pod = jc.rjob.pod
        fit = pods_that_fit(free, pod.requests)
        if pod.host_ports:
            used = (
                set(self.ctx.nodes[node].used_host_ports)
                | self._ports.get(node, set())
                | set(taken_ports)
            )
            if any(p in used for p in pod.host_ports):
                return 0
            fit = min(fit, 1)
        return fit

    # -- decisions --

    def take_domain(self, jc: JobClass, job_index: int, domain: Domain) -> JobPlacement | None:
        """Reserve `domain` for child Job `job_index` of `jc` and pack its pods onto it.

        Pods (completion index 0..pods_per_job-1) fill the domain's nodes in name order, each node
        up to its capacity, so they pack onto as few nodes as possible. Returns None and changes
        nothing if the domain is unavailable or too small.
        """
        if domain.key != jc.exclusive_key:
            raise ValueError(f"{jc.name} is exclusive on {jc.exclusive_key!r}, not {domain.key!r}")
        if not self.domain_available(domain, jc.jobset):
            return None
        # Inside a domain that is available nothing else of the plan is placed, so the
        # snapshot's per-node capacity is the ledger's too.
        counts = self._pack(jc, sorted(domain.nodes), self._static_capacity)
        if counts is None:
            return None
        job = child_job_name(jc.jobset.name, jc.rjob.name, job_index)
        owner = (jc.jobset.key, job)
        for n in domain.nodes:
            self._set(self._reserved, n, owner)
        self._set(self._taken, (domain.key, domain.path), jc.jobset.key)
        pods = self._commit(jc, counts, shared=False)
        ref = DomainRef(key=domain.key, value=domain.value, path=list(domain.path))
        return JobPlacement(
            name=job, replicated_job=jc.rjob.name, index=job_index, domain=ref, pods=pods
        )

    def place_shared(
        self, jc: JobClass, job_index: int, within: Iterable[str] | None = None
    ) -> JobPlacement | None:
        """Place child Job `job_index` of a non-exclusive `jc` first-fit on unreserved nodes.

        Nodes outside every exclusive domain of the queue come first, then the rest: shared pods
        on a domain's node close that domain to every exclusive child Job, so they go there only
        when they must, and then first where the fewest job classes of the queue could take the
        domain (`PlacementContext.shared_pod_rank`), each rank by name. `within` restricts the
        nodes (required locality). Returns None and changes nothing if the pods do not all fit.
        """
        run = self.ctx.closing_run_s(jc.jobset) if within is None else None
        shape = (self.ctx.shape_index.shape_numbers[jc.index], jc.rjob.pods_per_job)
        if run is not None and self._known_unfit(shape, run):
            return None
        order = self._shared_order(jc) if within is None else self._sorted_for_shared(within)
        reserved = self._reserved
        counts = self._pack(jc, (n for n in order if n not in reserved), self.node_capacity)
        if counts is None:
            if run is not None:
                self._unfit.setdefault(shape, []).append((run, len(self._undo)))
            return None
        pods = self._commit(jc, counts, shared=True)
        return JobPlacement(
            name=child_job_name(jc.jobset.name, jc.rjob.name, job_index),
            replicated_job=jc.rjob.name,
            index=job_index,
            domain=None,
            pods=pods,
        )

    def place_shared_counts(
        self, jc: JobClass, job_index: int, counts: Sequence[tuple[str, int]]
    ) -> JobPlacement | None:
        """Place child Job `job_index` of a non-exclusive `jc` as told: `counts` pods per node.

        For assignments decided elsewhere (Kueue TAS in `placer.solver.greedy.tas`). Returns None
        and changes nothing if a node is reserved or lacks room, or the counts miss the Job's pods.
        """
        if sum(k for _, k in counts) != jc.rjob.pods_per_job:
            return None
        for n, k in counts:
            if n in self._reserved or self.node_capacity(jc, n) < k:
                return None
        pods = self._commit(jc, [(n, k) for n, k in counts if k > 0], shared=True)
        return JobPlacement(
            name=child_job_name(jc.jobset.name, jc.rjob.name, job_index),
            replicated_job=jc.rjob.name,
            index=job_index,
            domain=None,
            pods=pods,
        )

    # -- internals --

    def _free_of(self, node: str) -> ResourceMap:
        got = self._free.get(node)
        return got if got is not None else self.ctx.nodes[node].free

    def _static_capacity(self, jc: JobClass, node: str) -> int:
        return self.ctx.node_capacity(jc, self.ctx.nodes[node])

    def _known_unfit(self, shape: tuple[int, int], run: float) -> bool:
        """A child Job of `shape` (number, pods) whose JobSet runs `run` fits no node, known
        without looking: one of that shape running no longer fit none earlier in this plan.

        The ledger only takes room (a node's resources, host ports, nodes reserved for an
        exclusive child Job), and gives it back only by `rollback`, which drops what it
        learned after its checkpoint; and a longer run finds every node closed that a shorter
        one does (`PlacementContext.closing_run_s`). Each child Job that fits nowhere looked
        at every node of the cluster: at 10,000 nodes with 100 JobSets of such pods waiting,
        4.4 s of best-fit's 7.7 s under a profiler (benchmarks/RESULTS-controller.md, round
        39)."""
        return any(failed <= run for failed, _ in self._unfit.get(shape, ()))

    def _sorted_for_shared(self, nodes: Iterable[str]) -> list[str]:
        if self._rank is None:
            self._rank = self.ctx.shared_pod_rank()
        return self.ctx.shared_pod_order(nodes, self._rank)

    def _shared_order(self, jc: JobClass) -> list[str]:
        """The nodes that could ever take a pod of `jc`'s shape, in `place_shared`'s order:
        sorted once per plan, not for each child Job, and filtered once per shape.

        A node without room for the shape in the snapshot, or ruled out for it, never takes one
        in this plan (the ledger only takes room), so packing skips it. Why: on a busy fleet
        most nodes are full, and each child Job looked at them all (at 10,000 nodes with 100
        JobSets of such pods waiting, 2.4 s of best-fit's 8.1 s under a profiler:
        benchmarks/RESULTS-controller.md, round 40)."""
        number = self.ctx.shape_index.shape_numbers[jc.index]
        found = self._shared_nodes.get(number)
        if found is None:
            if not self._all_shared:
                self._all_shared = self._sorted_for_shared(self.ctx.nodes)
            facts = self.ctx.class_facts(jc)
            found = self._shared_nodes[number] = [n for n in self._all_shared if facts.capacity(n)]
        return found

    @staticmethod
    def _pack(
        jc: JobClass, nodes: Iterable[str], capacity: Callable[[JobClass, str], int]
    ) -> list[tuple[str, int]] | None:
        """(node, pods) filling nodes in the given order; None if the child Job does not fit."""
        need = jc.rjob.pods_per_job
        counts: list[tuple[str, int]] = []
        for n in nodes:
            if need <= 0:
                break
            k = min(capacity(jc, n), need)
            if k > 0:
                counts.append((n, k))
                need -= k
        return counts if need <= 0 else None

    def _commit(
        self, jc: JobClass, counts: list[tuple[str, int]], *, shared: bool
    ) -> list[PodPlacement]:
        pods: list[PodPlacement] = []
        for n, k in counts:
            self._consume(n, jc.rjob.pod, k)
            if shared:
                owners = dict(self._shared.get(n, {}))
                owners[jc.jobset.key] = owners.get(jc.jobset.key, 0) + k
                self._set(self._shared, n, owners)
            pods.extend(PodPlacement(index=i, node=n) for i in range(len(pods), len(pods) + k))
        return pods

    def _consume(self, node: str, pod: PodShape, count: int) -> None:
        self._set(
            self._free, node, left_after(self._free_of(node), pods_usage(pod.requests, count))
        )
        if pod.host_ports:
            self._set(self._ports, node, self._ports.get(node, set()) | set(pod.host_ports))

    def _set(self, table: dict[Any, Any], key: object, value: object) -> None:
        """table[key] = value, recording how to undo it."""
        self._undo.append((table, key, table.get(key, _ABSENT)))
        table[key] = value
