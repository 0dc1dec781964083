"""The topology: node-label levels, coarse to fine, and the domains they cut a cluster into.

Read from a snapshot, each key's domains grouped once on first use, kept apart from the mutable
counts a solver works on. A domain's identity is the tuple of (key, value) along its path, because
label values need not be unique per level (Kueue TAS makes the same choice): two subblocks called
`sb-1` in different blocks are different domains.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pydantic import BaseModel, ConfigDict

from placer.model.cluster import ClusterSnapshot, Node

__all__ = ["HOSTNAME", "Domain", "Topology", "default_levels", "paths_agree"]

HOSTNAME = "kubernetes.io/hostname"

DomainPath = tuple[tuple[str, str], ...]


class Domain(BaseModel):
    """All nodes sharing one value of `key` (and of the levels above it, when those are levels)."""

    model_config = ConfigDict(frozen=True)
    key: str
    value: str
    path: DomainPath
    nodes: tuple[str, ...]

    @property
    def id(self) -> str:
        return "/".join(f"{v}" for _, v in self.path)

    def parent_path(self, level: str) -> DomainPath | None:
        """The path of the enclosing domain at `level`, or None if `level` is not above this one."""
        for i, (k, _) in enumerate(self.path[:-1]):
            if k == level:
                return self.path[: i + 1]
        return None


def default_levels(snapshot: ClusterSnapshot, keys: Iterable[str]) -> tuple[str, ...]:
    """The snapshot's own levels if stated, else the given keys coarse to fine, then the hostname.

    Coarse to fine is judged by how many distinct values a key has across the nodes: a block key has
    fewer values than a node-pool key. Ties go by key name, not by the order given: that order is
    the queue's, and a block of one node pool would otherwise be named `B0/p0` in one queue and
    `p0` in another (the time-aware pass's inner solve puts the JobSets starting now first).
    """
    if snapshot.levels:
        return snapshot.levels
    ordered: list[str] = []
    for k in keys:
        if k and k not in ordered and k != HOSTNAME:
            ordered.append(k)
    distinct = {k: len({n.labels[k] for n in snapshot.nodes if k in n.labels}) for k in ordered}
    ordered.sort(key=lambda k: (distinct[k], k))
    return (*ordered, HOSTNAME)


def paths_agree(path: Sequence[tuple[str, str]], other: Sequence[tuple[str, str]]) -> bool:
    """Whether two domain paths can name one domain: they agree wherever both name a level.
    Two rounds may list different levels above a domain (`Topology.find`), so a level only
    one of them lists decides nothing."""
    named = dict(other)
    return all(named.get(k, v) == v for k, v in path)


class Topology:
    """Read-only levels over a snapshot; `domains(key)` is what exclusive placement chooses
    among. Nothing reads a tree of the levels, so none is built: at 10,000 nodes building one
    (a networkx graph) took 0.15 s of each solve's context."""

    def __init__(self, snapshot: ClusterSnapshot, levels: Sequence[str]) -> None:
        self.snapshot = snapshot
        self.levels: tuple[str, ...] = tuple(levels)
        self._domains_by_key: dict[str, list[Domain]] = {}
        self._by_value: dict[str, dict[str, list[Domain]]] = {}
        """key -> value -> the key's domains of that value (one, unless values repeat under
        different parents)."""

    def _path_of(self, node: Node, key: str) -> DomainPath | None:
        """The domain path of `node` for `key`: levels above `key` included if `key` is a level."""
        if key not in node.labels:
            return None
        if key not in self.levels:
            return ((key, node.labels[key]),)
        path: list[tuple[str, str]] = []
        for level in self.levels:
            if level not in node.labels:
                return ((key, node.labels[key]),)
            path.append((level, node.labels[level]))
            if level == key:
                return tuple(path)
        return None

    def domains(self, key: str) -> list[Domain]:
        """Domains of `key`, sorted by path; nodes without the label belong to none."""
        if key not in self._domains_by_key:
            self._domains_by_key[key] = self._build(key)
        return list(self._domains_by_key[key])

    def _build(self, key: str) -> list[Domain]:
        members: dict[DomainPath, list[str]] = {}
        for node in self.snapshot.nodes:
            path = self._path_of(node, key)
            if path is not None:
                members.setdefault(path, []).append(node.name)
        return [
            Domain(key=key, value=p[-1][1], path=p, nodes=tuple(sorted(ns)))
            for p, ns in sorted(members.items())
        ]

    def find(self, key: str, path: Sequence[tuple[str, str]]) -> Domain | None:
        """The domain of `key` that `path` names, though another topology wrote it: a plan, an
        earlier round or a ledger. Levels come from the exclusive keys in use, so a queue with
        JobSets exclusive per block names pool `B0/p0` where one without names it `p0`. The
        paths must agree (`paths_agree`); None when no domain or several do."""
        value = dict(path).get(key)
        if value is None:
            return None
        index = self._by_value.get(key)
        if index is None:
            index = self._by_value[key] = {}
            for d in self.domains(key):
                index.setdefault(d.value, []).append(d)
        found = [d for d in index.get(value, ()) if paths_agree(d.path, path)]
        return found[0] if len(found) == 1 else None

    def domain_of(self, node: Node, key: str) -> DomainPath | None:
        return self._path_of(node, key)

    def enclosing(self, node: Node, level: str) -> DomainPath | None:
        """The domain path at `level` containing `node` (used for locality)."""
        return self._path_of(node, level)
