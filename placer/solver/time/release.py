"""When each running JobSet is expected to end, and so when each node and domain becomes free.

The reservation pass needs a future, and the only future placer knows is when running JobSets end.
A JobSet's expected end is its start plus its expected duration (`RunningJobSet`), or the default
duration when the source states none. Two rules keep the timeline finite and honest:

- a JobSet whose start is unknown is taken to have started now (the latest it could have);
- a JobSet past its expected end is expected to end soon, never "never": within a tenth of its
  expected duration from now, and at least `OVERDUE_FLOOR_S` (a run seldom stops the second its
  estimate says, but an estimate overrun by hours says nothing about the next hours).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from placer.model.cluster import ClusterSnapshot, Node
from placer.model.options import TimePolicy
from placer.model.workload import JobSetRequest

__all__ = [
    "OVERDUE_FLOOR_S",
    "OVERDUE_SHARE",
    "ReleaseTimeline",
    "expected_duration_s",
    "expected_end_s",
]

OVERDUE_SHARE = 0.1
OVERDUE_FLOOR_S = 300.0


def expected_duration_s(jobset: JobSetRequest, policy: TimePolicy) -> float:
    """What the JobSet states, else the default for its priority, else the default.

    The priority it declares (`reported_priority`), not one a planner raised: the time-aware pass
    lifts the JobSets it starts now above every tier, and such a JobSet must keep its class's
    duration, or it would no longer fit the gap before a reservation it was planned into."""
    if jobset.expected_duration_s is not None:
        return jobset.expected_duration_s
    return policy.default_duration_by_priority.get(
        jobset.reported_priority, policy.default_duration_s
    )


def expected_end_s(
    started_at: datetime | None, duration_s: float, now: datetime
) -> tuple[float, bool]:
    """(seconds after `now` the run is expected to end, whether it is overdue)."""
    elapsed = 0.0 if started_at is None else max(0.0, (now - started_at).total_seconds())
    remaining = duration_s - elapsed
    if remaining > 0:
        return remaining, False
    return max(OVERDUE_FLOOR_S, OVERDUE_SHARE * duration_s), True


@dataclass(frozen=True)
class ReleaseTimeline:
    """Expected end (seconds after now) of every JobSet holding a node of the snapshot."""

    ends_s: Mapping[str, float]
    overdue: frozenset[str]
    defaulted: frozenset[str]
    """JobSets whose duration came from the default (the snapshot did not state one)."""

    @classmethod
    def build(
        cls,
        snapshot: ClusterSnapshot,
        now: datetime,
        default_duration_s: float,
        *,
        default_for_priority: Mapping[int, float] | None = None,
    ) -> ReleaseTimeline:
        holders = sorted({k for n in snapshot.nodes for k in n.jobsets})
        ends: dict[str, float] = {}
        overdue: set[str] = set()
        defaulted: set[str] = set()
        for key in holders:
            info = snapshot.running.get(key)
            duration = info.expected_duration_s if info else None
            if duration is None:
                duration = _default(snapshot, key, default_duration_s, default_for_priority)
                defaulted.add(key)
            end, late = expected_end_s(info.started_at if info else None, duration, now)
            ends[key] = end
            if late:
                overdue.add(key)
        return cls(ends, frozenset(overdue), frozenset(defaulted))

    @classmethod
    def of_policy(
        cls, snapshot: ClusterSnapshot, policy: TimePolicy, now: datetime
    ) -> ReleaseTimeline:
        """`build` with `policy`'s default durations (per priority too): the timeline every pass
        that plans over time reads (the time-aware pass, expected starts behind a round, the
        never-fits test, the preemption wait)."""
        return cls.build(
            snapshot,
            now,
            policy.default_duration_s,
            default_for_priority=policy.default_duration_by_priority,
        )

    def node_free_at_s(self, node: Node) -> float:
        """When every JobSet on the node is expected to have ended (0 when none runs there)."""
        return max((self.ends_s[k] for k in node.jobsets), default=0.0)

    def free_at_s(self, nodes: Iterable[Node]) -> float:
        """When a domain made of these nodes is expected to be free of JobSets."""
        return max((self.node_free_at_s(n) for n in nodes), default=0.0)

    def waiting_for(self, nodes: Iterable[Node]) -> list[str]:
        """Running JobSets on these nodes, the last to end first: who a reservation waits for."""
        keys = {k for n in nodes for k in n.jobsets}
        return sorted(keys, key=lambda k: (-self.ends_s[k], k))


def _default(
    snapshot: ClusterSnapshot,
    key: str,
    default_s: float,
    per_priority: Mapping[int, float] | None,
) -> float:
    if not per_priority:
        return default_s
    priorities = {
        usage.priority
        for n in snapshot.nodes
        if key in n.jobset_usage
        for usage in (n.jobset_usage[key],)
        if usage.priority is not None
    }
    if not priorities:
        return default_s
    return per_priority.get(max(priorities), default_s)
