"""Every node's room over time, for pods without an exclusive key: the data layout behind
`shared.starts` (when a waiting JobSet of such pods can start) and `shared.room` (whether one
starts now, in the reservation pass's queue order).

A node's room is its free resources once every JobSet ends (`Units.ctx`), less the uses
overlapping a window `[t, t + duration)`: a running JobSet until its expected end (its whole
node when its usage was not recorded), a NotReady or cordoned host until it is expected back
(`UNHEALTHY_BACK_S`), and whatever the caller adds: pods of JobSets planned or queued ahead
(their requests), domains held by exclusive child Jobs or reservations, and nodes reserved for
the pods without an exclusive key of a JobSet with both kinds (whole nodes).

Why the sums are counted per kind of node, not per node: at 10,000 nodes a count per node and
per time took 0.13 s per waiting JobSet (12 s for 100). Nodes with the same free resources and
the same uses (the hosts of one running JobSet, say) have the same room at every time, so the
sweep counts each kind once, recounting it only at the times its room can change (a use ends,
or begins to overlap the window), and the room of a kind is computed once per set of uses
overlapping the window (`NodeTimeline._room`).
"""

from __future__ import annotations

import bisect
import heapq
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal

from placer.model.cluster import DomainReservation
from placer.model.plan import JobSetOutcome
from placer.model.resources import (
    ResourceMap,
    add_resources,
    left_after,
    pods_that_fit,
    pods_usage,
)
from placer.model.workload import JobSetRequest, PodShape
from placer.solver.context import JobClass, PlacementContext
from placer.solver.time.units import UNHEALTHY_BACK_S, Units

__all__ = ["NodeTimeline"]


Requests = tuple[tuple[str, Decimal], ...]
"""A resource map as a hashable key."""
Ports = tuple[tuple[int, str], ...]


@dataclass(frozen=True)
class _Use:
    """Something holding a node over `[start, end)`: `requests` of it, or all of it (None)."""

    owner: str
    start: float
    end: float
    requests: Requests | None
    ports: Ports = ()


@dataclass(frozen=True)
class _Window:
    """Where a JobSet is packed: `owner`'s pods over `[start, end)`, hosts of `late` back only
    from their time (`NodeTimeline.place`)."""

    owner: str
    start: float
    end: float
    late: Mapping[str, float]


_Base = tuple[Requests, Ports]
"""A node once every JobSet ended: its free resources and the host ports bound outside them."""
_Kind = tuple[int, float]
"""Nodes of one kind have the same room at every time: the number of their base and uses
(`NodeTimeline.kinds`), and when the host is back (0: it is)."""
_Taken = tuple[Requests, Ports]
"""What the JobSet being packed already put on a node: its requests and host ports."""


