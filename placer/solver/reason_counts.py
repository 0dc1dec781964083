"""A plan's part of the reasons: which domains hold planned pods, and whose, kept up to date.

What a plan adds to the fixed counts of reason_facts.py touches few domains: those holding its
pods. `PlanState` keeps them, and per shape the counts under the plan as a JobSet with no pods in
the plan and holding nothing sees them (`ExclusiveCounts`, `SharedCounts`); a JobSet's own view
differs only on the domains it holds or has pods in, which reasons.py corrects. `update` follows
a plan that grows by the domains it adds, as a greedy plan does between two JobSets it explains.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from placer.model.topology import DomainPath
from placer.model.workload import PodShape
from placer.solver.context import JobClass, PlacementContext
from placer.solver.reason_facts import (
    RESERVED,
    TAKEN_HIGHER,
    Baseline,
    Bucket,
    DomainKey,
    KeyIndex,
    SharedBaseline,
    owner_list,
    size_key,
)

__all__ = ["ExclusiveCounts", "PlanState", "SharedCounts"]

_NOBODY: frozenset[str] = frozenset()


@dataclass
class ExclusiveCounts:
    """A baseline under one plan, as seen by a JobSet with no planned pods that holds nothing."""

    base: Baseline
    counts: Counter[Bucket | None]
    takers: Counter[str] = field(default_factory=Counter)
    """JobSet -> taken open domains with pods of it: who "taken by higher-priority" names."""
    enclosing: dict[str, Counter[DomainPath | None]] = field(default_factory=dict)
    """level -> available domains per domain of the level around them (levels asked for)."""
    _takers_text: str | None = None

    def listing(self) -> list[str]:
        """The buckets as `listing` words them: the fixed ones, then the domains the plan took."""
        taken = self.counts[TAKEN_HIGHER]
        if not taken:
            return self.base.fixed_listing
        if self._takers_text is None:
            self._takers_text = owner_list([o for o, n in self.takers.items() if n > 0])
        return [*self.base.fixed_listing, f"{taken} {TAKEN_HIGHER[1]} ({self._takers_text})"]

    def move(self, i: int, before: frozenset[str], after: frozenset[str]) -> None:
        """Domain `i`'s planned owners changed from `before` to `after`."""
        if self.base.fixed[i] is None:
            self._count(i, before, -1)
            self._count(i, after, +1)

    def _count(self, i: int, planned: frozenset[str], sign: int) -> None:
        if planned:
            self.counts[TAKEN_HIGHER] += sign
            for o in planned:
                self.takers[o] += sign
            self._takers_text = None
        else:
            self.counts[None] += sign
            for level, per in self.enclosing.items():
                per[self.base.index.enclosing(level)[i]] += sign

    def add_level(self, level: str, planned: Mapping[int, frozenset[str]]) -> None:
        """Start counting available domains per domain of `level`, under the plan's `planned`."""
        enclosing = self.base.index.enclosing(level)
        per = Counter(
            enclosing[i] for i, b in enumerate(self.base.fixed) if b is None and i not in planned
        )
        self.enclosing[level] = per


