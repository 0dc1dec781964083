"""Node objects read into drafts: checked, converted once per distinct value, built later.

`load.snapshot_from_objects` reads every Node first and counts the pods bound to each before any
`Node` model exists, so a node is built once with its free capacity (`NodeDraft.build`) instead
of built bare and copied. What a Node object must satisfy (its name, labels, taints and
allocatable quantities by the API server's rules) is checked here, each error naming its node.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from placer.model.cluster import JobSetUsage, Node
from placer.model.kube.objects import NodeObject, TaintSpec
from placer.model.messages import echo
from placer.model.read.names import check, check_label_map, check_taints, dns1123_subdomain_problem
from placer.model.resources import ResourceMap, as_scheduled, parse_resource_map
from placer.model.scheduling import Taint

__all__ = ["NodeDraft", "NodeReader"]


@dataclass(frozen=True, slots=True)
class NodeDraft:
    """A Node object read, its model not built yet: built once, after its pods are counted,
    instead of built bare and then copied with new free capacity."""

    name: str
    labels: dict[str, str]
    taints: tuple[Taint, ...]
    allocatable: ResourceMap
    ready: bool
    unschedulable: bool

    def build(
        self,
        free: ResourceMap,
        used_host_ports: tuple[tuple[int, str], ...] = (),
        jobsets: tuple[str, ...] = (),
        jobset_usage: dict[str, JobSetUsage] | None = None,
    ) -> Node:
        """The Node; without `jobset_usage`, a node without pods (those fields left unset)."""
        pods: dict[str, Any] = (
            {}
            if jobset_usage is None
            else {
                "used_host_ports": used_host_ports,
                "jobsets": jobsets,
                "jobset_usage": jobset_usage,
            }
        )
        return Node(
            name=self.name,
            labels=self.labels,
            taints=self.taints,
            allocatable=self.allocatable,
            free=free,
            ready=self.ready,
            unschedulable=self.unschedulable,
            **pods,
        )


class NodeReader:
    """Node structs into drafts. The nodes of a pool repeat the same taints and allocatable: each
    distinct one is converted (and checked) once, and equal Taints are shared (benchmarks/
    RESULTS-speed.md, "snapshot decoding": 4.0 s of CPU without, 3.7 s with, at 50,000 nodes). Only
    successes are kept, so an error names its node."""

    def __init__(self) -> None:
        self._taints: dict[tuple[TaintSpec, ...], tuple[Taint, ...]] = {}
        self._allocatable: dict[tuple[tuple[str, Any], ...], ResourceMap] = {}

    def __call__(self, n: NodeObject, source: str) -> NodeDraft:
        name = n.metadata.name
        obj = f"Node/{echo(name, quote=False)}"
        check(dns1123_subdomain_problem, name, source=source, obj=obj, field="metadata.name")
        check_label_map(n.metadata.labels, source=source, obj=obj, field="metadata.labels")
        taints = self._taints.get(n.spec.taints)
        if taints is None:
            check_taints(n.spec.taints, source=source, obj=obj, field="spec.taints")
            taints = self._taints[n.spec.taints] = tuple(
                Taint(key=t.key, value=t.value, effect=t.effect) for t in n.spec.taints
            )
        return NodeDraft(
            name=name,
            labels=dict(sorted(n.metadata.labels.items())),
            taints=taints,
            allocatable=self._read_allocatable(n, source),
            # A node object without conditions (hand-written, or from a simulator) is ready.
            ready=all(c.status == "True" for c in n.status.conditions if c.type == "Ready"),
            unschedulable=n.spec.unschedulable,
        )

    def _read_allocatable(self, n: NodeObject, source: str) -> ResourceMap:
        raw = n.status.allocatable
        key = tuple(raw.items())
        try:
            found = self._allocatable.get(key)
        except TypeError:  # an unhashable quantity: wrong, and named below
            key, found = (), None
        if found is None:
            obj = f"Node/{n.metadata.name}"
            found = as_scheduled(
                parse_resource_map(raw, source=source, obj=obj, field="status.allocatable")
            )
            if key:
                self._allocatable[key] = found
        return found
