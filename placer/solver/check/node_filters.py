"""Kubernetes' node filters, re-derived for the plan checker from the snapshot's data.

nodeSelector, required node affinity (matchExpressions and matchFields, every operator) and
taints against tolerations, with the tolerations the ExtendedResourceToleration admission plugin
adds when it is on. The checker's independence is the point (checker.py says why): nothing here
comes from the placement context or the model's matching helpers, so a bug there cannot hide
behind a checker that shares it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from placer.model.cluster import Node
from placer.model.options import SolveOptions
from placer.model.resources import is_extended_resource
from placer.model.scheduling import NodeSelectorRequirement, Taint, Toleration
from placer.model.workload import PodShape

__all__ = ["ShapeTolerations", "scheduling_violations"]


class ShapeTolerations:
    """A pod shape's tolerations, with those the ExtendedResourceToleration plugin adds when it is
    on; worked out once per shape rather than once per node the shape lands on."""

    def __init__(self, options: SolveOptions) -> None:
        self._ert = options.extended_resource_toleration
        self._found: dict[str, list[Toleration]] = {}

    def of(self, shape_key: str, shape: PodShape) -> list[Toleration]:
        """The tolerations of `shape` (`shape_key`: its JSON, the memo's key)."""
        found = self._found.get(shape_key)
        if found is None:
            found = list(shape.tolerations)
            if self._ert:
                found += [  # NoSchedule only, as the plugin adds them
                    Toleration(key=r, operator="Exists", effect="NoSchedule")
                    for r in shape.requests
                    if is_extended_resource(r) and shape.requests[r] > 0
                ]
            self._found[shape_key] = found
        return found


def scheduling_violations(
    node: Node, pod: PodShape, tolerations: Sequence[Toleration]
) -> list[str]:
    """Each filter the node fails for the pod, worded for the checker's problem lines."""
    out: list[str] = []
    for k, v in sorted(pod.node_selector.items()):
        if node.labels.get(k) != v:
            out.append(f"breaks nodeSelector {k}={v}")
    if pod.affinity_terms and not any(
        _term_matches(node, t.match_expressions, t.match_node_names) for t in pod.affinity_terms
    ):
        out.append("breaks required node affinity")
    for taint in node.taints:
        if taint.effect in ("NoSchedule", "NoExecute") and not any(
            _tolerated(t, taint) for t in tolerations
        ):
            out.append(f"does not tolerate taint {taint.key}:{taint.effect}")
    return out


def _term_matches(
    node: Node, exprs: Sequence[NodeSelectorRequirement], fields: Sequence[NodeSelectorRequirement]
) -> bool:
    if not exprs and not fields:
        return False  # an empty term selects no node
    return all(_requirement(node.labels, r) for r in exprs) and all(
        _requirement({"metadata.name": node.name}, r) for r in fields
    )


def _requirement(labels: Mapping[str, str], r: NodeSelectorRequirement) -> bool:
    has = r.key in labels
    if r.operator == "Exists":
        return has
    if r.operator == "DoesNotExist":
        return not has
    if r.operator == "In":
        return has and labels[r.key] in r.values
    if r.operator == "NotIn":
        return not has or labels[r.key] not in r.values
    if not has or len(r.values) != 1:
        return False
    try:
        left, right = int(labels[r.key]), int(r.values[0])
    except ValueError:
        return False
    return left > right if r.operator == "Gt" else left < right


def _tolerated(t: Toleration, taint: Taint) -> bool:
    if t.effect not in ("", taint.effect):
        return False
    if t.operator == "Exists":
        return t.key in ("", taint.key)
    return t.key == taint.key and t.value == taint.value
