"""The extender's decisions, purely computational: which nodes a pod may use, and how much it
likes each. No HTTP, no JSON, no clock: the server (`plugins.extender.server`) parses, calls these,
encodes.

Rules (issue 6):

- a pod of a placed JobSet (its child Job is in the plan) passes only on the nodes of its child
  Job's domain, or only on its planned node when the plan pins it;
- any other pod fails on every node of a domain reserved for a placed child Job, with the reason
  "reserved for <namespace>/<jobset>";
- DaemonSet pods, and pods on nodes no reservation touches, pass unchanged.

Every refusal goes to `FailedAndUnresolvableNodes`: evicting pods from the node would not make
it acceptable, so the scheduler must not preempt for it (the issue rules out preemption thrash).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from plugins.extender.pods import PodInfo
from plugins.extender.state import JobEntry, StateView

__all__ = [
    "DOMAIN_SCORE",
    "PLANNED_SCORE",
    "FilterResult",
    "HostScore",
    "filter_nodes",
    "prioritize",
    "reserved_reason",
]

PLANNED_SCORE = 10
"""The node the plan chose for this very pod (the extender protocol's maximum)."""
DOMAIN_SCORE = 5
"""Another node of the pod's assigned domain."""

Labels = Mapping[str, str]


# Results are frozen dataclasses and named tuples rather than pydantic models: a filter call may
# carry 5,000 nodes and must answer in a few milliseconds, so per-node validation is not affordable.


@dataclass(frozen=True, slots=True)
class FilterResult:
    passed: tuple[str, ...]
    """Accepted node names, in the order they came."""
    failed: dict[str, str] = field(default_factory=dict)
    """Refused, but preemption might help (unused today: kept for the wire shape)."""
    unresolvable: dict[str, str] = field(default_factory=dict)
    """Refused, and preemption cannot help: node -> reason."""


class HostScore(NamedTuple):
    host: str
    score: int


def reserved_reason(entry: JobEntry) -> str:
    return f"reserved for {entry.jobset}"


def _allowed(view: StateView, pod: PodInfo, entry: JobEntry) -> tuple[frozenset[str] | None, str]:
    """Nodes a planned pod may use when its domain is known through the state (None: decide per
    node from labels), and the reason given for every other node."""
    node = entry.planned.get(pod.completion_index) if pod.completion_index is not None else None
    if entry.pinned and node is not None:
        return frozenset({node}), f"placer pinned this pod to node {node}"
    if entry.domain is not None:
        domain = entry.domain
        return (
            None,
            f"outside {domain.key}={domain.value}, the domain placer assigned to {entry.job}",
        )
    if node is not None:
        return frozenset({node}), f"placer planned this pod on node {node}"
    return frozenset(entry.planned.values()), f"not a node placer planned for {entry.job}"


def filter_nodes(
    view: StateView,
    pod: PodInfo,
    node_names: Sequence[str],
    labels: Mapping[str, Labels] | None = None,
) -> FilterResult:
    """Split `node_names` into the nodes `pod` may use and the refused ones with a reason.

    `labels` are the node labels of a full NodeList request: fresher than what the state learned,
    so membership is decided from them when given.
    """
    if pod.daemonset:
        return FilterResult(passed=tuple(node_names))
    passed: list[str] = []
    refused: dict[str, str] = {}
    entry = view.job_of(pod)
    if entry is not None:
        allowed, reason = _allowed(view, pod, entry)
        for name in node_names:
            if allowed is not None:
                ok = name in allowed
            else:
                owner = view.owner_of(name, labels.get(name) if labels is not None else None)
                ok = owner is entry
            if ok:
                passed.append(name)
            else:
                refused[name] = reason
        return FilterResult(passed=tuple(passed), unresolvable=refused)
    owner_of = view.owner_of
    for name in node_names:
        owner = owner_of(name, labels.get(name) if labels is not None else None)
        if owner is None:
            passed.append(name)
        else:
            refused[name] = reserved_reason(owner)
    return FilterResult(passed=tuple(passed), unresolvable=refused)


def prioritize(
    view: StateView,
    pod: PodInfo,
    node_names: Sequence[str],
    labels: Mapping[str, Labels] | None = None,
) -> list[HostScore]:
    """Planned node 10, another node of the pod's domain 5, everything else 0 (all 0 for pods the
    plan does not place)."""
    entry = view.job_of(pod)
    if entry is None:
        return [HostScore(n, 0) for n in node_names]
    planned = entry.planned.get(pod.completion_index) if pod.completion_index is not None else None
    scores: list[HostScore] = []
    for name in node_names:
        if name == planned:
            score = PLANNED_SCORE
        elif entry.domain is not None and (
            view.owner_of(name, labels.get(name) if labels is not None else None) is entry
        ):
            score = DOMAIN_SCORE
        else:
            score = 0
        scores.append(HostScore(name, score))
    return scores
