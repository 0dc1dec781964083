"""What one node offers one pod shape, split the way reasons need it: rule, health, room.

`node_exclusion` (solver/context.py) answers "can this node ever take the pod" with one string,
health first. Reasons follow the rule order instead (a missing topology label, nodeSelector,
affinity, taint before NotReady and cordoned: a node that would not match even when healthy is
reported as not matching), and say which resource or host port runs out.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal

from placer.model.cluster import Node
from placer.model.resources import PODS, pods_that_fit, subtract_resources
from placer.model.workload import PodShape
from placer.solver.context import (
    MISSING_LABEL,
    PlacementContext,
    ShapeFacts,
    node_exclusion,
    node_pod_capacity,
)
from placer.solver.reasons.data import HealthKind, RuleKind

__all__ = [
    "capacity_after_planned",
    "empty_capacity",
    "health_kind",
    "limiting",
    "node_rule",
    "rule_kind",
]


def node_rule(ctx: PlacementContext, node: Node, pod: PodShape, facts: ShapeFacts) -> str | None:
    """The topology label, nodeSelector, node affinity or taint rule `node` breaks for `pod`
    (whose `ctx.shape_facts` are `facts`), health aside."""
    if node.usable:
        return facts.exclusion(node.name)
    else:
        node = node.model_copy(update={"ready": True, "unschedulable": False})
        return node_exclusion(
            node,
            pod,
            extended_resource_toleration=ctx.options.extended_resource_toleration,
            topology_labels=ctx.topology_labels,
        )


def rule_kind(rule: str) -> RuleKind:
    """The kind of a rule `node_rule` returned."""
    if rule.startswith(MISSING_LABEL):
        return "unlabeled"
    if rule.startswith("nodeSelector "):
        return "node-selector"
    if rule.startswith("node affinity "):
        return "affinity"
    return "taint"


def health_kind(node: Node) -> HealthKind | None:
    return "not-ready" if not node.ready else "cordoned" if node.unschedulable else None


def limiting(free: Mapping[str, Decimal], used_ports: set[tuple[int, str]], pod: PodShape) -> str:
    """The resource (or host port) that caps how many pods of `pod` fit in `free`."""
    for port, proto in pod.host_ports:
        if (port, proto) in used_ports:
            return f"host port {port}/{proto}"
    best: tuple[int, str] | None = None
    for name, need in sorted(pod.requests.items()):
        if need > 0:
            have = free.get(name, Decimal(0))
            fit = int(have // need) if have > 0 else 0
            if best is None or fit < best[0]:
                best = (fit, name)
    if PODS in free and (best is None or int(free[PODS]) < best[0]):
        best = (int(free[PODS]), PODS)
    return best[1] if best else PODS


def empty_capacity(node: Node, pod: PodShape) -> int:
    """Pods of the shape an idle node of this kind would fit: tells "in use" from "too small"."""
    fit = pods_that_fit(node.allocatable, pod.requests)
    return min(fit, 1) if pod.host_ports else fit


def capacity_after_planned(node: Node, pod: PodShape, planned: Mapping[str, Decimal] | None) -> int:
    """Pods of the shape that fit on the node's free room once `planned` requests are placed.

    The explanations' count, from the snapshot and a request total (an `Occupancy`, perhaps
    with a leader's pod added); the ledger's `node_capacity_beside_pod` is the planning side's,
    which also knows the plan's host ports and the class's excluded nodes."""
    if not planned:
        return node_pod_capacity(node, pod)
    free = subtract_resources(node.free, planned)
    fit = pods_that_fit(free, pod.requests)
    if pod.host_ports:
        if any(p in set(node.used_host_ports) for p in pod.host_ports):
            return 0
        fit = min(fit, 1)
    return fit
