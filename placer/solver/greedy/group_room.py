"""The room of a domain for a Kueue podset group: how many workers' pods fit beside the leader.

Kueue places a podset group (a leader and its workers) as one: the leader goes on one node of the
domain, and on that node it takes room the workers could have used. So a domain holds its workers'
room less what the leader costs on the cheapest node that can take it. Three callers count this,
each over its own view of the nodes, and share the rule from here: the Kueue search (`tas_phases`,
per domain of the topology tree, bottom-up), the CP-SAT planner's weighing of a domain
(`tas.room_beside_leader`) and the explanations (`reasons.classify_nodes`, which must not import the
greedy solvers). Pure arithmetic on counts, so it imports nothing of placer.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["NodeRoom", "group_room"]

NodeRoom = tuple[int, int | None]
"""One node (or child domain) of a domain: (workers' pods that fit there alone, workers' pods
that fit there beside the leader, or None when the leader does not fit there)."""


def group_room(parts: Iterable[NodeRoom]) -> int:
    """Workers' pods that fit in a domain made of `parts` with their leader among them.

    The workers' room summed over the parts, less the cheapest leader cost: on a part that takes
    the leader, the worker pods it displaces there (room alone minus room beside it, the latter
    capped at the former). 0 when no part takes the leader: then the group does not fit at all.
    Applied to child domains whose counts already follow this rule, it gives the same answer as
    over their nodes, which is how Kueue sums a tree level by level.
    """
    total = 0
    cost: int | None = None
    for room, beside in parts:
        total += room
        if beside is not None:
            lost = room - min(beside, room)
            cost = lost if cost is None else min(cost, lost)
    return 0 if cost is None else total - cost
