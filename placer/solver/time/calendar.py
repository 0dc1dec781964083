"""Busy periods of reservation units over time: the data layout of the reservation pass.

`reservations.reserve` asks, for each waiting JobSet and each instant at which something frees up,
"which of the units this JobSet could take are free for its whole run, in order of preference?".
At fleet scale (2,500 node pools, 500 JobSets) asking every unit each time was most of a
controller cycle (benchmarks/RESULTS-controller.md). Two layouts answer it in a few integer
operations instead:

- `UnitLayout` (read-only, one per pass or per planning round): units numbered in id order, so a
  set of units is an `int` bitmask and "sorted by id" is "lowest bit first"; the cells (sets of
  nodes every unit takes whole or not at all) that make overlapping keys safe; one mask per
  distinct eligible set (JobSets of one shape share it).
- `Calendar` (mutable, one per pass): busy intervals per cell, kept sorted. Units whose busy
  periods all start now or earlier (running JobSets, runs started now: nearly all of them) are
  grouped by the instant they become free for good, so the free ones at `t` are the union of the
  groups free by `t`. Units with a period starting later (a reservation in the future) are
  grouped by their busy intervals: units busy over the same periods are free together, so one of
  each group is checked (a JobSet reserved on many units, or units reserved for one start,
  share a group: about one group for 775 such units per question at 10,000 nodes). Where
  running JobSets end apart, units are rarely alike; but a unit is free over a run from the
  instant it is free for good on, unless it is free for as long as the run before then, so
  `free_masks` reads only those few interval by interval (`_free_from`, `_reach`).

Both answer exactly as checking every unit's intervals would (a differential test keeps the
previous, unit-by-unit pass as its oracle: tests/solver/time/test_reservations_differential.py).
"""

from __future__ import annotations

import bisect
import itertools
import math
import operator
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

__all__ = ["Calendar", "Unit", "UnitId", "UnitLayout", "merged_spans"]

UnitId = tuple[str, str]
"""(label key, value) of a domain, or ("kubernetes.io/hostname", node name) for a node."""


@dataclass(frozen=True)
class Unit:
    id: UnitId
    nodes: frozenset[str]
    """Its nodes: two units sharing a node (a node pool inside a block, both exclusive keys of
    the queue) are never held by two JobSets at once."""


def _insert_merged(intervals: list[tuple[float, float]], start: float, end: float) -> None:
    """Add busy `[start, end)` to `intervals` (sorted, none overlapping), merged with those it
    overlaps, so none overlap still: every reader looks only at the last interval starting
    before an instant. The pass's own holds never overlap, but a hold from outside (another
    controller's reservation, an earlier round's) may fall inside a running JobSet's busy
    period: inserted as it was, a pool busy until 3 h with another reservation over [1 h, 2 h)
    read as free from 2 h (a property test found it: tests/solver/time/test_mixed_starts.py)."""
    i = bisect.bisect_left(intervals, (start, end))
    lo, hi = start, end
    first = i
    if first > 0 and intervals[first - 1][1] > start:
        first -= 1
        lo, hi = intervals[first][0], max(hi, intervals[first][1])
    last = i
    while last < len(intervals) and intervals[last][0] < hi:
        hi = max(hi, intervals[last][1])
        last += 1
    intervals[first:last] = [(lo, hi)]


