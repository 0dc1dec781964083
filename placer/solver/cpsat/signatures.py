"""What nodes look like to the queue, and how much of each JobClass they hold: aggregation's inputs.

Two domains fold into one class when their nodes look the same to every pod in the queue
(`QueueView.node_signature`). Pods per node come from the context's `ShapeIndex` (two lookups a
node), so nothing here caches them. Used by aggregate.py only.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from placer.model.cluster import Node
from placer.model.topology import HOSTNAME, Domain
from placer.solver.context import JobClass, PlacementContext

__all__ = ["NodeSignature", "QueueView", "enclosing_ids", "node_parents", "span_levels_of"]

NodeSignature = tuple[Any, ...]
"""What a node looks like to the queue; sortable so domain signatures are canonical."""


class QueueView:
    """Node signatures as the queue's JobClasses see them (cached), and pods per set of nodes."""

    def __init__(self, ctx: PlacementContext, resource_scale: Mapping[str, Decimal]) -> None:
        self.ctx = ctx
        self.resource_scale = resource_scale
        keys: set[str] = set()
        by_name = False
        for jc in ctx.job_classes:
            keys.update(jc.rjob.pod.node_selector)
            for term in jc.rjob.pod.affinity_terms:
                keys.update(r.key for r in term.match_expressions)
                by_name = by_name or bool(term.match_node_names)
        self._label_keys = sorted(keys)
        self._by_name = by_name
        self._signatures: dict[str, NodeSignature] = {}
        self._shape_of = {jc.index: jc.rjob.pod.signature() for jc in ctx.job_classes}

    def node_signature(self, node: Node) -> NodeSignature:
        found = self._signatures.get(node.name)
        if found is None:
            found = self._signatures[node.name] = (
                tuple(node.labels.get(k) for k in self._label_keys),
                node.name if self._by_name else "",
                tuple(sorted((t.key, t.value, t.effect) for t in node.taints)),
                tuple(sorted(node.free.items())),
                node.ready,
                node.unschedulable,
                tuple(sorted(node.used_host_ports)),
            )
        return found

    def capacities(self, classes: Sequence[JobClass], nodes: Sequence[Node]) -> dict[int, int]:
        """Pods of each JobClass that fit on `nodes`, computed once per distinct pod shape."""
        per_shape: dict[str, int] = {}
        result: dict[int, int] = {}
        for jc in classes:
            shape = self._shape_of[jc.index]
            if shape not in per_shape:
                per_shape[shape] = self.ctx.class_facts(jc).total_capacity(n.name for n in nodes)
            result[jc.index] = per_shape[shape]
        return result

    def scaled_free(self, nodes: Sequence[Node]) -> dict[str, int]:
        """Free resources of the usable `nodes`, in each resource's integer unit."""
        total: dict[str, Decimal] = defaultdict(Decimal)
        for n in nodes:
            if n.usable:
                for r, v in n.free.items():
                    total[r] += v
        return {
            r: int(v / self.resource_scale[r])
            for r, v in sorted(total.items())
            if r in self.resource_scale
        }


def enclosing_ids(ctx: PlacementContext, domain: Domain, levels: Sequence[str]) -> dict[str, str]:
    """Level -> id of the one domain at that level holding all of `domain` (levels without one
    are left out)."""
    result: dict[str, str] = {}
    for level in levels:
        ids = {ctx.topology.enclosing(ctx.nodes[n], level) for n in domain.nodes}
        if len(ids) == 1 and None not in ids:
            path = ids.pop()
            assert path is not None
            result[level] = "/".join(v for _, v in path)
    return result


def node_parents(ctx: PlacementContext, node: Node, levels: Sequence[str]) -> dict[str, str]:
    """Level -> id of the domain at that level holding `node`."""
    result: dict[str, str] = {}
    for level in levels:
        path = ctx.topology.enclosing(node, level)
        if path is not None:
            result[level] = "/".join(v for _, v in path)
    return result


def span_levels_of(ctx: PlacementContext, key: str) -> tuple[str, ...]:
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
    return tuple(coarser)
