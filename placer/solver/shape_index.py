"""What every node of a snapshot offers each pod shape of the queue: computed once, up front.

Every solver asks the same two questions of every node for every shape: can this node ever take
a pod of this shape (and if not, why: readiness, cordon, selector, affinity, taint), and how many
such pods fit in its free room? The answers depend only on a node's state (readiness, cordon,
taints, free resources, host ports), on the labels the queue's selectors and affinities name,
and on its name when an affinity names nodes. Nodes equal in all of that form one node class: a
50,000-node fleet has a few dozen (benchmarks/RESULTS-speed.md, "per-shape index"). The index
answers each (shape, node class) pair once when it is built and maps each node to its class, so a
question about a node is two lookups.

`PlacementContext` builds one index for its queue; the greedy baselines, the ledger, CP-SAT's
aggregation and the explanations read it. The independent checker does not.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from placer.model.cluster import Node
from placer.model.resources import is_extended_resource, pods_that_fit
from placer.model.scheduling import Toleration, matches_term, tolerates
from placer.model.workload import PodShape

__all__ = [
    "MISSING_LABEL",
    "NodeClasses",
    "ShapeFacts",
    "ShapeIndex",
    "node_exclusion",
    "node_pod_capacity",
]

MISSING_LABEL = "missing topology label"
"""How `node_exclusion` starts the reason for a node without a declared level's label."""


def node_exclusion(
    node: Node,
    pod: PodShape,
    *,
    extended_resource_toleration: bool,
    topology_labels: Sequence[str] = (),
) -> str | None:
    """Why `node` can never take a pod of this shape, or None. The strings feed explanations.

    `topology_labels` are a Kueue Topology's level label keys (the hostname too, if listed): as
    in Kueue TAS, a node missing one of them is in no domain and takes no pod.
    """
    if not node.ready:
        return "NotReady"
    if node.unschedulable:
        return "cordoned"
    for key in topology_labels:
        if key not in node.labels:
            return f"{MISSING_LABEL} {key}"
    for key, value in sorted(pod.node_selector.items()):
        if node.labels.get(key) != value:
            return f"nodeSelector {key}={value}"
    if pod.affinity_terms and not any(
        matches_term(node.labels, node.name, t) for t in pod.affinity_terms
    ):
        return "node affinity " + " | ".join(str(t) for t in pod.affinity_terms)
    tolerations = pod.tolerations
    if extended_resource_toleration:
        extra = tuple(_ert_toleration(r) for r in pod.requests if is_extended_resource(r))
        tolerations = (*tolerations, *extra)
    for taint in node.taints:
        if taint.blocks_scheduling and not tolerates(tolerations, taint):
            return f"taint {taint}"
    return None


def _ert_toleration(resource: str) -> Toleration:
    """What the ExtendedResourceToleration admission plugin adds for each extended resource: a
    NoSchedule toleration only (k8s v1.36.3), so a NoExecute taint of that key still repels."""
    return Toleration(key=resource, operator="Exists", effect="NoSchedule")


def node_pod_capacity(node: Node, pod: PodShape) -> int:
    """Pods of this shape that fit on the node's free capacity, host ports included."""
    fit = pods_that_fit(node.free, pod.requests)
    if pod.host_ports:
        used = set(node.used_host_ports)
        if any(p in used for p in pod.host_ports):
            return 0
        fit = min(fit, 1)
    return fit


def _label_keys(shapes: Iterable[PodShape]) -> tuple[tuple[str, ...], bool]:
    """The node labels the shapes' selectors and affinities read; whether some name nodes."""
    keys: set[str] = set()
    by_name = False
    for pod in shapes:
        keys.update(pod.node_selector)
        keys.update(r.key for t in pod.affinity_terms for r in t.match_expressions)
        by_name = by_name or any(t.match_node_names for t in pod.affinity_terms)
    return tuple(sorted(keys)), by_name


@dataclass(frozen=True)
class NodeClasses:
    """The nodes grouped so that nodes of one class offer every shape of the index the same."""

    class_of: Mapping[str, int]
    """node name -> its class"""
    representatives: tuple[Node, ...]
    """class -> its first node (in snapshot order)"""

    @staticmethod
    def of(
        nodes: Sequence[Node], shapes: Iterable[PodShape], topology_labels: Sequence[str] = ()
    ) -> NodeClasses:
        keys, by_name = _label_keys(shapes)
        ids: dict[Hashable, int] = {}
        class_of: dict[str, int] = {}
        representatives: list[Node] = []
        for n in nodes:
            state = (
                n.ready,
                n.unschedulable,
                n.taints,
                tuple(sorted(n.free.items())),
                n.used_host_ports,
                tuple(n.labels.get(k) for k in keys),
                n.name if by_name else None,
                tuple(k in n.labels for k in topology_labels),
            )
            found = ids.get(state)
            if found is None:
                found = ids[state] = len(representatives)
                representatives.append(n)
            class_of[n.name] = found
        return NodeClasses(class_of, tuple(representatives))


