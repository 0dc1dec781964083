"""When each waiting JobSet can start, and which domains to hold for it: the reservation pass.

Planning only who starts now lets narrow JobSets take every domain that frees up while a wide one
waits forever. Slurm's answer is backfill: reserve the future start of the JobSets at the head of
the queue, and let others start now only where they do not delay a reservation. This module works
out those reservations on a deliberately small view of the cluster, so it can be run every round:

- a **unit** is something a child Job takes whole: one domain of an exclusive key, or one node
  (for child Jobs without an exclusive key); it is busy until its running JobSets end
  (`free_at_s`), and then free except where a reservation holds it;
- a **candidate** is a pending JobSet with an expected duration and, per replicated job, how many
  units it needs and which units could ever take one child Job (static: selectors, taints, size).

In queue order, each candidate gets the earliest time at which enough units are free for its
whole expected run, counting earlier reservations as busy; it then holds the units whose next busy
period starts soonest after it ends (filling gaps leaves long free stretches for wide JobSets).
A start of 0 means "can start now"; `None` means it fits nowhere even on an empty cluster.
Who may use a reserved unit now is decided by the planner: the JobSet it is reserved for, or a
JobSet expected to end before the reservation begins (backfill).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import networkx as nx

__all__ = [
    "Candidate",
    "Need",
    "Reservation",
    "Unit",
    "UnitId",
    "reserve",
]

UnitId = tuple[str, str]
"""(label key, value) of a domain, or ("kubernetes.io/hostname", node name) for a node."""


@dataclass(frozen=True)
class Unit:
    id: UnitId
    free_at_s: float
    """Seconds after now when the running JobSets holding it are expected to end (0: free now;
    `math.inf`: never, e.g. NotReady or cordoned)."""


@dataclass(frozen=True)
class Need:
    """One replicated job: `count` child Jobs, each taking one unit among `eligible`."""

    name: str
    count: int
    eligible: frozenset[UnitId]


@dataclass(frozen=True)
class Candidate:
    jobset: str
    duration_s: float
    needs: tuple[Need, ...]


@dataclass(frozen=True)
class Reservation:
    jobset: str
    start_s: float | None
    """Seconds after now; 0 when it can start now; None when it cannot start even on an empty
    cluster (then `units` is empty)."""
    end_s: float | None
    units: dict[str, tuple[UnitId, ...]] = field(default_factory=dict)
    """Replicated job name -> the units held for its child Jobs."""


class _Calendar:
    """Busy intervals per unit, kept sorted by start; intervals never overlap."""

    def __init__(self, units: Iterable[Unit]) -> None:
        self._busy: dict[UnitId, list[tuple[float, float]]] = {}
        for u in units:
            self._busy[u.id] = [(0.0, u.free_at_s)] if u.free_at_s > 0 else []

    def known(self, unit: UnitId) -> bool:
        return unit in self._busy

    def is_free(self, unit: UnitId, start: float, end: float) -> bool:
        intervals = self._busy[unit]
        i = bisect.bisect_left(intervals, (end, -math.inf))
        # only the interval starting before `end` with the latest start can overlap
        return i == 0 or intervals[i - 1][1] <= start

    def next_busy_after(self, unit: UnitId, t: float) -> float:
        """Start of the first busy interval at or after t (inf when none)."""
        for s, _ in self._busy[unit]:
            if s >= t:
                return s
        return math.inf

    def hold(self, unit: UnitId, start: float, end: float) -> None:
        bisect.insort(self._busy[unit], (start, end))

    def event_times(self) -> list[float]:
        """Every instant a unit may become free: 0 and the end of every busy interval."""
        ends = {0.0}
        for intervals in self._busy.values():
            ends.update(e for _, e in intervals if math.isfinite(e))
        return sorted(ends)


def _assign(
    needs: Sequence[Need], free: set[UnitId], calendar: _Calendar, end: float
) -> dict[str, tuple[UnitId, ...]] | None:
    """Distinct free units for every child Job of every need, or None when they do not exist.

    Needs usually draw on disjoint units (different keys or selectors): then counting suffices.
    Overlapping needs are matched with a max flow, so a bad greedy order never hides a fit.
    """

    def preference(unit: UnitId) -> tuple[float, UnitId]:
        # the unit whose next busy period starts soonest after this run ends wastes the least
        return (calendar.next_busy_after(unit, end), unit)

    pools = [sorted(n.eligible & free, key=preference) for n in needs]
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
        return {n.name: tuple(pool[: n.count]) for n, pool in zip(needs, pools, strict=True)}
    return _assign_by_flow(needs, pools)


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


def _fits_empty(candidate: Candidate, known: Mapping[UnitId, Unit]) -> bool:
    usable = {u for u, unit in known.items() if math.isfinite(unit.free_at_s)}
    calendar = _Calendar(Unit(u, 0.0) for u in usable)
    return _assign(candidate.needs, usable, calendar, 0.0) is not None


def reserve(
    units: Sequence[Unit],
    candidates: Sequence[Candidate],
    *,
    limit: int | None = None,
    always: Collection[str] = (),
    holds: Iterable[tuple[UnitId, float, float]] = (),
) -> list[Reservation]:
    """Reservations for `candidates` in the order given (queue order), each the earliest it can be.

    `limit` stops reserving after that many candidates got a start later than now (EASY backfill
    reserves for the head of the queue only; None reserves for everyone, conservative backfill);
    candidates named in `always` (waited too long) are still reserved for past it. `holds` are
    (unit, start, end) periods already promised (runs planned now, reservations kept from an
    earlier round).
    """
    known = {u.id: u for u in units}
    calendar = _Calendar(units)
    for unit, start, end in holds:
        calendar.hold(unit, start, end)
    result: list[Reservation] = []
    delayed = 0
    for candidate in candidates:
        if limit is not None and delayed >= limit and candidate.jobset not in always:
            continue
        if not _fits_empty(candidate, known):
            result.append(Reservation(candidate.jobset, None, None))
            continue
        for t in calendar.event_times():
            end = t + candidate.duration_s
            free = {u for u in known if calendar.is_free(u, t, end)}
            chosen = _assign(candidate.needs, free, calendar, end)
            if chosen is None:
                continue
            for group in chosen.values():
                for unit in group:
                    calendar.hold(unit, t, end)
            result.append(Reservation(candidate.jobset, t, end, chosen))
            delayed += t > 0
            break
        else:  # pragma: no cover - the last event time frees every finite unit
            result.append(Reservation(candidate.jobset, None, None))
    return result
