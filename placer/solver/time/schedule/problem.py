"""The schedule over time as a small problem: classes of domains, each waiting JobSet's needs.

`schedule.solve` plans when every waiting JobSet starts with one CP-SAT model. At fleet scale the
model must not see every domain: like the snapshot model (`cpsat.aggregate`), it sees classes.
A **class** is a set of domains no waiting JobSet can tell apart: the same eligibility for every
replicated job of the queue and the same enclosing domain for every required topology. Within a
class domains differ only in when they free up, which the model reads as capacity over time: a
class of `size` domains, of which `count` are busy until `free_at_s` (the release timeline).

Domains with a hold starting in the future (a reservation of another controller's JobSet) are a
class each, with their holds as busy periods: the model then never needs to know which domain of
a class a JobSet takes, and the materialization (`schedule.solve`) can always find one, taking the
JobSets in order of start (an interval graph is colored greedily that way).

**Overlapping keys** (a node pool inside a block, both exclusive keys of the queue): which domain
a JobSet takes then decides which others it blocks, so classes follow the overlaps (`overlap`):
a domain containing another one is a class of its own with a rule over the domains inside it
(`SharedNodes`: what is held inside weighs no more than its nodes; `schedule.model.add_shared`);
domains inside one are counted in classes per enclosing domain. Where keys cross rather than
nest, every domain sharing nodes is a class of its own, with a rule per set of shared nodes. A
hold on a domain is a busy period of every domain sharing a node with it.

Times are whole seconds after now: durations and releases rounded up, so a schedule that fits in
whole seconds fits in real ones. Start times take values on a bucketed grid (`START_GRID`: fine
near now, coarse far out), plus every release and every start and end of the greedy hint, so the
hint is a valid schedule and an earlier start at an event is always on offer.

A **starving** JobSet (`schedule.starving`) carries its greedy slot as a latest start: the hint
reserves starving JobSets first, oldest first, so that slot is as early as the greedy pass can
give them.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from placer.solver.time.calendar import UnitId, UnitLayout, merged_spans
from placer.solver.time.overlap import Overlap, overlap, sharing
from placer.solver.time.reservations import Candidate, Need, Reservation

__all__ = [
    "START_GRID",
    "ScheduleJob",
    "ScheduleNeed",
    "ScheduleProblem",
    "ScheduleRequest",
    "SharedNodes",
    "UnitClass",
    "build_problem",
    "unit_release_s",
]

START_GRID: tuple[tuple[float, int], ...] = (
    (3600.0, 300),
    (6 * 3600.0, 900),
    (24 * 3600.0, 3600),
    (math.inf, 4 * 3600),
)
"""(until, step) in seconds: start times every 5 min for the first hour, every 15 min to 6 h,
hourly to a day, every 4 h beyond. Only the start of now is committed each round; later starts
are re-planned every round, so far ones need little precision."""


@dataclass(frozen=True)
class ScheduleRequest:
    """What the time-aware pass hands the schedule: the same view the greedy pass plans on."""

    layout: UnitLayout
    candidates: tuple[Candidate, ...]
    """Waiting JobSets in queue order (the greedy hint takes them in this order)."""
    free_at: Mapping[str, float]
    """Node -> seconds until its running JobSets end (see `reservations.reserve`)."""
    holds: tuple[tuple[UnitId, float, float], ...]
    """(unit, start, end) periods promised to JobSets outside the queue."""
    kept: Mapping[str, frozenset[UnitId]]
    """JobSet -> the units it was reserved in the previous round."""
    tiers: Mapping[str, tuple[int, float]]
    """JobSet -> (priority tier, aging included; seconds waited since creation)."""
    max_wait_s: float | None


@dataclass(frozen=True)
class UnitClass:
    """Domains no waiting JobSet can tell apart (`units`: numbers in the `UnitLayout`)."""

    index: int
    units: tuple[int, ...]
    busy: tuple[tuple[int, int, int], ...]
    """(start s, end s, domains): periods when that many of its domains are taken already
    (running JobSets until they end; a future hold on a domain of a class of its own)."""


@dataclass(frozen=True)
class ScheduleNeed:
    """One replicated job: `count` child Jobs, one domain each, from `classes`."""

    name: str
    count: int
    classes: tuple[int, ...]
    groups: tuple[tuple[int, ...], ...] = ()
    """With a required topology: the classes inside each enclosing domain; all `count` child
    Jobs come from one group. Empty: no such constraint."""


@dataclass(frozen=True)
class ScheduleJob:
    """A waiting JobSet in the model."""

    key: str
    duration_s: int
    needs: tuple[ScheduleNeed, ...]
    rank: int
    """Its priority tier (aging included): a tier's waits weigh `TIER_RATIO` times the next's."""
    waited_s: int
    hint_start_s: int
    hint_counts: tuple[tuple[str, int, int], ...]
    """(need name, class, child Jobs) in the greedy hint."""
    kept: bool = False
    """It had a reservation last round, which the hint keeps (see `schedule.model.STABLE_S`)."""
    latest_start_s: int | None = None
    """A starving JobSet's greedy slot (`hint_start_s`): it starts no later (`starving`)."""
    earliest_start_s: int = 0
    """It starts no earlier (`Candidate.not_before_s`: its pods without an exclusive key have
    no room before)."""


