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
from plugins.extender.state import JobEntry, StateView, domain_pattern, reserved_reason

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


def _allowed(view: StateView, pod: PodInfo, entry: JobEntry) -> tuple[frozenset[str] | None, str]:
    """Nodes a planned pod may use (None: its domain's nodes, decided per node from labels), and
    the reason given for every other node."""
    node = entry.planned.get(pod.completion_index) if pod.completion_index is not None else None
    if entry.pinned and node is not None:
        return frozenset({node}), f"placer pinned this pod to node {node}"
    if entry.domain is not None:
        domain = "/".join(v for _, v in domain_pattern(entry.domain))
        return None, f"outside domain {domain} of {entry.job}"
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
    so membership is decided from them when given. Without them every test is one lookup in a
    table the view built once; the comprehensions keep a 5,000-node call to about a millisecond.
    """
    if pod.daemonset:
        return FilterResult(passed=tuple(node_names))
    entry = view.job_of(pod)
    if entry is not None:
        allowed, reason = _allowed(view, pod, entry)
        if allowed is None and labels is None:
            allowed = view.members.get(entry.key, frozenset())
        if allowed is not None:
            passed = tuple([n for n in node_names if n in allowed])
            refused = dict.fromkeys([n for n in node_names if n not in allowed], reason)
            return FilterResult(passed=passed, unresolvable=refused)
        assert labels is not None
        owner_of = view.owner_of
        inside = [owner_of(n, labels.get(n)) is entry for n in node_names]
        return FilterResult(
            passed=tuple(n for n, ok in zip(node_names, inside, strict=True) if ok),
            unresolvable={n: reason for n, ok in zip(node_names, inside, strict=True) if not ok},
        )
    if labels is None:
        reasons = view.reasons
        return FilterResult(
            passed=tuple([n for n in node_names if n not in reasons]),
            unresolvable={n: reasons[n] for n in node_names if n in reasons},
        )
    free: list[str] = []
    held: dict[str, str] = {}
    for name in node_names:
        owner = view.owner_of(name, labels.get(name))
        if owner is None:
            free.append(name)
        else:
            held[name] = reserved_reason(owner)
    return FilterResult(passed=tuple(free), unresolvable=held)


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
