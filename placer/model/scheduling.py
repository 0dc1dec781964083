"""Scheduling vocabulary of a pod template and a node: taints, tolerations, selectors, affinity.

These small frozen models are shared by the JobSet parser, the snapshot loader and the solvers. The
matching rules (`tolerates`, `matches_term`) follow the kube-scheduler's TaintToleration and
NodeAffinity filters; the independent plan checker deliberately re-implements them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict

__all__ = [
    "CONDITION_TAINTS",
    "NodeSelectorRequirement",
    "NodeSelectorTerm",
    "Taint",
    "Toleration",
    "matches_requirement",
    "matches_term",
    "term_is_empty",
    "tolerates",
]

CONDITION_TAINTS = frozenset(
    f"node.kubernetes.io/{name}"
    for name in (
        "not-ready",
        "unreachable",
        "unschedulable",
        "memory-pressure",
        "disk-pressure",
        "pid-pressure",
        "network-unavailable",
    )
)
"""Taints Kubernetes itself puts on a node and takes off with its conditions (the node lifecycle
controller's not-ready and unreachable, TaintNodesByCondition's others, a cordon's unschedulable):
they say how the host is now, not what it accepts once repaired or uncordoned."""

Operator = Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]


class Taint(BaseModel):
    model_config = ConfigDict(frozen=True)
    key: str
    value: str = ""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]

    @property
    def blocks_scheduling(self) -> bool:
        return self.effect in ("NoSchedule", "NoExecute")

    def __str__(self) -> str:
        head = f"{self.key}={self.value}" if self.value else self.key
        return f"{head}:{self.effect}"


class Toleration(BaseModel):
    model_config = ConfigDict(frozen=True)
    key: str = ""
    operator: Literal["Exists", "Equal"] = "Equal"
    value: str = ""
    effect: str = ""


class NodeSelectorRequirement(BaseModel):
    model_config = ConfigDict(frozen=True)
    key: str
    operator: Operator
    values: tuple[str, ...] = ()

    def __str__(self) -> str:
        if self.operator in ("Exists", "DoesNotExist"):
            return f"{self.key} {self.operator}"
        return f"{self.key} {self.operator} [{','.join(self.values)}]"


class NodeSelectorTerm(BaseModel):
    """Requirements ANDed; a pod's terms are ORed. `match_node_names`: matchFields on the name."""

    model_config = ConfigDict(frozen=True)
    match_expressions: tuple[NodeSelectorRequirement, ...] = ()
    match_node_names: tuple[NodeSelectorRequirement, ...] = ()

    def __str__(self) -> str:
        return ", ".join(str(r) for r in (*self.match_expressions, *self.match_node_names))


def tolerates(tolerations: tuple[Toleration, ...], taint: Taint) -> bool:
    for t in tolerations:
        if t.effect and t.effect != taint.effect:
            continue
        if t.operator == "Exists":
            if not t.key or t.key == taint.key:
                return True
        elif t.key == taint.key and t.value == taint.value:
            return True
    return False


_GO_INT = re.compile(r"[+-]?[0-9]+")


def go_int(text: str) -> int | None:
    """`text` as Go's `strconv.ParseInt(text, 10, 64)` reads it, which is how the scheduler reads
    both sides of `Gt` and `Lt` (`labels.Requirement`): ASCII digits with an optional sign, within
    int64; None otherwise (`1_000`, `1.5`, `٣` and 2**63 are integers to Python, not to Go)."""
    if not _GO_INT.fullmatch(text):
        return None
    number = int(text)
    return number if -(2**63) <= number < 2**63 else None


def matches_requirement(labels: Mapping[str, str], req: NodeSelectorRequirement) -> bool:
    present = req.key in labels
    value = labels.get(req.key, "")
    match req.operator:
        case "In":
            return present and value in req.values
        case "NotIn":
            return not present or value not in req.values
        case "Exists":
            return present
        case "DoesNotExist":
            return not present
        case "Gt" | "Lt":
            have, want = go_int(value), go_int(req.values[0]) if req.values else None
            if not present or have is None or want is None:
                return False  # a value that is not an integer: the requirement matches no node
            return have > want if req.operator == "Gt" else have < want
    return False


def term_is_empty(term: Mapping[str, object]) -> bool:
    """Whether a nodeSelectorTerm as written in a manifest or a pod has no requirement. It
    matches no node (`matches_term`), and the API server lets a gated pod's empty term gain
    none (ValidatePodUpdate): a writer that narrows a template's terms leaves it as it is,
    since given the domain's requirements it would match the whole domain, widening what the
    template allowed instead of narrowing it."""
    return not term.get("matchExpressions") and not term.get("matchFields")


def matches_term(labels: Mapping[str, str], node_name: str, term: NodeSelectorTerm) -> bool:
    """An empty term matches nothing, as in Kubernetes."""
    if not term.match_expressions and not term.match_node_names:
        return False
    name_labels = {"metadata.name": node_name}
    return all(matches_requirement(labels, r) for r in term.match_expressions) and all(
        matches_requirement(name_labels, r) for r in term.match_node_names
    )