class NodeTimeline:
    """Every node's uses over time, and the earliest window a JobSet's pods fit."""

    def __init__(
        self,
        units: Units,
        durations: Mapping[str, float],
        placed: Iterable[JobSetOutcome],
        held: Iterable[DomainReservation],
        rank: Mapping[str, int] | None = None,
    ) -> None:
        self.units = units
        self.rank = rank or {}
        """Nodes inside exclusive domains are packed lowest first (missing: 0), as the ledger
        packs them by `PlacementContext.shared_pod_rank`; none given: by name only."""
        self.base: dict[str, _Base] = {
            name: (_key(n.free), tuple(sorted(n.used_host_ports)))
            for name, n in units.ctx.nodes.items()
        }
        self.uses: dict[str, tuple[_Use, ...]] = {}
        self.kinds: list[tuple[_Base, tuple[_Use, ...]]] = []
        """Each distinct (base, uses) of some node, numbered (hashing them once, not per node)."""
        self._kind_number: dict[tuple[_Base, tuple[_Use, ...]], int] = {}
        self._ending: dict[float, set[int]] = {}
        """instant -> the kinds with a use ending then"""
        self._ends: list[float] = []
        """`_ending`'s instants, sorted"""
        self._starting: dict[int, list[float]] = {}
        """kind -> the starts of its uses starting later than 0 (reservations, later runs)"""
        self._owned: dict[str, set[int]] = {}
        """queued JobSet -> the kinds with a use of it (their room depends on who asks)"""
        self._neutral: dict[tuple[int, float, float], dict[int, int]] = {}
        """(shape, window) -> kind -> its room for a JobSet with no use on it"""
        self._kind_of: dict[str, int] = {}
        self._changed: list[str] = []
        """Nodes given a use, in order (`_count` catches up from where it last looked)."""
        self._counts: dict[int, tuple[Counter[_Kind], dict[str, _Kind], int]] = {}
        self._places: dict[int, tuple[dict[_Kind, list[int]], dict[str, int]]] = {}
        """Per list counted by `_count` (by identity): where each kind's nodes are in it, in
        order, and each node's place."""
        self._rooms: dict[tuple[object, ...], int] = {}
        self._kind_rooms: dict[tuple[int, int, int, _Taken], int] = {}
        self._shape_numbers: dict[int, int] = {}
        """id of a pod shape -> its number (the queue's pod shapes live as long as this)."""
        self._shape_of: dict[tuple[Requests, Ports], int] = {}
        """a pod shape's requests and host ports -> its number"""
        self._shapes: dict[int, tuple[Requests, Ports]] = {}
        """shape number -> its requests and host ports as a key"""
        self._eligible_nodes: dict[tuple[int, int], list[str]] = {}
        self._eligible_sets: dict[int, frozenset[str]] = {}
        """Per list of `_eligible_nodes` (by identity): its nodes, for membership."""
        self._queued = frozenset(js.key for js in units.ctx.jobsets)
        timeline = units.timeline
        for node in units.live.values():
            if not node.usable:
                self._add(node.name, _Use("", 0.0, UNHEALTHY_BACK_S, None))
            for key in node.jobsets:
                usage = node.jobset_usage.get(key)
                end = timeline.ends_s[key]
                if usage is None:
                    self._add(node.name, _Use(key, 0.0, end, None))
                else:
                    use = _Use(key, 0.0, end, _key(usage.requests), usage.host_ports)
                    self._add(node.name, use)
        requests = {js.key: js for js in units.ctx.jobsets}
        for o in placed:
            end = durations.get(o.key, 0.0)
            shapes = _pod_shapes(requests.get(o.key))
            for j in o.jobs:
                if j.domain is not None:
                    pods = {p.node for p in j.pods}
                    for n in self._domain_nodes(j.domain.key, j.domain.path) or pods:
                        self._add(n, _Use(o.key, 0.0, end, None))
                    continue
                pod = shapes.get(j.replicated_job)
                for n, k in Counter(p.node for p in j.pods).items():
                    if pod is not None:
                        used = _key(pods_usage(pod.requests, k))
                        self._add(n, _Use(o.key, 0.0, end, used, pod.host_ports))
        for r in held:
            self.hold(r.jobset, units.nodes_of(r), r.start_s, r.end_s)

    def _add(self, node: str, use: _Use) -> None:
        if node in self.base:
            self.uses[node] = (*self.uses.get(node, ()), use)
            self._kind_of.pop(node, None)
            self._changed.append(node)

    def _count(self, nodes: list[str], late: Mapping[str, float]) -> Counter[_Kind]:
        """How many of `nodes` are of each kind. Kept per list of eligible nodes (one per pod
        shape) when no host is late, and brought up to date from the nodes changed since (a
        JobSet packed before): counting 10,000 nodes for every waiting JobSet took a fifth of
        the pass. Kept with it: where in the list each kind's nodes are (`_fill`)."""
        if late:
            return Counter(self._kind(n, late) for n in nodes)
        kept = self._counts.get(id(nodes))
        if kept is None:
            kinds = {n: self._kind(n, late) for n in nodes}
            where: dict[_Kind, list[int]] = {}
            for i, n in enumerate(nodes):
                where.setdefault(kinds[n], []).append(i)
            self._places[id(nodes)] = (where, {n: i for i, n in enumerate(nodes)})
            kept = self._counts[id(nodes)] = (Counter(kinds.values()), kinds, len(self._changed))
        counted, kinds, seen = kept
        where, place = self._places[id(nodes)]
        for n in self._changed[seen:]:
            old = kinds.get(n)
            if old is not None:
                new = kinds[n] = self._kind(n, late)
                if new == old:
                    continue
                counted[old] -= 1
                counted[new] += 1
                if not counted[old]:
                    del counted[old]
                i, olds = place[n], where[old]
                del olds[bisect.bisect_left(olds, i)]
                if not olds:
                    del where[old]
                bisect.insort(where.setdefault(new, []), i)
        self._counts[id(nodes)] = (counted, kinds, len(self._changed))
        return counted

    def _kind(self, node: str, late: Mapping[str, float]) -> _Kind:
        number = self._kind_of.get(node)
        if number is None:
            kind = (self.base[node], self._anonymous(self.uses.get(node, ())))
            number = self._kind_number.get(kind)
            if number is None:
                number = self._kind_number[kind] = len(self.kinds)
                self.kinds.append(kind)
                self._index_kind(number, kind[1])
            self._kind_of[node] = number
        return (number, late.get(node, 0.0)) if late else (number, 0.0)

    def _index_kind(self, number: int, uses: tuple[_Use, ...]) -> None:
        """A new kind in the indexes `_Sweep` reads instead of every kind's uses: the instants
        its uses end, those starting later, and the queued JobSets whose uses it has."""
        for use in uses:
            ending = self._ending.get(use.end)
            if ending is None:
                ending = self._ending[use.end] = set()
                bisect.insort(self._ends, use.end)
            ending.add(number)
            if use.start > 0:
                self._starting.setdefault(number, []).append(use.start)
            if use.owner:
                self._owned.setdefault(use.owner, set()).add(number)

    def _anonymous(self, uses: tuple[_Use, ...]) -> tuple[_Use, ...]:
        """`uses` with the owners that are not queued left unnamed: a node's room for a JobSet
        depends on a use's owner only when that is the JobSet itself (`_room`), so the hosts of
        running JobSets that end alike are one kind, however many JobSets hold them."""
        queued = self._queued
        return tuple(
            u if u.owner in queued else _Use("", u.start, u.end, u.requests, u.ports) for u in uses
        )

    def _domain_nodes(self, key: str, path: Sequence[tuple[str, str]]) -> frozenset[str]:
        """The nodes of a domain named in a plan (none when the units do not know it)."""
        unit = self.units.unit_of(key, path)
        return frozenset(self.units.domains[unit].nodes) if unit is not None else frozenset()

    # -- the earliest window --

    def place(
        self,
        js: JobSetRequest,
        ctx: PlacementContext,
        duration: float,
        *,
        back: bool = False,
        not_before: float = 0.0,
        domains: frozenset[str] = frozenset(),
        domains_free: bool = True,
    ) -> tuple[float, frozenset[str]] | None:
        """The earliest start from `not_before` on with `js`'s pods without an exclusive key
        fitting over its whole expected run, judged on `ctx`'s nodes (`back`: hosts with
        condition taints only from `UNHEALTHY_BACK_S`), and the nodes its pods are packed on,
        where they are then held for the JobSets after it; None when no time fits. Its child
        Jobs with an exclusive key are the reservation pass's: `domains`, the nodes of the
        domains it gave them, take none of these pods and must be free of every other use over
        the same run (unless not `domains_free`: only the pods are judged), and are held whole
        for it from the start found (`shared.starts`)."""
        classes = [jc for jc in ctx.classes_of(js) if jc.exclusive_key is None]
        late = self._late_hosts(ctx) if back else {}
        eligible = {jc.index: self._eligible(ctx, jc) for jc in classes}
        kinds = {i: self._count(ns, late) for i, ns in eligible.items()}
        if domains:
            # its domains' nodes taken out of the shared list's counts (a copy: `_count` keeps
            # them), not all its nodes counted again: 10,000 nodes for each JobSet with both
            # kinds, a fifth of the controller's cycle (RESULTS-controller, round 51)
            for i, ns in eligible.items():
                members = self._eligible_sets[id(ns)]
                kinds[i] = counted = Counter(kinds[i])
                for n in domains:
                    if n in members:
                        kind = self._kind(n, late)
                        counted[kind] -= 1
                        if not counted[kind]:
                            del counted[kind]
        others = [
            u for n in domains if domains_free for u in self.uses.get(n, ()) if u.owner != js.key
        ]
        # every instant some kind's use ends (not only this JobSet's kinds: between two of
        # theirs nothing it is judged on changes, so an instant more changes no answer)
        times = self._ends[bisect.bisect_left(self._ends, not_before) :]
        for t in {not_before, *(u.end for u in others), *late.values()}:
            at = bisect.bisect_left(times, t)
            if t >= not_before and (at == len(times) or times[at] != t):
                times.insert(at, t)
        sweeps = [
            _Sweep(self, jc.rjob.pod, kinds[jc.index], times, duration, js.key, bool(late))
            for jc in classes
        ]
        needs = [jc.rjob.replicas * jc.rjob.pods_per_job for jc in classes]
        for i, t in enumerate(times):
            # every sweep moves on to `i` (no short cut): each recounts only what changed
            totals = [sweep.total_at(i) for sweep in sweeps]
            if any(total < need for total, need in zip(totals, needs, strict=True)):
                continue
            if any(u.start < t + duration and u.end > t for u in others):
                continue
            window = _Window(js.key, t, t + duration, late)
            rooms = {jc.index: sweep.room for jc, sweep in zip(classes, sweeps, strict=True)}
            packed = self._pack(window, classes, eligible, domains, rooms)
            if packed is not None:
                for node, (used, ports) in packed.items():
                    self._add(node, _Use(js.key, t, t + duration, _key(used), ports))
                self.hold(js.key, domains, t, t + duration)
                return t, frozenset(packed)
        return None

    def hold(self, owner: str, nodes: Iterable[str], start: float, end: float) -> None:
        """`nodes` held whole over `[start, end)`: a domain an exclusive child Job takes, which
        no other pod enters (the ledger's rule), or one reserved for a later start."""
        for n in nodes:
            self._add(n, _Use(owner, start, max(end, start), None))

    def _late_hosts(self, ctx: PlacementContext) -> dict[str, float]:
        """Hosts with condition taints (judged untainted in `ctx`): back from `UNHEALTHY_BACK_S`."""
        kept = self.units.ctx.nodes
        untainted = {n for n, node in ctx.nodes.items() if node.taints != kept[n].taints}
        return dict.fromkeys(untainted, UNHEALTHY_BACK_S)

    def _eligible(self, ctx: PlacementContext, jc: JobClass) -> list[str]:
        """`jc`'s nodes in the ledger's order (`PlacementContext.shared_pod_order`, by `rank`);
        none a rule rules out for good. The same for every JobSet of one pod shape (the queue
        holds few shapes)."""
        shape = (id(ctx), ctx.shape_index.shape_numbers[jc.index])
        found = self._eligible_nodes.get(shape)
        if found is None:
            facts = ctx.class_facts(jc)
            nodes = [n for n in ctx.nodes if facts.exclusion(n) is None]
            found = self._eligible_nodes[shape] = ctx.shared_pod_order(nodes, self.rank)
            self._eligible_sets[id(found)] = frozenset(found)
        return found

    def _room(
        self,
        kind: _Kind,
        pod: PodShape,
        t: float,
        end: float,
        owner: str,
        taken: _Taken = ((), ()),
    ) -> int:
        """Pods of `pod`'s shape, of JobSet `owner`, fitting on a node of `kind` over `[t, end)`
        (less `taken` there: the requests and host ports of the JobSet being packed). `owner`'s
        own uses (a node reserved for its pods) do not keep it out.

        Kept per kind, uses overlapping the window (a bitmask of them), shape and `taken`:
        all small integers but `taken` (empty but for the JobSet being packed), so asking
        again is a few integer operations. Where running JobSets end apart, a place asked it
        about 4,000 times (benchmarks/RESULTS-controller.md, round 53)."""
        number, back = kind
        if back > t:
            return 0
        over, bit = 0, 1
        for use in self.kinds[number][1]:
            if use.start < end and use.end > t and use.owner != owner:
                if use.requests is None:
                    return 0
                over |= bit
            bit <<= 1
        shape = self._shape_number(pod)
        key = (number, over, shape, taken)
        room = self._kind_rooms.get(key)
        if room is None:
            room = self._kind_rooms[key] = self._room_over(number, over, shape, pod, taken)
        return room

    def _shape_number(self, pod: PodShape) -> int:
        """`pod`'s number, by what it asks: JobSets of one shape share their rooms."""
        shape = self._shape_numbers.get(id(pod))
        if shape is None:
            asks = (_key(pod.requests), pod.host_ports)
            shape = self._shape_of.setdefault(asks, len(self._shape_of))
            self._shape_numbers[id(pod)] = shape
            self._shapes[shape] = asks
        return shape

    def _room_over(self, number: int, over: int, shape: int, pod: PodShape, taken: _Taken) -> int:
        """`_room`'s answer for a kind whose uses in `over` (a bitmask) overlap the window;
        computed once per base, those uses' requests and ports, shape and `taken`."""
        base, uses = self.kinds[number]
        held = tuple((u.requests, u.ports) for i, u in enumerate(uses) if over >> i & 1)
        key = (base, held, self._shapes[shape], taken)
        room = self._rooms.get(key)
        if room is None:
            free = dict(base[0])
            ports = set(base[1])
            for requests, bound in held:
                free = left_after(free, dict(requests or ()))
                ports.update(bound)
            free = left_after(free, dict(taken[0]))
            ports.update(taken[1])
            room = pods_that_fit(free, pod.requests)
            if pod.host_ports:
                room = 0 if any(p in ports for p in pod.host_ports) else min(room, 1)
            self._rooms[key] = room
        return room

    def _pack(
        self,
        window: _Window,
        classes: Sequence[JobClass],
        eligible: Mapping[int, list[str]],
        off: frozenset[str],
        rooms: Mapping[int, Mapping[_Kind, int]],
    ) -> dict[str, tuple[ResourceMap, Ports]] | None:
        """Per node, the requests and host ports of every pod of `classes` packed first-fit over
        `window` on its `eligible` nodes but those in `off`, a class with a required topology
        inside one domain of that level; None if a pod is left. `rooms`: per class, the room of
        each kind of its nodes over the window (its `_Sweep`'s)."""
        taken: dict[str, tuple[ResourceMap, Ports]] = {}
        for jc in classes:
            need = jc.rjob.replicas * jc.rjob.pods_per_job
            nodes = eligible[jc.index]
            level = jc.rjob.required_topology
            counts: list[tuple[str, int]] | None = None
            if not level and not window.late:
                counts = self._fill_by_kind(
                    window, jc.rjob.pod, nodes, off, need, taken, rooms[jc.index]
                )
            else:
                if off:
                    nodes = [n for n in nodes if n not in off]
                groups = [nodes]
                if level:
                    # every child Job of the class in one domain of that level, as the ledger
                    # keeps it
                    groups = [
                        [n for n in nodes if n in d.nodes] for d in self.units.ctx.domains(level)
                    ]
                for group in groups:
                    counts = self._fill(window, jc.rjob.pod, group, need, taken)
                    if counts is not None:
                        break
            if counts is None:
                return None
            for n, k in counts:
                used, ports = taken.get(n, ({}, ()))
                used = add_resources(used, pods_usage(jc.rjob.pod.requests, k))
                taken[n] = (used, tuple(sorted({*ports, *jc.rjob.pod.host_ports})))
        return taken

    def _fill(
        self,
        window: _Window,
        pod: PodShape,
        nodes: Iterable[str],
        need: int,
        taken: Mapping[str, tuple[ResourceMap, Ports]],
    ) -> list[tuple[str, int]] | None:
        owner, t, end, late = window.owner, window.start, window.end, window.late
        counts: list[tuple[str, int]] = []
        rooms: dict[_Kind, int] = {}
        known = self._kind_of
        for n in nodes:
            if need <= 0:
                break
            number, mine = known.get(n), taken.get(n)
            kind = (number, 0.0) if number is not None and not late else self._kind(n, late)
            if mine:
                room = self._room(kind, pod, t, end, owner, (_key(mine[0]), mine[1]))
            elif (room := rooms.get(kind, -1)) < 0:
                room = rooms[kind] = self._room(kind, pod, t, end, owner)
            k = min(room, need)
            if k > 0:
                counts.append((n, k))
                need -= k
        return counts if need <= 0 else None

    def _fill_by_kind(
        self,
        window: _Window,
        pod: PodShape,
        nodes: list[str],
        off: frozenset[str],
        need: int,
        taken: Mapping[str, tuple[ResourceMap, Ports]],
        rooms: Mapping[_Kind, int],
    ) -> list[tuple[str, int]] | None:
        """`_fill` over `nodes` (a list `_count` keeps) but those in `off`, no host late: the
        same nodes in the same order, but only those of kinds with room (`rooms`), found where
        `_count` keeps them. A node the JobSet already put pods on has no more room than
        others of its kind, so none is missed.

        Why: at the first instant their pods fit in sum, little room is left, and first fit
        read most of 10,000 nodes to find it; a third of a place where running JobSets end
        apart (benchmarks/RESULTS-controller.md, round 53)."""
        where, _ = self._places[id(nodes)]
        kinds = self._counts[id(nodes)][1]
        rows = [where[kind] for kind, room in rooms.items() if room > 0 and kind in where]
        counts: list[tuple[str, int]] = []
        for i in heapq.merge(*rows):
            if need <= 0:
                break
            n = nodes[i]
            if n in off:
                continue
            mine = taken.get(n)
            if mine:
                kind = kinds[n]
                room = self._room(
                    kind, pod, window.start, window.end, window.owner, (_key(mine[0]), mine[1])
                )
            else:
                room = rooms[kinds[n]]
            k = min(room, need)
            if k > 0:
                counts.append((n, k))
                need -= k
        return counts if need <= 0 else None

    def waited_for(self, nodes: Iterable[str], t: float) -> tuple[str, ...]:
        """The running JobSets on `nodes` expected to end by `t`, the last to end first: whom
        it waits for, as `waits_for` means for every JobSet (`Units.waits_for`)."""
        running = self.units.timeline.ends_s
        ends = {
            use.owner: use.end
            for n in nodes
            for use in self.uses.get(n, ())
            if use.owner in running and 0 < use.end <= t
        }
        return tuple(sorted(ends, key=lambda k: (-ends[k], k)))