@dataclass
class SharedCounts:
    """A shared baseline under one plan: nodes reserved for exclusive child Jobs are closed."""

    base: SharedBaseline
    counts: Counter[Bucket]
    fits: int
    with_room: int
    reserved_by: Counter[str] = field(default_factory=Counter)
    """JobSet -> eligible nodes reserved for its exclusive child Jobs."""
    enclosing: dict[str, Counter[DomainPath | None]] = field(default_factory=dict)
    """level -> pods that fit on unreserved nodes per domain of the level (levels asked for)."""

    def move(self, node: str, before: str | None, after: str | None) -> None:
        """`node`'s reserving JobSet changed from `before` to `after` (None: not reserved)."""
        if self.base.facts[node].exclusion or before == after:
            return
        if before is None:
            self._room(node, -1)
            self.counts[RESERVED] += 1
        else:
            self.reserved_by[before] -= 1
        if after is None:
            self._room(node, +1)
            self.counts[RESERVED] -= 1
        else:
            self.reserved_by[after] += 1

    def _room(self, node: str, sign: int) -> None:
        raw = self.base.facts[node].raw
        if raw == 0:
            self.counts[self.base.no_room(node)] += sign
            return
        self.fits += sign * raw
        self.with_room += sign
        for level, per in self.enclosing.items():
            per[self.base.enclosing(level)[node]] += sign * raw

    def add_level(self, level: str, reserved: Collection[str]) -> None:
        """Start counting room per domain of `level`, with the plan's `reserved` nodes closed."""
        enclosing = self.base.enclosing(level)
        per: Counter[DomainPath | None] = Counter()
        for n in self.base.names:
            fact = self.base.facts[n]
            if not fact.exclusion and fact.raw and n not in reserved:
                per[enclosing[n]] += fact.raw
        self.enclosing[level] = per


# -- one plan -----------------------------------------------------------------------------------