@dataclass(frozen=True)
class SharedNodes:
    """Domains of overlapping keys sharing nodes (`overlap.Nest` in classes): at every instant,
    the domains JobSets hold among them, each weighing its class's weight, weigh at most
    `cells`. Busy periods are each class's own (`UnitClass.busy`)."""

    cells: int
    weights: tuple[tuple[int, int], ...]
    """(class, weight of each of its domains), by class."""


@dataclass(frozen=True)
class ScheduleProblem:
    classes: tuple[UnitClass, ...]
    jobs: tuple[ScheduleJob, ...]
    starts: tuple[int, ...]
    """The start times on offer, sorted, 0 first."""
    max_wait_s: int | None
    shared: tuple[SharedNodes, ...] = ()
    """With overlapping keys, the rules that keep domains sharing nodes apart; else empty."""


def unit_release_s(layout: UnitLayout, free_at: Mapping[str, float]) -> list[float]:
    """Per unit number, when it is free (rounded up to a second; inf: never)."""
    cell_free = [0.0] * len(layout.units_of)
    for node, f in free_at.items():
        cell = layout.node_cell.get(node)
        if cell is not None:
            cell_free[cell] = max(cell_free[cell], f)
    return [
        max((math.ceil(cell_free[c]) if math.isfinite(cell_free[c]) else math.inf) for c in cells)
        if cells
        else 0.0
        for cells in layout.cells
    ]


def _grid(last: int) -> set[int]:
    values: set[int] = set()
    t = 0
    for until, step in START_GRID:
        while t <= last and t < until:
            values.add(t)
            t += step
    return values


def _signatures(
    layout: UnitLayout, jobs: Sequence[Candidate], future: set[int], overlaps: Overlap
) -> dict[int, tuple[object, ...]]:
    """Per unit number, what tells it apart: the eligible sets and enclosing groups holding it;
    the unit itself for a unit with a future hold or one the overlaps leave alone; the nests
    around a unit inside some, and its cells (its weight in them)."""
    eligible = sorted({n.eligible for c in jobs for n in c.needs}, key=sorted)
    groups = sorted(
        {g for c in jobs for n in c.needs if _real_groups(n.within) for g in n.within}, key=sorted
    )
    sig: dict[int, list[object]] = {u: [] for u in range(len(layout.ids))}
    for i, units in enumerate(eligible):
        for u in _numbers(layout, units):
            sig[u].append(("e", i))
    for i, units in enumerate(groups):
        for u in _numbers(layout, units):
            sig[u].append(("g", i))
    for u, around in overlaps.inside.items():
        sig[u].append(("in", around, len(layout.cells[u])))
    alone = future | overlaps.alone
    return {u: (*s, ("u", u) if u in alone else ()) for u, s in sig.items()}


def _numbers(layout: UnitLayout, units: frozenset[UnitId]) -> list[int]:
    return [layout.number[u] for u in units if u in layout.number]


def _real_groups(within: tuple[frozenset[UnitId], ...]) -> bool:
    """A required topology whose every domain holds one unit says nothing more than the
    eligibility (a child Job per domain of its own key)."""
    return any(len(g) > 1 for g in within)


def _classes(
    layout: UnitLayout,
    release: Sequence[float],
    holds: Sequence[tuple[int, int, int]],
    signatures: Mapping[int, tuple[object, ...]],
) -> tuple[tuple[UnitClass, ...], dict[int, int]]:
    by_sig: dict[tuple[object, ...], list[int]] = {}
    for u in range(len(layout.ids)):
        if math.isfinite(release[u]) and signatures[u]:
            by_sig.setdefault(signatures[u], []).append(u)
    classes: list[UnitClass] = []
    class_of: dict[int, int] = {}
    later: dict[int, list[tuple[int, int]]] = {}
    for unit, start, end in holds:
        later.setdefault(unit, []).append((start, end))
    for units in sorted(by_sig.values()):
        index = len(classes)
        busy: dict[tuple[int, int], int] = {}
        for u in units:
            class_of[u] = index
            first = [(0, int(release[u]))] if release[u] > 0 else []
            for span in merged_spans([*first, *later.get(u, ())]):
                busy[span] = busy.get(span, 0) + 1
        spans = tuple(sorted((s, e, k) for (s, e), k in busy.items()))
        classes.append(UnitClass(index, tuple(units), spans))
    return tuple(classes), class_of


def _shared(overlaps: Overlap, class_of: Mapping[int, int]) -> tuple[SharedNodes, ...]:
    """The overlaps' rules in classes, each once; a rule over one class says nothing its
    capacity does not (a nest never free, with disjoint units inside)."""
    found: set[SharedNodes] = set()
    for nest in overlaps.nests:
        weights = {class_of[u]: w for u, w in nest.weights.items() if u in class_of}
        if len(weights) > 1:
            found.add(SharedNodes(nest.cells, tuple(sorted(weights.items()))))
    return tuple(sorted(found, key=lambda r: (r.weights, r.cells)))