_NOBODY = "\x00nobody"
"""An owner no use has: the room of a kind for a JobSet with no use on it."""


class _Sweep:
    """Pods of one shape fitting, in sum, on the nodes counted in `kinds` over the window
    starting at each of `times` in turn: each kind is counted at the first instant and
    recounted only when one of its uses ends or first overlaps the window, or its host is back.
    The sum is necessary for a fit, and sufficient for a JobSet of one shape without host ports
    or a required topology.

    Why the timeline's indexes (`NodeTimeline._index_kind`) and not each kind's uses: where
    running JobSets end apart, each one's hosts are a kind of their own, and reading 2,500
    kinds' uses at every place, and asking each its room at the first instant, was most of a
    place (benchmarks/RESULTS-controller.md, round 53). The room at the first instant of a kind
    with no use of the JobSet asking is kept per shape and window (`NodeTimeline._neutral`)."""

    def __init__(
        self,
        nodes: NodeTimeline,
        pod: PodShape,
        kinds: Mapping[_Kind, int],
        times: Sequence[float],
        duration: float,
        owner: str,
        late: bool,
    ) -> None:
        self.nodes, self.pod, self.kinds, self.owner = nodes, pod, kinds, owner
        self.times, self.duration = times, duration
        self.late = late
        self.recount: dict[float, list[_Kind]] = {}
        """instant of `times` -> kinds to recount there besides those with a use ending then
        (`NodeTimeline._ending`): a use starting later first overlapping the window; with
        hosts late, every kind's, its host back included (they are kinds of their own)."""
        first = times[0] if times else 0.0
        if late:
            for kind in kinds:
                for use in nodes.kinds[kind[0]][1]:
                    if use.end > first:
                        self.recount.setdefault(use.end, []).append(kind)
                    if use.start > 0:
                        self._recount_at(bisect.bisect_right(times, use.start - duration), kind)
                if kind[1] > first:
                    self._recount_at(bisect.bisect_left(times, kind[1]), kind)
        else:
            for number, starts in nodes._starting.items():
                kind = (number, 0.0)
                if kind in kinds:
                    for start in starts:
                        self._recount_at(bisect.bisect_right(times, start - duration), kind)
        self.room: dict[_Kind, int] = {}
        self.total = 0
        self.shape = nodes._shape_number(pod)
        self.owned: Collection[int] = nodes._owned.get(owner, ())
        """Kinds with a use of the JobSet asking: their room is its own, not kept."""

    def _recount_at(self, index: int, kind: _Kind) -> None:
        if 0 < index < len(self.times):
            self.recount.setdefault(self.times[index], []).append(kind)

    def total_at(self, index: int) -> int:
        """The sum at `times[index]`; called for each index in turn from 0."""
        t = self.times[index]
        end = t + self.duration
        room_of, room, kinds = self.nodes._room, self.room, self.kinds
        if index == 0:
            self._first(t, end)
            return self.total
        for kind in self.recount.get(t, ()):
            now = room_of(kind, self.pod, t, end, self.owner)
            self.total += (now - room.get(kind, 0)) * kinds[kind]
            room[kind] = now
        if self.late:
            return self.total
        ending = self.nodes._ending.get(t)
        if ending:
            neutral = self.nodes._neutral.setdefault((self.shape, t, end), {})
            for number in ending:
                kind = (number, 0.0)
                count = kinds.get(kind)
                if count is None:
                    continue
                if number in self.owned:
                    now = room_of(kind, self.pod, t, end, self.owner)
                elif (now := neutral.get(number, -1)) < 0:
                    now = neutral[number] = room_of(kind, self.pod, t, end, _NOBODY)
                self.total += (now - room.get(kind, 0)) * count
                room[kind] = now
        return self.total

    def _first(self, t: float, end: float) -> None:
        """Every kind counted at the first instant."""
        nodes, pod, owner, room, owned = self.nodes, self.pod, self.owner, self.room, self.owned
        neutral = nodes._neutral.setdefault((self.shape, t, end), {})
        total = 0
        for kind, count in self.kinds.items():
            number, back = kind
            if back or number in owned:
                now = nodes._room(kind, pod, t, end, owner)
            else:
                now = neutral.get(number, -1)
                if now < 0:
                    now = neutral[number] = nodes._room(kind, pod, t, end, _NOBODY)
            room[kind] = now
            total += now * count
        self.total = total


def _key(resources: Mapping[str, Decimal]) -> Requests:
    return tuple(sorted(resources.items()))


def _pod_shapes(js: JobSetRequest | None) -> dict[str, PodShape]:
    return {r.name: r.pod for r in js.replicated_jobs} if js is not None else {}