class PlanState:
    """Who has planned pods where, in one plan, and the shapes' counts under it.

    `update` moves it to another plan: incrementally when the plan only grew (what the greedy
    solvers do between two JobSets they explain), from scratch otherwise.
    """

    def __init__(self, ctx: PlacementContext) -> None:
        self.ctx = ctx
        self._clear()

    def _clear(self) -> None:
        self._taken: dict[DomainKey, str] = {}
        self._shared_given: dict[str, tuple[str, ...]] = {}
        self.reserved: dict[str, str] = {}
        """node -> the JobSet whose exclusive child Job took a domain holding it."""
        self.shared: dict[str, frozenset[str]] = {}
        """node -> JobSets with planned non-exclusive pods there."""
        self._planned: dict[str, dict[int, frozenset[str]]] = {}
        """key -> domain index -> JobSets with planned pods in it (domains with none left out);
        only for the keys asked about so far."""
        self._planned_in: dict[str, dict[str, set[int]]] = {}
        """key -> JobSet -> domains of the key with planned pods of it."""
        self._exclusive: dict[str, dict[tuple[str, int, str | None], ExclusiveCounts]] = {}
        """key -> counts per (shape, pods per child Job, key) asked about so far."""
        self._shared_counts: dict[str, SharedCounts] = {}
        """pod shape signature -> its counts, for the shapes asked about so far."""

    # -- moving to a plan --

    def update(self, taken: Mapping[DomainKey, str], shared: Mapping[str, Collection[str]]) -> None:
        """Make this the state of the plan with these taken domains and shared pods."""
        if taken == self._taken and shared == self._shared_given:
            return
        if not self._taken.items() <= taken.items():
            self._clear()
        before: dict[str, str | None] = {}
        for dk in taken.keys() - self._taken.keys():
            self._reserve(dk, taken[dk], before)
        self._taken = dict(taken)
        touched = set(before)
        if shared != self._shared_given:
            touched.update(self._share(shared))
            self._shared_given = {n: tuple(owners) for n, owners in shared.items()}
        for n, was in before.items():
            for counts in self._shared_counts.values():
                counts.move(n, was, self.reserved.get(n))
        for key in self._planned:
            index = KeyIndex.of(self.ctx, key)
            for i in {index.of_node[n] for n in touched if n in index.of_node}:
                self._replan(key, i)

    def _reserve(self, dk: DomainKey, owner: str, before: dict[str, str | None]) -> None:
        """Reserve the domain's nodes for `owner`; on overlap the first JobSet by name keeps a node
        (taken domains never overlap in a valid plan; the rule only keeps the text stable)."""
        key, path = dk
        index = KeyIndex.of(self.ctx, key)
        i = index.by_path.get(tuple(path))
        if i is None:
            return
        for n in index.domains[i].nodes:
            current = self.reserved.get(n)
            if current is None or owner < current:
                before.setdefault(n, current)
                self.reserved[n] = owner

    def _share(self, shared: Mapping[str, Collection[str]]) -> list[str]:
        """Take the shared pods' owners; returns the nodes whose owners changed."""
        changed = []
        for n, owners in shared.items():
            now = frozenset(owners)
            if self.shared.get(n, _NOBODY) != now:
                changed.append(n)
                if now:
                    self.shared[n] = now
                else:
                    self.shared.pop(n, None)
        for n in self.shared.keys() - shared.keys():
            changed.append(n)
            del self.shared[n]
        return changed

    def _replan(self, key: str, i: int) -> None:
        """Recount who has planned pods in domain `i` of `key`, and move the counts along."""
        nodes = KeyIndex.of(self.ctx, key).domains[i].nodes
        after = frozenset(o for n in nodes for o in self.owners(n))
        planned = self._planned[key]
        before = planned.get(i, _NOBODY)
        if after == before:
            return
        if after:
            planned[i] = after
        else:
            del planned[i]
        planned_in = self._planned_in[key]
        for o in before - after:
            planned_in[o].discard(i)
        for o in after - before:
            planned_in.setdefault(o, set()).add(i)
        for counts in self._exclusive.get(key, {}).values():
            counts.move(i, before, after)

    # -- queries --

    def owners(self, node: str) -> frozenset[str]:
        found = self.shared.get(node, _NOBODY)
        reserved = self.reserved.get(node)
        return found | {reserved} if reserved is not None else found

    def planned(self, key: str, i: int) -> frozenset[str]:
        """JobSets with planned pods in domain `i` of `key`."""
        return self._planned_of(key).get(i, _NOBODY)

    def touching(self, key: str, jobset: str) -> set[int]:
        """Domains of `key` where `jobset` runs or has planned pods: where its view differs."""
        self._planned_of(key)
        held = KeyIndex.of(self.ctx, key).held_in.get(jobset, ())
        return set(held) | self._planned_in[key].get(jobset, set())

    def exclusive_counts(self, jc: JobClass, level: str | None = None) -> ExclusiveCounts:
        """The counts of `jc`'s shape, size and key under this plan (per domain of `level` too)."""
        key = jc.exclusive_key
        assert key is not None
        per_key = self._exclusive.setdefault(key, {})
        found = per_key.get(size_key(jc))
        if found is None:
            planned = self._planned_of(key)
            base = Baseline.of(self.ctx, jc)
            found = per_key[size_key(jc)] = ExclusiveCounts(base, Counter(base.counts))
            for i, owners in planned.items():
                found.move(i, _NOBODY, owners)
        if level is not None and level not in found.enclosing:
            found.add_level(level, self._planned_of(key))
        return found

    def shared_counts(self, pod: PodShape, level: str | None = None) -> SharedCounts:
        """The counts of a non-exclusive pod shape under this plan (per domain of `level` too)."""
        signature = pod.signature()
        found = self._shared_counts.get(signature)
        if found is None:
            base = SharedBaseline.of(self.ctx, pod)
            found = SharedCounts(base, Counter(base.counts), base.fits, base.with_room)
            for n, owner in self.reserved.items():
                found.move(n, None, owner)
            self._shared_counts[signature] = found
        if level is not None and level not in found.enclosing:
            found.add_level(level, self.reserved)
        return found

    def _planned_of(self, key: str) -> dict[int, frozenset[str]]:
        """Planned owners per domain of `key`, indexed on first use from the nodes with owners."""
        found = self._planned.get(key)
        if found is None:
            found = self._planned[key] = {}
            self._planned_in[key] = {}
            index = KeyIndex.of(self.ctx, key)
            owned = set(self.reserved) | set(self.shared)
            for i in sorted({index.of_node[n] for n in owned if n in index.of_node}):
                self._replan(key, i)
        return found
