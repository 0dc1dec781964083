"""The reservation pass as it was before the bitmask calendar (commit 86f554f): the oracle of
the differential test.

It checks every unit at every instant with sets of unit ids, which is easy to read and slow at
fleet scale. tests/solver/time/test_reservations_differential.py runs it beside
`placer.solver.time.reservations.reserve` on random cases and requires identical reservations: the
faster layout (`placer.solver.time.calendar`) must not change a result. Not used by placer itself.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Collection, Iterable, Mapping, Sequence, Set

import networkx as nx

from placer.solver.time.reservations import Candidate, Need, Reservation, Unit, UnitId

__all__ = ["reserve"]


class _Calendar:
    """Busy intervals per cell, kept sorted by start; a cell is busy over their union (a hold
    from outside may overlap a running JobSet's busy period: checked against every interval,
    the plain rule, where the calendar merges them).

    A cell is a set of nodes that every unit takes whole or not at all (nodes in the same units);
    with non-overlapping keys each unit is one cell, so checking a unit is one lookup.
    """

    def __init__(self, units: Iterable[Unit], free_at: Mapping[str, float]) -> None:
        members: dict[str, list[UnitId]] = {}
        units = list(units)
        for u in units:
            for n in u.nodes:
                members.setdefault(n, []).append(u.id)
        cell_of: dict[tuple[UnitId, ...], int] = {}
        cell_free: dict[int, float] = {}
        self._cells: dict[UnitId, tuple[int, ...]] = {}
        node_cell: dict[str, int] = {}
        for n, ids in sorted(members.items()):
            cell = cell_of.setdefault(tuple(sorted(ids)), len(cell_of))
            node_cell[n] = cell
            cell_free[cell] = max(cell_free.get(cell, 0.0), free_at.get(n, 0.0))
        units_of: dict[int, list[UnitId]] = {}
        for u in units:
            self._cells[u.id] = tuple(sorted({node_cell[n] for n in u.nodes}))
            for cell in self._cells[u.id]:
                units_of.setdefault(cell, []).append(u.id)
        self._units_of = units_of
        self._busy: dict[int, list[tuple[float, float]]] = {
            c: [(0.0, f)] if f > 0 else [] for c, f in cell_free.items()
        }
        self.later: set[UnitId] = set()
        """Units with a busy interval starting after 0 (a hold for the future): the only ones
        whose `next_busy_after` a positive instant can be finite."""
        self._ends = {0.0} | {f for f in cell_free.values() if f > 0 and math.isfinite(f)}

    def knows(self, unit: UnitId) -> bool:
        return unit in self._cells

    def cells(self, unit: UnitId) -> tuple[int, ...]:
        return self._cells[unit]

    def is_free(self, unit: UnitId, start: float, end: float) -> bool:
        for cell in self._cells[unit]:
            for s, e in self._busy[cell]:
                if s < end and e > start:
                    return False
        return True

    def never_free(self, unit: UnitId) -> bool:
        return any(math.isinf(e) for c in self._cells[unit] for _, e in self._busy[c])

    def next_busy_after(self, unit: UnitId, t: float) -> float:
        """Start of the first busy interval at or after t in any of its cells (inf when none)."""
        found = math.inf
        for cell in self._cells[unit]:
            for s, _ in self._busy[cell]:
                if s >= t:
                    found = min(found, s)
                    break
        return found

    def hold(self, unit: UnitId, start: float, end: float) -> None:
        for cell in self._cells[unit]:
            bisect.insort(self._busy[cell], (start, end))
            if start > 0:
                self.later.update(self._units_of[cell])
        if math.isfinite(end):
            self._ends.add(end)

    def event_times(self) -> list[float]:
        """Every instant a unit may become free: 0 and the end of every busy interval."""
        return sorted(self._ends)

    def by_preference(self, units: Set[UnitId], end: float) -> list[UnitId]:
        """`units` sorted by (`next_busy_after(unit, end)`, unit): the one whose next busy period
        starts soonest after `end` first. For `end` > 0 only units in `later` can have a finite
        key, so the others are sorted by name alone (most of them, most of the time)."""
        if end <= 0:
            return sorted(units, key=lambda u: (self.next_busy_after(u, end), u))
        keyed = [(self.next_busy_after(u, end), u) for u in units & self.later]
        soon = sorted(k for k in keyed if k[0] < math.inf)
        rest = sorted([u for k, u in keyed if k == math.inf] + list(units - self.later))
        return [u for _, u in soon] + rest


def _assign(
    needs: Sequence[Need], free: set[UnitId], calendar: _Calendar, end: float
) -> dict[str, tuple[UnitId, ...]] | None:
    """Distinct free units for every child Job of every need, or None when they do not exist.

    Needs usually draw on disjoint units (different keys or selectors): then counting suffices.
    Overlapping needs are matched with a max flow, so a bad greedy order never hides a fit.
    """

    # the unit whose next busy period starts soonest after this run ends wastes the least
    pools = [calendar.by_preference(n.eligible & free, end) for n in needs]
    if any(len(pool) < n.count for pool, n in zip(pools, needs, strict=True)):
        return None
    seen: set[UnitId] = set()
    disjoint = True
    for pool in pools:
        if seen.intersection(pool):
            disjoint = False
            break
        seen.update(pool)
    if disjoint:
        chosen = {n.name: tuple(pool[: n.count]) for n, pool in zip(needs, pools, strict=True)}
    else:
        found = _assign_by_flow(needs, pools)
        if found is None:
            return None
        chosen = found
    if _cells_disjoint(chosen, calendar):
        return chosen
    return _assign_avoiding_overlap(needs, pools, calendar)


def _cells_disjoint(chosen: Mapping[str, Sequence[UnitId]], calendar: _Calendar) -> bool:
    seen: set[int] = set()
    for group in chosen.values():
        for unit in group:
            cells = calendar.cells(unit)
            if seen.intersection(cells):
                return False
            seen.update(cells)
    return True


def _assign_avoiding_overlap(
    needs: Sequence[Need], pools: Sequence[list[UnitId]], calendar: _Calendar
) -> dict[str, tuple[UnitId, ...]] | None:
    """Overlapping units (a node pool and its block): take them in preference order, skipping
    any that shares nodes with one already taken. Not exhaustive: a miss only delays the start."""
    taken: set[int] = set()
    result: dict[str, tuple[UnitId, ...]] = {}
    for need, pool in sorted(zip(needs, pools, strict=True), key=lambda np: len(np[1])):
        picked: list[UnitId] = []
        for unit in pool:
            cells = calendar.cells(unit)
            if taken.intersection(cells):
                continue
            picked.append(unit)
            taken.update(cells)
            if len(picked) == need.count:
                break
        if len(picked) < need.count:
            return None
        result[need.name] = tuple(picked)
    return result


def _assign_by_flow(
    needs: Sequence[Need], pools: Sequence[list[UnitId]]
) -> dict[str, tuple[UnitId, ...]] | None:
    graph = nx.DiGraph()
    for i, (need, pool) in enumerate(zip(needs, pools, strict=True)):
        graph.add_edge("source", ("need", i), capacity=need.count)
        for rank, unit in enumerate(pool):
            # lower rank = preferred; the cost steers the flow toward preferred units
            graph.add_edge(("need", i), ("unit", unit), capacity=1, weight=rank)
    for pool in pools:
        for unit in pool:
            graph.add_edge(("unit", unit), "sink", capacity=1)
    flow = nx.max_flow_min_cost(graph, "source", "sink")
    total = sum(flow["source"].values())
    if total < sum(n.count for n in needs):
        return None
    result: dict[str, tuple[UnitId, ...]] = {}
    for i, need in enumerate(needs):
        chosen = [node[1] for node, f in flow[("need", i)].items() if f > 0]
        result[need.name] = tuple(sorted(chosen))
    return result


def _fits_empty(candidate: Candidate, usable: set[UnitId], empty: _Calendar) -> bool:
    """Would it fit once every running JobSet ended (`usable`: the units ever free; `empty`: a
    calendar without any busy period, built once per pass)?"""
    return _assign(candidate.needs, usable, empty, 0.0) is not None


def _keep(candidate: Candidate, kept: frozenset[UnitId], calendar: _Calendar) -> Reservation | None:
    """The candidate on exactly its kept units, at the earliest time they are all free for its
    whole run; None when they no longer fit it (gone, never free, or not what it needs)."""
    if not kept or any(not calendar.knows(u) or calendar.never_free(u) for u in kept):
        return None
    chosen = _assign(candidate.needs, set(kept), calendar, 0.0)
    if chosen is None or {u for group in chosen.values() for u in group} != kept:
        return None
    for t in calendar.event_times():
        end = t + candidate.duration_s
        if all(calendar.is_free(u, t, end) for u in kept):
            for unit in kept:
                calendar.hold(unit, t, end)
            return Reservation(candidate.jobset, t, end, chosen)
    return None


def reserve(
    units: Sequence[Unit],
    candidates: Sequence[Candidate],
    *,
    free_at: Mapping[str, float] | None = None,
    limit: int | None = None,
    always: Collection[str] = (),
    holds: Iterable[tuple[UnitId, float, float]] = (),
    kept: Mapping[str, frozenset[UnitId]] | None = None,
) -> list[Reservation]:
    """Reservations for `candidates` in the order given (queue order), each the earliest it can be.

    `free_at` maps a node to the seconds until its running JobSets end (missing: free now;
    `math.inf`: never, e.g. NotReady). `limit` stops reserving after that many candidates got a
    start later than now (EASY backfill reserves for the head of the queue only; None reserves
    for everyone, conservative backfill); candidates named in `always` (waited too long) are
    still reserved for past it. `holds` are (unit, start, end) periods already promised (runs
    planned now). `kept` maps a candidate to the units it was given in an earlier round: those
    are placed first and stay its own while they fit it (see the module doc); they count toward
    `limit` like any other delayed reservation.
    """
    calendar = _Calendar(units, free_at or {})
    empty = _Calendar(units, {})
    usable = {u.id for u in units if not calendar.never_free(u.id)}
    for unit, start, end in holds:
        calendar.hold(unit, start, end)
    ids = [u.id for u in units]
    result: list[Reservation] = []
    delayed = 0
    done: set[str] = set()
    for candidate in candidates:
        if kept and candidate.jobset in kept:
            found = _keep(candidate, kept[candidate.jobset], calendar)
            if found is not None:
                result.append(found)
                done.add(candidate.jobset)
                delayed += bool(found.start_s)
    for candidate in candidates:
        if candidate.jobset in done:
            continue
        if limit is not None and delayed >= limit and candidate.jobset not in always:
            continue
        if not _fits_empty(candidate, usable, empty):
            result.append(Reservation(candidate.jobset, None, None))
            continue
        for t in calendar.event_times():
            end = t + candidate.duration_s
            free = {u for u in ids if calendar.is_free(u, t, end)}
            chosen = _assign(candidate.needs, free, calendar, end)
            if chosen is None:
                continue
            for group in chosen.values():
                for unit in group:
                    calendar.hold(unit, t, end)
            result.append(Reservation(candidate.jobset, t, end, chosen))
            delayed += t > 0
            break
        else:  # the last event time frees every unit that is ever free; an overlap miss lands here
            result.append(Reservation(candidate.jobset, None, None))
    return result
