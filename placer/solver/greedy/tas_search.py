"""Kueue TAS BestFit for one PodSet, or one PodSet group: the algorithm over the domain tree.

Pure: a read-only tree of the nodes and, per node, how many pods fit. `placer.solver.greedy.tas`
feeds it from a plan in the making (the ledger) and turns its answer into child Job placements.
Facts read in Kueue's `pkg/cache/scheduler/tas_flavor_snapshot.go` (the README's Kueue section);
no code taken from it.

Algorithm overview (`find_assignment`), per replicated job (Kueue's PodSet: replicas x pods):
  fill     pods that fit per node, summed up the tree; slices (pods // slice size) at the slice
           level, summed above it, none below it
  level    domains of the requested level sorted by (slices desc, pods asc, level values asc)
           (unconstrained: slices asc, Kueue's LeastFreeCapacity, and no best-fit step);
           when the first holds every slice, the first with the fewest slices still enough
           (BestFit); else required fails, preferred tries one level up, and at the top level
           (or unconstrained) whole domains are taken in order, the last one best-fit
  descend  level by level: above the slice level the chosen domains' children are pooled, at
           and below it each domain's pods go to its own children; each time whole domains in
           sorted order, the last one best-fit ("fewest racks, then fewest hosts")
  assign   nodes with pods, sorted by level values

A PodSet group (`find_group_assignment`: a leader of one pod and its workers, Kueue's
`podset-group-name`) runs the same phases for the workers' pods with the leader carried along:
fill also counts, per domain, whether the leader fits and the workers that fit beside it (the
domain's pods less the cheapest leader node's cost); level puts domains that fit the leader first
and counts them beside it; descend hands the leader to the first domain that can take it at a cost
the others cover, then best-fits the rest as before.

The tree it searches is `tas_tree.TasTree`; what a PodSet asks is `tas_request.TasRequest`; one
run of the phases above, with its counts per domain, is `tas_phases.SearchRun`, which only the
two calls here construct.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from placer.solver.greedy.tas_phases import SearchRun
from placer.solver.greedy.tas_request import TasRequest
from placer.solver.greedy.tas_tree import TasTree

__all__ = ["GroupAssignment", "find_assignment", "find_group_assignment"]


def find_assignment(
    tree: TasTree, capacity: Mapping[str, int], request: TasRequest
) -> list[tuple[str, int]] | str:
    """(node, pods) in Kueue's order (level values ascending), or why the PodSet does not fit.

    `capacity` is pods of the PodSet's shape that fit on each node now (0 or absent: none).
    """
    found = SearchRun(tree, capacity, request).run()
    return found if isinstance(found, str) else found[0]


@dataclass(frozen=True)
class GroupAssignment:
    """Where a PodSet group goes: its workers' pods per node, and the leader's node."""

    workers: tuple[tuple[str, int], ...]
    leader: str


def find_group_assignment(
    tree: TasTree,
    capacity: Mapping[str, int],
    beside_leader: Mapping[str, int],
    request: TasRequest,
) -> GroupAssignment | str:
    """The workers' (node, pods) in Kueue's order and the leader's node, or why the group does
    not fit together. `request` is the workers' (the group shares its level); `capacity` is the
    workers' pods that fit on each node; `beside_leader` has the nodes the leader fits on, with
    the workers' pods that still fit there once the leader is placed."""
    found = SearchRun(tree, capacity, request, beside_leader).run()
    if isinstance(found, str):
        return found
    workers, leader = found
    if leader is None:
        return "no node fits the leader"
    return GroupAssignment(tuple(workers), leader)