class _ClassesOf:
    """The classes holding a set of units, computed once per set: JobSets of one shape share
    their eligible sets, and at 10,000 nodes and 500 pending JobSets mapping every JobSet's
    thousands of units again took most of the problem's build time."""

    def __init__(self, layout: UnitLayout, class_of: Mapping[int, int]) -> None:
        self.layout, self.class_of = layout, class_of
        self.known: dict[frozenset[UnitId], tuple[int, ...]] = {}

    def __call__(self, units: frozenset[UnitId]) -> tuple[int, ...]:
        found = self.known.get(units)
        if found is None:
            found = tuple(
                sorted(
                    {self.class_of[u] for u in _numbers(self.layout, units) if u in self.class_of}
                )
            )
            self.known[units] = found
        return found


def _need(need: Need, classes_of: _ClassesOf) -> ScheduleNeed:
    groups: tuple[tuple[int, ...], ...] = ()
    if _real_groups(need.within):
        groups = tuple(classes_of(g) for g in need.within)
    return ScheduleNeed(need.name, need.count, classes_of(need.eligible), groups)


def _kept(request: ScheduleRequest, hinted: Reservation) -> bool:
    """The hint kept last round's reservation whole (the greedy pass drops one that no longer
    fits, and then the JobSet has nothing to keep)."""
    before = request.kept.get(hinted.jobset)
    held = {u for group in hinted.units.values() for u in group}
    return bool(before) and held == set(before or ())


def build_problem(
    request: ScheduleRequest,
    hint: Mapping[str, Reservation],
    release: Sequence[float],
    holds: Sequence[tuple[UnitId, int, int]],
    *,
    starving: Collection[str],
) -> ScheduleProblem:
    """The problem for the candidates the hint starts some day and that need a domain.

    `release`: per unit number, when it frees up (`unit_release_s`); `holds`: the request's
    holds in whole seconds. A hold keeps busy every unit sharing a node with its unit.
    `starving`: the JobSets the hint reserved first (`starving.starving`), each bounded by its
    hinted start.
    """
    layout, tiers, max_wait_s = request.layout, request.tiers, request.max_wait_s
    jobs_in = [
        c
        for c in request.candidates
        if c.needs and c.jobset in hint and hint[c.jobset].start_s is not None
    ]
    release = list(release)
    future: list[tuple[int, int, int]] = []
    for unit_id, start, end in holds:
        held = layout.number.get(unit_id)
        if held is None:
            continue
        for u in sharing(layout, held):
            if start <= 0:
                release[u] = max(release[u], end)
            else:
                future.append((u, start, end))
    # each distinct eligible set once (JobSets of one shape share theirs): read for every
    # need of every JobSet, 2,500 units each, this was most of building the problem where
    # running JobSets end apart (benchmarks/RESULTS-controller.md, round 53)
    takeable: set[int] = set()
    for eligible in {n.eligible for c in jobs_in for n in c.needs}:
        takeable.update(_numbers(layout, eligible))
    overlaps = overlap(layout, takeable)
    signatures = _signatures(layout, jobs_in, {u for u, _, _ in future}, overlaps)
    classes, class_of = _classes(layout, release, future, signatures)
    jobs: list[ScheduleJob] = []
    ends: set[int] = set()
    old = set(starving)
    classes_of = _ClassesOf(layout, class_of)
    for c in jobs_in:
        r = hint[c.jobset]
        start = int(r.start_s or 0)
        counts: dict[tuple[str, int], int] = {}
        for name, units in r.units.items():
            for uid in units:
                key = (name, class_of[layout.number[uid]])
                counts[key] = counts.get(key, 0) + 1
        rank, waited = tiers[c.jobset]
        duration = math.ceil(c.duration_s)
        jobs.append(
            ScheduleJob(
                key=c.jobset,
                duration_s=duration,
                needs=tuple(_need(n, classes_of) for n in c.needs),
                rank=rank,
                waited_s=int(waited),
                hint_start_s=start,
                hint_counts=tuple(sorted((n, k, v) for (n, k), v in counts.items())),
                kept=_kept(request, r),
                latest_start_s=start if c.jobset in old else None,
                earliest_start_s=math.ceil(c.not_before_s),
            )
        )
        ends.update((start, start + duration, math.ceil(c.not_before_s)))
    last = max((j.hint_start_s for j in jobs), default=0)
    releases = {int(x) for x in release if math.isfinite(x) and 0 < x <= last}
    starts = _grid(last) | releases | {e for e in ends if e <= last} | {0}
    return ScheduleProblem(
        classes=classes,
        jobs=tuple(jobs),
        starts=tuple(sorted(starts)),
        max_wait_s=None if max_wait_s is None else int(max_wait_s),
        shared=_shared(overlaps, class_of),
    )
