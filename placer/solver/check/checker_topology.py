"""The checker's Kueue topology rules: required topology, podset groups and slices.

Why apart from `checker.py`: these rules judge where a JobSet's pods sit against the topology
levels (a domain of a level is the node's values of the levels down to it), not what a node or a
domain holds; the checker calls `check_topology` once per placed JobSet. Like the rest of the
checker it shares no code with the planners.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from placer.model.cluster import Node
from placer.model.plan import JobSetOutcome
from placer.model.workload import JobSetRequest, ReplicatedJobRequest

__all__ = ["check_topology"]

_HOSTNAME = "kubernetes.io/hostname"
"""Placer's finest level: a node without the label is its own domain (named by the node)."""


def check_topology(
    js: JobSetRequest,
    o: JobSetOutcome,
    nodes: Mapping[str, Node],
    levels: Sequence[str],
    problems: set[str],
) -> None:
    """Every Kueue topology rule `js`'s outcome breaks, added to `problems`."""
    placed = _Placed(js, o, nodes, levels)
    for rule in (_check_locality, _check_podset_groups, _check_slices):
        rule(placed, problems)


@dataclass(frozen=True)
class _Placed:
    """One JobSet's outcome beside the nodes and levels its domains are judged by."""

    js: JobSetRequest
    o: JobSetOutcome
    nodes: Mapping[str, Node]
    levels: Sequence[str]

    def domain_of(self, node: Node, level: str) -> tuple[str | None, ...]:
        """The node's domain of `level`: its values of the levels down to `level` when `level`
        is a declared level (label values need not be unique per level), else of `level` alone;
        None for a missing label (a missing hostname is the node's name, placer's finest
        level)."""
        levels = self.levels
        keys = [*levels[: levels.index(level)], level] if level in levels else [level]
        return tuple(node.labels.get(k, node.name if k == _HOSTNAME else None) for k in keys)

    def spanned(
        self, rjobs: Sequence[ReplicatedJobRequest], level: str
    ) -> set[tuple[str | None, ...]]:
        """The domains of `level` the pods of `rjobs` sit in."""
        names = {r.name for r in rjobs}
        return {
            self.domain_of(self.nodes[p.node], level)
            for j in self.o.jobs
            if j.replicated_job in names
            for p in j.pods
            if p.node in self.nodes
        }


def _apart(domains: set[tuple[str | None, ...]]) -> bool:
    """Pods that must share one domain do not: they sit in several, or on a node outside every
    domain of the level."""
    return len(domains) > 1 or any(None in d for d in domains)


def _shown(domains: set[tuple[str | None, ...]]) -> str:
    return ", ".join(sorted("/".join(str(v) for v in d) for d in domains))


def _check_locality(placed: _Placed, problems: set[str]) -> None:
    """Kueue required topology: all pods of the replicated job share one domain of the level."""
    js = placed.js
    for rjob in js.replicated_jobs:
        level = rjob.required_topology
        if not level:
            continue
        domains = placed.spanned([rjob], level)
        if _apart(domains):
            problems.add(
                f"{js.key}: {rjob.name} requires one domain of {level}, spans {_shown(domains)}"
            )


def _check_podset_groups(placed: _Placed, problems: set[str]) -> None:
    """Kueue podset groups with a required topology: the pods of every member (the leader and
    its workers) share one domain of the level."""
    js = placed.js
    members: dict[str, list[ReplicatedJobRequest]] = defaultdict(list)
    for rjob in js.replicated_jobs:
        if rjob.podset_group is not None:
            members[rjob.podset_group].append(rjob)
    for group, rjobs in sorted(members.items()):
        level = rjobs[0].required_topology
        if level is None or len(rjobs) < 2:
            continue
        domains = placed.spanned(rjobs, level)
        if _apart(domains):
            names = ", ".join(r.name for r in rjobs)
            problems.add(
                f"{js.key}: podset group {group} ({names}) requires one domain of {level}, "
                f"spans {_shown(domains)}"
            )


def _check_slices(placed: _Placed, problems: set[str]) -> None:
    """Kueue slices: pods ranked by (child Job index, completion index), each run of slice-size
    pods on nodes sharing the slice level's value (and the values of the levels above it)."""
    js, nodes = placed.js, placed.nodes
    for rjob in js.replicated_jobs:
        level, size = rjob.slice_topology, rjob.slice_size
        if not level or not size:
            continue
        ranked: dict[int, str] = {}
        for j in placed.o.jobs:
            if j.replicated_job == rjob.name:
                for p in j.pods:
                    ranked[j.index * rjob.pods_per_job + p.index] = p.node
        for start in range(0, rjob.pod_count, size):
            where = {
                placed.domain_of(nodes[n], level)
                for r in range(start, start + size)
                if (n := ranked.get(r)) is not None and n in nodes
            }
            if len(where) > 1 or any(None in w for w in where):
                problems.add(
                    f"{js.key}: {rjob.name} slice of pods {start}-{start + size - 1} needs one "
                    f"domain of {level}, spans {len(where)}"
                )