@dataclass(frozen=True)
class ShapeFacts:
    """What each node of the snapshot offers one pod shape, whatever the plan."""

    pod: PodShape
    _classes: NodeClasses
    _exclusions: tuple[str | None, ...]
    """node class -> `node_exclusion`"""
    _room: tuple[int, ...]
    """node class -> `node_pod_capacity`"""

    @staticmethod
    def of(
        pod: PodShape, classes: NodeClasses, *, ert: bool, topology_labels: Sequence[str] = ()
    ) -> ShapeFacts:
        reps = classes.representatives
        return ShapeFacts(
            pod,
            classes,
            tuple(
                node_exclusion(
                    n, pod, extended_resource_toleration=ert, topology_labels=topology_labels
                )
                for n in reps
            ),
            tuple(node_pod_capacity(n, pod) for n in reps),
        )

    @property
    def node_classes(self) -> NodeClasses:
        """The node classes `profile` numbers: one object for every shape of an index."""
        return self._classes

    def profile(self, name: str) -> Hashable:
        """Equal for nodes that offer this shape the same (their node class)."""
        return self._classes.class_of[name]

    def exclusion(self, name: str) -> str | None:
        """`node_exclusion` of the node."""
        return self._exclusions[self._classes.class_of[name]]

    def raw(self, name: str) -> int:
        """`node_pod_capacity` of the node: pods that fit by room and ports, exclusions ignored."""
        return self._room[self._classes.class_of[name]]

    def capacity(self, name: str) -> int:
        """Pods of this shape the node can take: 0 when excluded, else its room."""
        c = self._classes.class_of[name]
        return 0 if self._exclusions[c] else self._room[c]

    def total_capacity(self, names: Iterable[str]) -> int:
        """`capacity` summed over the nodes (a domain's, say)."""
        class_of, exclusions, room = self._classes.class_of, self._exclusions, self._room
        total = 0
        for n in names:
            c = class_of[n]
            if exclusions[c] is None:
                total += room[c]
        return total


class ShapeIndex:
    """`ShapeFacts` for every shape of a queue over one snapshot's nodes, built when created."""

    def __init__(
        self,
        nodes: Sequence[Node],
        shapes: Sequence[PodShape],
        *,
        extended_resource_toleration: bool,
        topology_labels: Sequence[str] = (),
    ) -> None:
        self._nodes = nodes
        self._ert = extended_resource_toleration
        self._topology_labels = tuple(topology_labels)
        """Declared levels' label keys (a Kueue Topology's): a node missing one takes no pod."""
        classes = NodeClasses.of(nodes, shapes, self._topology_labels)
        by_signature: dict[str, ShapeFacts] = {}
        numbers: dict[str, int] = {}
        facts: list[ShapeFacts] = []
        shape_numbers: list[int] = []
        for pod in shapes:
            signature = pod.signature()
            found = by_signature.get(signature)
            if found is None:
                found = by_signature[signature] = ShapeFacts.of(
                    pod, classes, ert=self._ert, topology_labels=self._topology_labels
                )
                numbers[signature] = len(numbers)
            facts.append(found)
            shape_numbers.append(numbers[signature])
        self._by_signature = by_signature
        self.facts: tuple[ShapeFacts, ...] = tuple(facts)
        """Aligned with the shapes given (equal shapes share one)."""
        self.shape_numbers: tuple[int, ...] = tuple(shape_numbers)
        """Aligned with the shapes given: equal numbers for equal shapes (interchangeable pods)."""

    def facts_for(self, pod: PodShape) -> ShapeFacts:
        """The facts of any shape: indexed if it is one of the queue's, else worked out now over
        every node (its selector may read labels the node classes ignore); not kept."""
        found = self._by_signature.get(pod.signature())
        if found is not None:
            return found
        classes = NodeClasses.of(self._nodes, [pod], self._topology_labels)
        return ShapeFacts.of(pod, classes, ert=self._ert, topology_labels=self._topology_labels)
