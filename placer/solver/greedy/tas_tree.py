"""Kueue's domain tree over the nodes, read-only, shared by every TAS search of a solve.

Why apart from the search (`tas_search`): the tree is built once per solve from the snapshot and
never changes; each search keeps its counts in its own arrays indexed by `TreeDomain.index`, so
the tree is data and the search is the algorithm over it. Facts read in Kueue's
`pkg/cache/scheduler/tas_flavor_snapshot.go` (the README's Kueue section); no code taken from it.

Placer's tree always ends with the nodes: when the hostname is not a declared level, the nodes
form one more level below the lowest declared one (Kueue would then stop at that level and let
kube-scheduler pick the nodes; its counts per domain are the same when nodes are uniform).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from placer.model.cluster import Node
from placer.model.topology import HOSTNAME
from placer.solver.context import PlacementContext

__all__ = ["TasTree", "TreeDomain"]


@dataclass(eq=False)
class TreeDomain:
    """One domain of the read-only tree; its counts live in each search (`tas_search`), so one
    tree serves every search of a solve."""

    values: tuple[str, ...]
    """Level values from the top level down to this domain (Kueue's levelValues)."""
    index: int
    """Position in the tree (0, 1, ...): where a search keeps this domain's counts."""
    children: list[TreeDomain] = field(default_factory=list)
    node: str | None = None
    """The node, for a leaf."""


class TasTree:
    """Kueue's domain tree over the nodes (those that carry every required level label).

    Read-only after construction; each `find_assignment` call keeps its counts in its own state.
    """

    def __init__(
        self, levels: Sequence[str], nodes: Iterable[Node], *, required: Sequence[str] = ()
    ) -> None:
        """`required`: label keys a node must carry to be in the tree (a Kueue Topology's levels,
        the hostname among them when it is one: Kueue leaves such a node out of every domain).
        A node missing any other level's label sits under an unnamed ("") domain at that level,
        usable by requests that do not name the level, and without a hostname label it is named
        by its node name (placer's older rule, for levels from `--levels` or the cluster file)."""
        upper = [lv for lv in levels if lv != HOSTNAME]
        self.required: tuple[str, ...] = tuple(required)
        self.level_keys: tuple[str, ...] = (*upper, HOSTNAME)
        """Level label keys coarse to fine; the last is the nodes' (their hostname)."""
        self.levels_by_index: list[list[TreeDomain]] = [[] for _ in self.level_keys]
        index: dict[tuple[str, ...], TreeDomain] = {}
        self.roots: list[TreeDomain] = []
        self.size = 0
        """Domains in the tree, leaves included."""
        for node in sorted(nodes, key=lambda n: n.name):
            if any(lv not in node.labels for lv in required):
                continue
            values: tuple[str, ...] = ()
            parent: TreeDomain | None = None
            for depth, lv in enumerate(upper):
                values = (*values, node.labels.get(lv, ""))
                found = index.get(values)
                if found is None:
                    found = index[values] = TreeDomain(values, self.size)
                    self.size += 1
                    self.levels_by_index[depth].append(found)
                    (parent.children if parent else self.roots).append(found)
                parent = found
            leaf = TreeDomain(
                (*values, node.labels.get(HOSTNAME, node.name)), self.size, node=node.name
            )
            self.size += 1
            self.levels_by_index[-1].append(leaf)
            (parent.children if parent else self.roots).append(leaf)

    @classmethod
    def of(cls, ctx: PlacementContext) -> TasTree:
        """The tree of a solve: a Kueue Topology's level labels are required of every node."""
        return cls(ctx.topology.levels, ctx.snapshot.nodes, required=ctx.topology_labels)

    @property
    def nodes(self) -> list[str]:
        return [d.node for d in self.levels_by_index[-1] if d.node is not None]

    def level_index(self, key: str) -> int | None:
        return self.level_keys.index(key) if key in self.level_keys else None