def merged_spans(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Ranges `[lo, hi)` (in any order) as disjoint ones, sorted: merged where they overlap or
    touch. The calendar's spans of start instants a unit is busy over, and the schedule's busy
    periods of a unit (`schedule.problem`: a domain busy twice at once would make its capacity
    rule unsatisfiable)."""
    found: list[tuple[int, int]] = []
    for lo, hi in sorted(spans):
        if found and lo <= found[-1][1]:
            found[-1] = (found[-1][0], max(found[-1][1], hi))
        else:
            found.append((lo, hi))
    return found


def _reach(periods: Sequence[Sequence[tuple[float, float]]]) -> tuple[float, float]:
    """(when a unit busy over its cells' `periods` is free for good, the longest stretch it
    is free before then from 0 on); -inf when it is never busy."""
    free_for_good, longest, since = -math.inf, 0.0, 0.0
    for start, end in sorted(span for cell in periods for span in cell):
        if start > since:
            longest = max(longest, start - since)
        since = max(since, end)
        free_for_good = max(free_for_good, end)
    return free_for_good, longest


def _bits(mask: int, limit: int | None = None) -> list[int]:
    """The set bits of `mask`, lowest first (at most `limit` of them)."""
    found: list[int] = []
    while mask and (limit is None or len(found) < limit):
        low = mask & -mask
        found.append(low.bit_length() - 1)
        mask ^= low
    return found


class UnitLayout:
    """Units numbered in id order, their cells, and masks of unit sets; read-only once built.

    A cell is a set of nodes that every unit takes whole or not at all (nodes in the same units);
    with non-overlapping keys each unit is one cell, so checking a unit is one lookup.
    """

    def __init__(self, units: Iterable[Unit]) -> None:
        units = list(units)
        self.ids: tuple[UnitId, ...] = tuple(sorted({u.id for u in units}))
        """unit number -> its id"""
        self.number: dict[UnitId, int] = {uid: i for i, uid in enumerate(self.ids)}
        members: dict[str, list[UnitId]] = {}
        for u in units:
            for n in u.nodes:
                members.setdefault(n, []).append(u.id)
        cell_of: dict[tuple[UnitId, ...], int] = {}
        self.node_cell: dict[str, int] = {}
        for n, ids in sorted(members.items()):
            self.node_cell[n] = cell_of.setdefault(tuple(sorted(ids)), len(cell_of))
        cells: dict[int, tuple[int, ...]] = {}
        units_of: list[list[int]] = [[] for _ in cell_of]
        for u in units:
            number = self.number[u.id]
            cells[number] = tuple(sorted({self.node_cell[n] for n in u.nodes}))
            for cell in cells[number]:
                units_of[cell].append(number)
        self.cells: tuple[tuple[int, ...], ...] = tuple(cells[i] for i in range(len(self.ids)))
        """unit number -> its cells"""
        self.units_of: tuple[tuple[int, ...], ...] = tuple(tuple(us) for us in units_of)
        """cell -> the units that take it"""
        self._masks: dict[frozenset[UnitId], int] = {}

    def mask(self, units: frozenset[UnitId]) -> int:
        """The bitmask of these units (ids the layout does not know are left out). Computed once
        per distinct set: JobSets of one shape share their eligible set."""
        found = self._masks.get(units)
        if found is None:
            found = 0
            for uid in units:
                number = self.number.get(uid)
                if number is not None:
                    found |= 1 << number
            self._masks[units] = found
        return found


class Calendar:
    """Busy intervals per cell, kept sorted by start; what the pass has promised so far.

    A unit is free over [t, end) when, in each of its cells, the last interval starting before
    `end` ends by `t` (a cell's intervals never overlap: a hold is merged with those it
    overlaps, `_insert_merged`, so that is "no interval overlaps").
    """

    def __init__(self, layout: UnitLayout, free_at: Mapping[str, float]) -> None:
        self.layout = layout
        cell_free = [0.0] * len(layout.units_of)
        for n, f in free_at.items():
            cell = layout.node_cell.get(n)
            if cell is not None:
                cell_free[cell] = max(cell_free[cell], f)
        self._busy: list[list[tuple[float, float]]] = [
            [(0.0, f)] if f > 0 else [] for f in cell_free
        ]
        self._ends = sorted({0.0} | {f for f in cell_free if f > 0 and math.isfinite(f)})
        self._end_set = set(self._ends)
        self._later = 0
        """Units with a busy interval starting after 0 (a hold for the future): the only ones
        whose `next_busy_after` a positive instant can be finite; checked by group."""
        self._periods: dict[int, tuple[tuple[tuple[float, float], ...], ...]] = {}
        """unit in `_later` -> its cells' busy intervals: what decides when it is free."""
        self._group: dict[tuple[tuple[tuple[float, float], ...], ...], int] = {}
        """busy intervals -> the number of their group (kept when it empties)."""
        self._group_of: dict[int, int] = {}
        """unit in `_later` -> its group"""
        self._alike: dict[int, int] = {}
        """group -> mask of the units in `_later` busy over the same intervals."""
        self._touched = 0
        """Units with any busy interval."""
        self._ever: int | None = None
        """`ever_free`'s answer, until a hold."""
        self._holds = 0
        """Holds so far: `free_masks` answers for the calendar it started on."""
        self._settled: list[float] = []
        """unit -> when it is free for good, for a unit not in `_later` (all its intervals start
        by 0): the end of the last interval of each cell (-inf: none)."""
        self._reach: dict[int, tuple[float, float]] = {}
        """group of `_later` -> (when its units are free for good, the longest stretch they
        are free before that from 0 on): `free_masks` checks a unit one by one only when a run
        fits such a stretch."""
        self._free_from: dict[float, int] = {}
        """instant -> mask of the units free for good from then: a unit not in `_later` from
        its settled end, one in `_later` from the end of its last busy interval."""
        self._free_keys: list[float] = []
        """`_free_from`'s instants, sorted."""
        self._prefix: tuple[list[float], list[int], list[int]] | None = None
        """`_free_keys`, their masks, and the running union of those, until the next change."""
        for number in range(len(layout.ids)):
            settled = self._settled_end(number)
            self._settled.append(settled)
            self._mark_free_from(settled, 1 << number)
            if settled > -math.inf:
                self._touched |= 1 << number

    def _settled_end(self, unit: int) -> float:
        ends = [self._busy[c][-1][1] for c in self.layout.cells[unit] if self._busy[c]]
        return max(ends, default=-math.inf)

    def _leave_open(self, unit: int) -> None:
        """A unit not in `_later` is no longer free for good from its settled end."""
        self._unmark_free_from(self._settled[unit], 1 << unit)

    def _mark_free_from(self, instant: float, bit: int) -> None:
        found = self._free_from.get(instant)
        if found is None:
            bisect.insort(self._free_keys, instant)
            self._free_from[instant] = bit
        else:
            self._free_from[instant] = found | bit
        self._prefix = None

    def _unmark_free_from(self, instant: float, bit: int) -> None:
        rest = self._free_from[instant] & ~bit
        if rest:
            self._free_from[instant] = rest
        else:
            del self._free_from[instant]
            del self._free_keys[bisect.bisect_left(self._free_keys, instant)]
        self._prefix = None

    def _regroup(self, unit: int) -> None:
        """Move a unit of `_later` to the group of its busy intervals after a hold."""
        periods = tuple(tuple(self._busy[c]) for c in self.layout.cells[unit])
        before = self._periods.get(unit)
        if before == periods:
            return
        bit = 1 << unit
        if before is not None:
            old = self._group_of[unit]
            self._unmark_free_from(self._reach[old][0], bit)
            rest = self._alike[old] & ~bit
            if rest:
                self._alike[old] = rest
            else:  # an empty group is dropped: `free_masks` reads every group
                del self._alike[old]
        self._periods[unit] = periods
        group = self._group.setdefault(periods, len(self._group))
        if group not in self._reach:
            self._reach[group] = _reach(periods)
        self._group_of[unit] = group
        self._alike[group] = self._alike.get(group, 0) | bit
        self._mark_free_from(self._reach[group][0], bit)

    def is_free(self, unit: int, start: float, end: float) -> bool:
        for cell in self.layout.cells[unit]:
            intervals = self._busy[cell]
            i = bisect.bisect_left(intervals, (end, -math.inf))
            # intervals do not overlap: only the last one starting before `end` can reach `start`
            if i > 0 and intervals[i - 1][1] > start:
                return False
        return True

    def free_mask(self, start: float, end: float, within: int) -> int:
        """The units of `within` (a mask) free over [start, end), as a mask: those free for
        good by `start` (`_free_from`), and those of `_later` free for as long as the run
        before then that are free over it, one checked per group of units busy alike (the
        schedule's materialization asks it for every JobSet it places: with each unit of
        `_later` checked, 3.8 s of a profiled cycle where running JobSets end apart,
        benchmarks/RESULTS-controller.md, round 53)."""
        if end <= 0:  # an empty run: decided unit by unit (no interval starts before it)
            found = 0
            for unit in _bits(within):
                if self.is_free(unit, start, end):
                    found |= 1 << unit
            return found
        keys, _, union = self._free_union()
        k = bisect.bisect_right(keys, start)
        found = union[k - 1] & within if k else 0
        duration = end - start
        for group, mask in self._alike.items():
            mask &= within
            if not mask or mask & found:
                continue  # none asked, or free for good by `start` (so all of them)
            longest = self._reach[group][1]
            unit = (mask & -mask).bit_length() - 1
            if longest >= duration and self.is_free(unit, start, end):
                found |= mask
        return found

    def free_masks(
        self,
        times: Sequence[float],
        duration: float,
        within: int,
        least: Sequence[tuple[int, int]] = (),
    ) -> Iterator[tuple[int, int]]:
        """(index, `free_mask(t, t + duration, within)`) for `times` (ascending) in turn, with
        no hold in between: from the first index where, for every (mask, count) of `least`,
        `count` units of `mask` may be free (none before it has them: a JobSet's needs), and
        then only where the mask may change (at the others it is the one last given).

        Why: a JobSet is asked at every instant something frees up until its units fit, and
        where running JobSets end apart there are as many instants as JobSets. Asking
        `free_mask` at each was 5 million questions in one cycle at 10,000 nodes; reading each
        unit's intervals once per JobSet was still half of that cycle (about 1,250 instants
        at which units are free for good and 700 units held later, each JobSet;
        benchmarks/RESULTS-controller.md, rounds 52-53). Here a unit is free over the run
        from the instant it is free for good on (`_free_from`, whose running union is kept
        between holds), unless it is free for as long as the run before then: only those few
        are read interval by interval (a busy interval `[s, e)` keeps one from the starts in
        `(s - duration, e)`, found by bisection). The first index is then found by bisection
        too: the units that may be free only grow with time."""
        holds = self._holds
        if not times:
            return
        first = 0
        if times[0] + duration <= 0:  # an empty run at 0: `free_mask`'s own rule
            yield 0, self.free_mask(times[0], times[0] + duration, within)
            first = 1
        # units of `_later` free for the whole run in a stretch before they are free for good
        gappy = 0
        for group, mask in self._alike.items():
            if mask & within and self._reach[group][1] >= duration:
                gappy |= mask
        gappy &= within
        solid = within & ~gappy
        keys, masks, union = self._free_union()

        def settled(t: float) -> int:
            k = bisect.bisect_right(keys, t)
            return union[k - 1] & solid if k else 0

        lo, hi = first, len(times)
        while lo < hi and least:
            mid = (lo + hi) // 2
            may = settled(times[mid]) | gappy
            if all((may & mask).bit_count() >= count for mask, count in least):
                hi = mid
            else:
                lo = mid + 1
        first = lo
        if first >= len(times):
            return
        flips: dict[int, int] = {}  # index -> units of `gappy` turned off or back on there
        rest = gappy
        while rest:
            unit = (rest & -rest).bit_length() - 1
            group = self._alike[self._group_of[unit]] & rest
            rest &= ~group
            spans = (
                (lo, hi)
                for cell in self.layout.cells[unit]
                for s, e in self._busy[cell]
                if (lo := bisect.bisect_right(times, s - duration))
                < (hi := bisect.bisect_left(times, e))
            )
            for lo, hi in merged_spans(spans):
                for i in (lo, hi):
                    flips[i] = flips.get(i, 0) ^ group
        free_gappy = gappy
        for i, flipped in flips.items():
            if i <= first:
                free_gappy ^= flipped
        ahead = sorted(i for i in flips if first < i < len(times))
        k = bisect.bisect_right(keys, times[first])  # the next instant units are free for good
        i, j = first, 0
        while True:
            if self._holds != holds:
                raise RuntimeError("the calendar was held while its free masks were read")
            yield i, settled(times[i]) | free_gappy
            while k < len(keys) and not masks[k] & solid:
                k += 1
            following = bisect.bisect_left(times, keys[k]) if k < len(keys) else len(times)
            if j < len(ahead):
                following = min(following, ahead[j])
            if following >= len(times):
                return
            i = following
            while j < len(ahead) and ahead[j] <= i:
                free_gappy ^= flips[ahead[j]]
                j += 1
            while k < len(keys) and keys[k] <= times[i]:
                k += 1

    def _free_union(self) -> tuple[list[float], list[int], list[int]]:
        """`_free_keys`, the mask of each, and the running union of those masks: the units free
        for good by each instant. Built again after a hold that changed one."""
        if self._prefix is None:
            keys = list(self._free_keys)
            masks = [self._free_from[k] for k in keys]
            self._prefix = (keys, masks, list(itertools.accumulate(masks, operator.or_)))
        return self._prefix

    def never_free(self, unit: int) -> bool:
        return any(
            intervals and math.isinf(intervals[-1][1])
            for intervals in (self._busy[c] for c in self.layout.cells[unit])
        )

    def ever_free(self) -> int:
        """The mask of the units that are free at some instant; kept until the next `hold`
        (every waiting JobSet asks the empty calendar whether it fits some day: 2,500 units
        checked for each of 500 JobSets was more than half of the reservation phase,
        benchmarks/RESULTS-controller.md, round 39)."""
        if self._ever is None:
            found = 0
            for unit in range(len(self.layout.ids)):
                if not self.never_free(unit):
                    found |= 1 << unit
            self._ever = found
        return self._ever

    def next_busy_after(self, unit: int, t: float) -> float:
        """Start of the first busy interval at or after t in any of its cells (inf when none)."""
        found = math.inf
        for cell in self.layout.cells[unit]:
            intervals = self._busy[cell]
            i = bisect.bisect_left(intervals, (t, -math.inf))
            if i < len(intervals):
                found = min(found, intervals[i][0])
        return found

    def hold(self, unit: int, start: float, end: float) -> None:
        self._ever = None
        self._holds += 1
        later: set[int] = set()  # units of `_later` whose busy intervals this hold changes
        for cell in self.layout.cells[unit]:
            _insert_merged(self._busy[cell], start, end)
            for other in self.layout.units_of[cell]:
                bit = 1 << other
                self._touched |= bit
                if self._later & bit:
                    later.add(other)
                    continue
                if start > 0:
                    self._leave_open(other)
                    self._later |= bit
                    later.add(other)
                    continue
                settled = self._settled_end(other)
                if settled != self._settled[other]:
                    self._leave_open(other)
                    self._settled[other] = settled
                    self._mark_free_from(settled, bit)
        for other in later:
            self._regroup(other)
        if math.isfinite(end) and end not in self._end_set:
            self._end_set.add(end)
            bisect.insort(self._ends, end)

    def event_times(self) -> list[float]:
        """Every instant a unit may become free: 0 and the end of every busy interval."""
        return list(self._ends)

    def by_preference(self, pool: int, end: float, count: int | None = None) -> list[int]:
        """The units of `pool` (a mask) sorted by (`next_busy_after(unit, end)`, unit): the one
        whose next busy period starts soonest after `end` first; only the first `count`.

        Only units with an interval starting at or after `end` can have a finite key: for
        `end` > 0 those are the units in `_later` (few, most of the time); the others follow
        by number, which is id order, lowest bit first.
        """
        maybe = pool & (self._later if end > 0 else self._touched)
        keyed = ((self.next_busy_after(u, end), u) for u in _bits(maybe))
        head = [u for _, u in sorted(k for k in keyed if k[0] < math.inf)]
        if count is not None and len(head) >= count:
            return head[:count]
        rest = pool
        for u in head:
            rest &= ~(1 << u)
        return head + _bits(rest, None if count is None else count - len(head))
