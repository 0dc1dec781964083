"""The podset-group room rule (`placer.solver.greedy.group_room`) on its own: the arithmetic the
Kueue search, the CP-SAT planner's weighing and the explanations all count a domain with."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from placer.solver.greedy.group_room import NodeRoom, group_room
from tests.strategies import node_room_groups


@pytest.mark.parametrize(
    ("parts", "expected"),
    [
        pytest.param([], 0, id="empty-domain"),
        pytest.param([(8, None), (8, None)], 0, id="no-node-takes-the-leader"),
        pytest.param([(8, None), (4, 3)], 11, id="leader-costs-one-worker"),
        pytest.param([(8, 6), (4, 0)], 10, id="cheapest-leader-node-wins"),
        pytest.param([(8, 8), (4, 0)], 12, id="leader-free-beside-workers"),
        pytest.param([(2, 5)], 2, id="beside-capped-at-room-alone"),
        pytest.param([(0, 0), (3, None)], 3, id="leader-alone-on-a-full-node"),
    ],
)
def test_room_is_workers_room_less_cheapest_leader_cost(
    parts: list[NodeRoom], expected: int
) -> None:
    assert group_room(parts) == expected


@settings(max_examples=200, deadline=None)
@given(node_room_groups())
def test_counting_child_domains_first_gives_the_flat_count(groups: list[list[NodeRoom]]) -> None:
    """Kueue sums a tree level by level; `tas_search` does so with this rule, the planner and
    the explanations over a domain's nodes at once: both must agree."""
    children = [
        (
            sum(room for room, _ in nodes),
            group_room(nodes) if any(b is not None for _, b in nodes) else None,
        )
        for nodes in groups
    ]
    flat = [part for nodes in groups for part in nodes]
    assert group_room(children) == group_room(flat)
    assert 0 <= group_room(flat) <= sum(room for room, _ in flat)
