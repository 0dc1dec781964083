"""Overlapping exclusive keys in the schedule over time: which domains the model cannot count.

With two exclusive keys whose domains share nodes (node pools inside blocks, both keys of the
queue), two JobSets must never hold a block and a pool inside it at once, nor one JobSet both.
Counting domains by class (`schedule.problem`) cannot see that unless the classes follow the
overlaps. This module says how they must, in unit numbers of the `calendar.UnitLayout` (a unit is
a domain; its cells are the sets of nodes it takes whole):

- **nested** layouts (any two units sharing a node: one's cells inside the other's, as topology
  levels are): a unit a JobSet may take that contains another one a JobSet may take is a
  **nest**, a class of its own, with one rule: at every instant, the units held inside it
  (itself included), each weighing its number of cells, weigh at most its own cells. The other
  units inside nests stay counted, in classes of the units with the same nests around them: a
  fleet of blocks of 16 pools is a class per block and one or a few per block's pools, not a
  class per pool and a rule per pool (a first version, a class per domain and a no-overlap per
  shared cell, spent more than the schedule's 1 s cap in presolve at 170 units).
- other layouts (two units crossing): every unit sharing a node is a class of its own, and per
  set of nodes several of them take (a shared cell), at most one is held at any instant.

Why the nest rule is exact: held units that share no node have disjoint cells, so those inside a
nest weigh no more than it; two held units that share a node are nested, the outer one is a
nest, and the two weigh more than it.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from placer.solver.time.calendar import UnitLayout

__all__ = ["Nest", "Overlap", "overlap", "sharing"]


@dataclass(frozen=True)
class Nest:
    """Units sharing nodes: at every instant, the ones held, each weighing its value in
    `weights`, weigh at most `cells`."""

    cells: int
    weights: Mapping[int, int]
    """Unit number -> its weight (its cells; 1 each in a shared cell of crossing units)."""


@dataclass(frozen=True)
class Overlap:
    """How the classes must follow overlapping units (none: every field empty)."""

    alone: frozenset[int]
    """Units that must be a class of their own (nests; every shared unit when keys cross)."""
    inside: Mapping[int, tuple[int, ...]]
    """Unit inside a nest and alone in no class -> the nests around it: units with the same
    nests around them may be counted together (part of a unit's class signature)."""
    nests: tuple[Nest, ...]


def sharing(layout: UnitLayout, unit: int) -> set[int]:
    """The unit and every unit sharing a node with it: a hold on it keeps them all busy."""
    return {unit, *(u for cell in layout.cells[unit] for u in layout.units_of[cell])}


def overlap(layout: UnitLayout, takeable: Collection[int]) -> Overlap:
    """What the classes must follow for the units JobSets may take (`takeable`): the others are
    never held, so no rule needs them."""
    takeable = frozenset(takeable)
    shared = [units for units in layout.units_of if len(units) > 1]
    if not shared:
        return Overlap(frozenset(), {}, ())
    chains = _chains(layout, shared)
    if chains is None:
        return _crossing(layout, shared, takeable)
    return _nested(layout, chains, takeable)


def _chains(layout: UnitLayout, shared: list[tuple[int, ...]]) -> list[list[int]] | None:
    """Per shared cell, its units from the smallest (fewest cells, then number), each inside the
    next; None when two of them cross (neither inside the other)."""
    cells = [frozenset(c) for c in layout.cells]
    chains: list[list[int]] = []
    for units in shared:
        chain = sorted(units, key=lambda u: (len(cells[u]), u))
        if any(not cells[a] <= cells[b] for a, b in itertools.pairwise(chain)):
            return None
        chains.append(chain)
    return chains


def _nested(layout: UnitLayout, chains: list[list[int]], takeable: frozenset[int]) -> Overlap:
    """A nest per takeable unit containing another takeable one; the units inside them counted
    per set of nests around them (and weight)."""
    around: dict[int, set[int]] = {}
    for chain in chains:
        for i, u in enumerate(chain):
            around.setdefault(u, set()).update(x for x in chain[i + 1 :] if x in takeable)
    weights: dict[int, dict[int, int]] = {}
    for u in sorted(takeable & around.keys()):
        for n in around[u]:
            weights.setdefault(n, {n: len(layout.cells[n])})[u] = len(layout.cells[u])
    inside = {
        u: tuple(sorted(outer & weights.keys()))
        for u, outer in around.items()
        if u not in weights and outer & weights.keys()
    }
    rules = tuple(Nest(len(layout.cells[n]), weights[n]) for n in sorted(weights))
    return Overlap(frozenset(weights), inside, rules)


def _crossing(
    layout: UnitLayout, shared: list[tuple[int, ...]], takeable: frozenset[int]
) -> Overlap:
    alone = frozenset(u for units in shared for u in units if u in takeable)
    found = {tuple(sorted(u for u in units if u in takeable)) for units in shared}
    rules = tuple(Nest(1, dict.fromkeys(units, 1)) for units in sorted(found) if len(units) > 1)
    return Overlap(alone, {}, rules)
