"""When each waiting JobSet can start, and which domains to hold for it: the reservation pass.

Planning only who starts now lets narrow JobSets take every domain that frees up while a wide one
waits forever. Slurm's answer is backfill: reserve the future start of the JobSets at the head of
the queue, and let others start now only where they do not delay a reservation. This module works
out those reservations on a deliberately small view of the cluster, so it can be run every round:

- a **unit** is something a child Job takes whole: one domain of an exclusive key; it is busy
  until the running JobSets on its nodes end, and then free except where a reservation holds
  one of its nodes;
- a **candidate** is a pending JobSet with an expected duration and, per replicated job, how many
  units it needs and which units could ever take one child Job (static: selectors, taints, size).

In queue order, each candidate gets the earliest time at which enough units are free for its
whole expected run, counting earlier reservations as busy; it then holds the units whose next busy
period starts soonest after it ends (filling gaps leaves long free stretches for wide JobSets).
A start of 0 means "can start now"; `None` means it fits nowhere even on an empty cluster.

Reservations kept from an earlier round (`kept`) go first, whatever the queue order: a JobSet
keeps its units (its start re-timed to when they are all free) as long as they still fit it, so a
reservation does not wander from round to round; everyone else plans around them. They are
re-timed in the order of the starts they were given (`kept_starts`), not in queue order, so one
re-timed earlier never takes the slot of one promised before it. In queue order, a long JobSet
queued ahead of a wide one but reserved after it (the wide one's reservation, kept, went first
when the long one arrived) took the wide one's domain from the wide one's start the round after,
pushing the wide one back by its own run, and then started now where the wide one had been
promised (seen on the real control plane: JobSets created in the same second queue by name).
Who may use a reserved unit now is decided by the planner: the JobSet it is reserved for, or a
JobSet expected to end before the reservation begins (backfill).

Data layout (the pass runs every controller cycle over thousands of units; see
benchmarks/RESULTS-controller.md): units are numbered in id order (`calendar.UnitLayout`) and sets
of units are bitmasks, so "the eligible units free over [t, end), by preference" is a few integer
operations per candidate instead of a check of every unit (`calendar.Calendar`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

import networkx as nx

from placer.solver.time.calendar import Calendar, Unit, UnitId, UnitLayout

__all__ = [
    "Candidate",
    "Need",
    "Reservation",
    "SharedRoom",
    "Unit",
    "UnitId",
    "fits_some_day",
    "reserve",
]


@dataclass(frozen=True)
class Need:
    """One replicated job: `count` child Jobs, each taking one unit among `eligible`."""

    name: str
    count: int
    eligible: frozenset[UnitId]
    within: tuple[frozenset[UnitId], ...] = ()
    """With a required topology: the eligible units of each domain of that level, and all
    `count` must come from one of them. Empty: no such constraint."""


@dataclass(frozen=True)
class Candidate:
    jobset: str
    duration_s: float
    needs: tuple[Need, ...]
    not_before_s: float = 0.0
    """Its child Jobs start no earlier (seconds after now): a JobSet with child Jobs of both
    kinds whose pods without an exclusive key have no room before
    (`shared.starts.domains_when_pods_fit`)."""


@dataclass(frozen=True)
class Reservation:
    jobset: str
    start_s: float | None
    """Seconds after now; 0 when it can start now; None when it cannot start even on an empty
    cluster (then `units` is empty)."""
    end_s: float | None
    units: dict[str, tuple[UnitId, ...]] = field(default_factory=dict)
    """Replicated job name -> the units held for its child Jobs."""
    nodes: frozenset[str] = frozenset()
    """The nodes its pods without an exclusive key are expected to take at `start_s` (a JobSet
    with child Jobs of both kinds: `ReservationPhase`), held for it with its units."""


class SharedRoom(Protocol):
    """Where JobSets without an exclusive child Job fit, node by node (`shared.room.NodeRoom`):
    told of every unit the pass holds, asked at its turn in the queue when one starts."""

    def held(self, owner: str, unit: UnitId, start: float, end: float) -> None: ...

    def start(
        self, jobset: str, duration_s: float
    ) -> tuple[float | None, frozenset[UnitId]] | None:
        """Its start (None: never) and, starting now, the units its pods close; None: not a
        JobSet of that kind."""

    def beside(
        self, jobset: str, duration_s: float, units: Iterable[UnitId], start_s: float
    ) -> frozenset[UnitId]:
        """A JobSet with child Jobs of both kinds the pass gives `units` from `start_s`: the
        units its pods without an exclusive key close from then (none: not of that kind, or no
        room then)."""


Chosen = dict[str, tuple[int, ...]]
"""Replicated job name -> the numbers (`UnitLayout`) of the units taken for its child Jobs."""


MAX_ENCLOSING_COMBINATIONS = 64
"""How many choices of enclosing domains (one per replicated job with a required topology) one
assignment tries; past it a fit may be missed, which only delays the start."""


def _assign(needs: Sequence[Need], free: int, calendar: Calendar, end: float) -> Chosen | None:
    """Distinct free units (`free`: a mask) for every child Job of every need, or None.

    A need with a required topology takes all its units inside one domain of that level: each
    choice of such domains is tried, the tightest first (fewest free eligible units that still
    hold the need, as Kueue's BestFit), so a wide JobSet is not promised units it cannot use
    together.
    """
    if not any(n.within for n in needs):
        return _assign_anywhere(needs, free, calendar, end)
    layout = calendar.layout
    options: list[list[frozenset[UnitId]]] = []
    for n in needs:
        if not n.within:
            options.append([n.eligible])
            continue
        room = [((layout.mask(g) & free).bit_count(), i) for i, g in enumerate(n.within)]
        fitting = sorted((r, i) for r, i in room if r >= n.count)
        if not fitting:
            return None
        options.append([n.within[i] for _, i in fitting])
    for choice in itertools.islice(itertools.product(*options), MAX_ENCLOSING_COMBINATIONS):
        inside = [replace(n, eligible=g, within=()) for n, g in zip(needs, choice, strict=True)]
        found = _assign_anywhere(inside, free, calendar, end)
        if found is not None:
            return found
    return None


def _assign_anywhere(
    needs: Sequence[Need], free: int, calendar: Calendar, end: float
) -> Chosen | None:
    """Distinct free units (`free`: a mask) for every child Job of every need, without
    enclosing domains, or None.

    Needs usually draw on disjoint units (different keys or selectors): then counting suffices,
    and only the first `count` units of each pool in preference order are ever listed.
    Overlapping needs are matched with a max flow, so a bad greedy order never hides a fit.
    """
    layout = calendar.layout
    pools = [layout.mask(n.eligible) & free for n in needs]
    if any(pool.bit_count() < n.count for pool, n in zip(pools, needs, strict=True)):
        return None
    seen = 0
    disjoint = True
    for pool in pools:
        if seen & pool:
            disjoint = False
            break
        seen |= pool
    chosen: Chosen | None
    ordered: list[list[int]] | None = None  # each pool whole, in preference order, when needed
    # the unit whose next busy period starts soonest after this run ends wastes the least
    if disjoint:
        chosen = {
            n.name: tuple(calendar.by_preference(pool, end, n.count))
            for n, pool in zip(needs, pools, strict=True)
        }
    else:
        ordered = [calendar.by_preference(p, end) for p in pools]
        chosen = _assign_by_flow(needs, ordered, layout)
        if chosen is None:
            return None
    if _cells_disjoint(chosen, layout):
        return chosen
    if ordered is None:
        ordered = [calendar.by_preference(p, end) for p in pools]
    return _assign_avoiding_overlap(needs, ordered, layout)


def _cells_disjoint(chosen: Chosen, layout: UnitLayout) -> bool:
    seen: set[int] = set()
    for group in chosen.values():
        for unit in group:
            cells = layout.cells[unit]
            if seen.intersection(cells):
                return False
            seen.update(cells)
    return True


def _assign_avoiding_overlap(
    needs: Sequence[Need], pools: Sequence[list[int]], layout: UnitLayout
) -> Chosen | None:
    """Overlapping units (a node pool and its block): take them in preference order, skipping
    any that shares nodes with one already taken. Not exhaustive: a miss only delays the start."""
    taken: set[int] = set()
    result: Chosen = {}
    for need, pool in sorted(zip(needs, pools, strict=True), key=lambda np: len(np[1])):
        picked: list[int] = []
        for unit in pool:
            cells = layout.cells[unit]
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
    needs: Sequence[Need], pools: Sequence[list[int]], layout: UnitLayout
) -> Chosen | None:
    graph = nx.DiGraph()
    for i, (need, pool) in enumerate(zip(needs, pools, strict=True)):
        graph.add_edge("source", ("need", i), capacity=need.count)
        for rank, unit in enumerate(pool):
            # lower rank = preferred; the cost steers the flow toward preferred units
            graph.add_edge(("need", i), ("unit", layout.ids[unit]), capacity=1, weight=rank)
    for pool in pools:
        for unit in pool:
            graph.add_edge(("unit", layout.ids[unit]), "sink", capacity=1)
    flow = nx.max_flow_min_cost(graph, "source", "sink")
    total = sum(flow["source"].values())
    if total < sum(n.count for n in needs):
        return None
    result: Chosen = {}
    for i, need in enumerate(needs):
        chosen = [layout.number[node[1]] for node, f in flow[("need", i)].items() if f > 0]
        result[need.name] = tuple(sorted(chosen))
    return result


def _units_of(chosen: Chosen, layout: UnitLayout) -> dict[str, tuple[UnitId, ...]]:
    return {name: tuple(layout.ids[u] for u in group) for name, group in chosen.items()}


def _hold(
    calendar: Calendar, room: SharedRoom | None, owner: str, unit: int, start: float, end: float
) -> None:
    """`unit` held over `[start, end)`, and `room` told (its nodes are closed to every pod)."""
    calendar.hold(unit, start, end)
    if room is not None:
        room.held(owner, calendar.layout.ids[unit], start, end)


def _keep(
    candidate: Candidate,
    kept: frozenset[UnitId],
    calendar: Calendar,
    room: SharedRoom | None = None,
) -> Reservation | None:
    """The candidate on exactly its kept units, at the earliest time they are all free for its
    whole run; None when they no longer fit it (gone, never free, or not what it needs)."""
    layout = calendar.layout
    if not kept or any(u not in layout.number for u in kept):
        return None
    numbers = [layout.number[u] for u in kept]
    if any(calendar.never_free(u) for u in numbers):
        return None
    chosen = _assign(candidate.needs, layout.mask(kept), calendar, 0.0)
    if chosen is None or {u for group in chosen.values() for u in group} != set(numbers):
        return None
    for t in _times(calendar, candidate):
        end = t + candidate.duration_s
        if all(calendar.is_free(u, t, end) for u in numbers):
            for unit in numbers:
                _hold(calendar, room, candidate.jobset, unit, t, end)
            return Reservation(candidate.jobset, t, end, _units_of(chosen, layout))
    return None


def _times(calendar: Calendar, candidate: Candidate) -> list[float]:
    """The instants a candidate may start at: every event time, or from its `not_before_s` on
    (the units free over a run from then are free from then or from a later event)."""
    times = calendar.event_times()
    if candidate.not_before_s <= 0:
        return times
    return [candidate.not_before_s, *(t for t in times if t > candidate.not_before_s)]


def _earliest(
    candidate: Candidate, calendar: Calendar, room: SharedRoom | None = None
) -> Reservation | None:
    """The candidate at the first event time where its units are free for its whole run, held;
    None when no event time fits (the last one frees every unit that is ever free, so only an
    overlap miss lands there)."""
    layout = calendar.layout
    least = [(layout.mask(need.eligible), need.count) for need in candidate.needs]
    within = 0
    for mask, _ in least:
        within |= mask
    times = _times(calendar, candidate)
    # before every need has enough free units, no assignment is tried (`_assign` finds none)
    for i, free in calendar.free_masks(times, candidate.duration_s, within, least):
        t = times[i]
        end = t + candidate.duration_s
        chosen = _assign(candidate.needs, free, calendar, end)
        if chosen is None:
            continue
        for group in chosen.values():
            for unit in group:
                _hold(calendar, room, candidate.jobset, unit, t, end)
        return Reservation(candidate.jobset, t, end, _units_of(chosen, layout))
    return None


def _close_beside(
    found: Reservation, candidate: Candidate, calendar: Calendar, room: SharedRoom | None
) -> None:
    """A JobSet given units whose pods without an exclusive key the room packs from the same
    start: the units holding their nodes are closed to the exclusive child Jobs behind it for
    its run, as for a JobSet of such pods alone. Unknown to the pass, the inner solve put them
    on domains the pass gave JobSets behind, and was run again for each so displaced (1.1-1.3 s
    at 10,000 nodes with 50 such JobSets, `benchmarks.shared_starts_bench --mixed 50`); at a
    later start they are the nodes the reservation holds (`shared.room.NodeRoom.beside`)."""
    if room is None or found.start_s is None:
        return
    held = [u for group in found.units.values() for u in group]
    start, end = found.start_s, found.start_s + candidate.duration_s
    for unit in room.beside(candidate.jobset, candidate.duration_s, held, start):
        calendar.hold(calendar.layout.number[unit], start, end)


def fits_some_day(needs: Sequence[Need], empty: Calendar) -> bool:
    """Whether `needs` fit the units once every one is free (`empty`: a calendar of the
    layout with nothing running), as `reserve` judges a JobSet that never fits."""
    return _assign(needs, empty.ever_free(), empty, 0.0) is not None


def reserve(
    units: Sequence[Unit] | UnitLayout,
    candidates: Sequence[Candidate],
    *,
    free_at: Mapping[str, float] | None = None,
    limit: int | None = None,
    always: Collection[str] = (),
    holds: Iterable[tuple[UnitId, float, float]] = (),
    kept: Mapping[str, frozenset[UnitId]] | None = None,
    kept_starts: Mapping[str, float] | None = None,
    room: SharedRoom | None = None,
) -> list[Reservation]:
    """Reservations for `candidates` in the order given (queue order), each the earliest it can be.

    `free_at` maps a node to the seconds until its running JobSets end (missing: free now;
    `math.inf`: never, e.g. NotReady). `limit` stops reserving after that many candidates got a
    start later than now (EASY backfill reserves for the head of the queue only; None reserves
    for everyone, conservative backfill); candidates named in `always` (waited too long) are
    still reserved for past it. `holds` are (unit, start, end) periods already promised (runs
    planned now). `kept` maps a candidate to the units it was given in an earlier round: those
    are placed first and stay its own while they fit it (see the module doc), earliest of
    `kept_starts` (when each was to start, in seconds from now) first, then in queue order; they
    count toward `limit` like any other delayed reservation. `units` may be given as their
    `UnitLayout` when the caller runs several passes over the same units (it is the same whoever
    builds it). `room`, when given, judges candidates without an exclusive child Job node by node
    at their turn (`SharedRoom`): only one that fits now starts now, and the units its pods
    close are held for its run; it counts toward no `limit`, as it holds no reservation.
    """
    layout = units if isinstance(units, UnitLayout) else UnitLayout(units)
    calendar = Calendar(layout, free_at or {})
    # the cluster once every running JobSet ended: what fits there fits some day
    empty = Calendar(layout, {})
    usable = calendar.ever_free()
    for unit, start, end in holds:
        _hold(calendar, room, "", layout.number[unit], start, end)
    result: list[Reservation] = []
    delayed = 0
    done: set[str] = set()
    kept = kept or {}
    starts = kept_starts or {}
    keeping = [c for c in candidates if c.jobset in kept]
    keeping.sort(key=lambda c: starts.get(c.jobset, math.inf))  # stable: then queue order
    for candidate in keeping:
        found = _keep(candidate, kept[candidate.jobset], calendar, room)
        if found is not None:
            _close_beside(found, candidate, calendar, room)
            result.append(found)
            done.add(candidate.jobset)
            delayed += bool(found.start_s)
    for candidate in candidates:
        if candidate.jobset in done:
            continue
        if limit is not None and delayed >= limit and candidate.jobset not in always:
            continue
        shared = room.start(candidate.jobset, candidate.duration_s) if room is not None else None
        if shared is not None:
            begins, closed = shared
            # its pods close these domains to exclusive child Jobs, not to other pods: the room,
            # which holds the pods themselves, is not told
            for unit in closed:
                calendar.hold(layout.number[unit], 0.0, candidate.duration_s)
            ends = None if begins is None else begins + candidate.duration_s
            result.append(Reservation(candidate.jobset, begins, ends))
            continue
        if _assign(candidate.needs, usable, empty, 0.0) is None:
            result.append(Reservation(candidate.jobset, None, None))
            continue
        found = _earliest(candidate, calendar, room)
        if found is None:
            result.append(Reservation(candidate.jobset, None, None))
            continue
        _close_beside(found, candidate, calendar, room)
        result.append(found)
        delayed += (found.start_s or 0.0) > 0
    return result
