"""When a waiting JobSet whose pods have no exclusive key can start: node by node, over time.

The reservation pass works on domains, and a JobSet with no exclusive child Job needs none, so
the pass found it "able to start now" whatever the cluster held: left out of the plan, such a
JobSet was told expected start 0 ("now" in the table), round after round, and one whose pods fit
no node even on an empty cluster was never told "never" (so never Rejected under Kueue).

Here each node's room is followed over time instead: its free resources once every JobSet ends
(`Units.ctx`), less what uses it over a window `[t, t + duration)`:

- a running JobSet until its expected end (`ReleaseTimeline`; its whole node when its usage was
  not recorded), a NotReady or cordoned host until it is expected back (`UNHEALTHY_BACK_S`);
- this plan's pods without an exclusive key, for their JobSet's expected duration, and its
  exclusive child Jobs' domains whole (no other child Job enters one: the ledger's rule);
- a domain reserved for another JobSet's later start, whole, over its reservation (the rule of
  `PlacementContext.node_open_to`);
- the JobSets of this kind ahead in queue order, where they are expected to run.

The earliest start is 0 or the end of some use, so those are the only times tried. For each pod
shape the pods fitting on its eligible nodes are summed at each such time, a node recounted only
when a use of it ends or begins to overlap the window (a sweep, not nodes x times), and the
JobSet is packed first-fit, as the ledger packs it, only at times where every shape's sum holds
it. No time fits: it never fits, and why comes from the cluster it was judged on last
(`Units.last_resort`), as for JobSets with exclusive child Jobs.

A JobSet with both kinds of child Jobs keeps the reservation pass's estimate (its domains'),
which does not look at its shared pods.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal

from placer.model.cluster import DomainReservation
from placer.model.plan import JobSetOutcome
from placer.model.resources import PODS, ResourceMap, add_resources, pods_that_fit
from placer.model.workload import JobSetRequest, PodShape
from placer.solver.context import JobClass, PlacementContext
from placer.solver.time.units import UNHEALTHY_BACK_S, Units

__all__ = ["SharedStart", "only_shared", "shared_starts"]


@dataclass(frozen=True)
class SharedStart:
    """A waiting JobSet's expected start (seconds from now; None: never), and the JobSets whose
    end on the nodes it is expected to take it waits for, the last to end first."""

    start_s: float | None
    waits_for: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Use:
    """Something holding a node over `[start, end)`: `requests` of it, or all of it (None)."""

    owner: str
    start: float
    end: float
    requests: ResourceMap | None
    ports: tuple[tuple[int, str], ...] = ()

    def overlaps(self, t: float, end: float) -> bool:
        return self.start < end and self.end > t


def only_shared(ctx: PlacementContext, jobset: JobSetRequest) -> bool:
    """Every child Job of `jobset` is without an exclusive key (and it has some)."""
    classes = ctx.classes_of(jobset)
    return bool(classes) and all(jc.exclusive_key is None for jc in classes)


def shared_starts(
    units: Units,
    order: Sequence[JobSetRequest],
    durations: Mapping[str, float],
    placed: Iterable[JobSetOutcome],
    held: Iterable[DomainReservation],
) -> dict[str, SharedStart]:
    """The expected start of each JobSet of `order` (queue order, none placed) whose child Jobs
    all lack an exclusive key, behind `placed` (this plan's placed outcomes, running from now
    for their expected durations) and the reservations `held` (future starts of other JobSets)."""
    waiting = [js for js in order if only_shared(units.ctx, js)]
    if not waiting:
        return {}
    timeline = _NodeTimeline(units, durations, placed, held)
    found: dict[str, SharedStart] = {}
    for js in waiting:
        start = timeline.earliest(js, units.ctx, durations[js.key])
        if start is None and units.last_resort() is not units.ctx:
            # judged on the hosts with condition taints back, as `Units.candidate` does last
            start = timeline.earliest(js, units.last_resort(), durations[js.key], back=True)
        found[js.key] = start or SharedStart(None)
    return found


class _NodeTimeline:
    """Every node's uses over time, and the earliest window a JobSet's pods fit."""

    def __init__(
        self,
        units: Units,
        durations: Mapping[str, float],
        placed: Iterable[JobSetOutcome],
        held: Iterable[DomainReservation],
    ) -> None:
        self.units = units
        self.uses: dict[str, list[_Use]] = {}
        self._in_domains: frozenset[str] | None = None
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
                    self._add(node.name, _Use(key, 0.0, end, usage.requests, usage.host_ports))
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
                for p in j.pods:
                    if pod is not None:
                        self._add(p.node, _Use(o.key, 0.0, end, pod.requests, pod.host_ports))
        for r in held:
            unit = units.unit_of(r.key, r.path)
            nodes = units.domains[unit].nodes if unit is not None else ()
            for n in nodes:
                self._add(n, _Use(r.jobset, r.start_s, max(r.end_s, r.start_s), None))

    def _add(self, node: str, use: _Use) -> None:
        if node in self.units.ctx.nodes:
            self.uses.setdefault(node, []).append(use)

    def _domain_nodes(self, key: str, path: Sequence[tuple[str, str]]) -> frozenset[str]:
        """The nodes of a domain named in a plan (none when the units do not know it)."""
        unit = self.units.unit_of(key, path)
        return frozenset(self.units.domains[unit].nodes) if unit is not None else frozenset()

    # -- the earliest window --

    def earliest(
        self, js: JobSetRequest, ctx: PlacementContext, duration: float, *, back: bool = False
    ) -> SharedStart | None:
        """`js`'s earliest start with its pods fitting over its whole expected run, judged on
        `ctx`'s nodes (`back`: hosts with condition taints only from `UNHEALTHY_BACK_S`), and
        its pods then held there for the JobSets after it; None when no time fits."""
        classes = ctx.classes_of(js)
        late = self._late_hosts(ctx) if back else {}
        times = sorted({0.0, *(u.end for us in self.uses.values() for u in us), *late.values()})
        eligible = {jc.index: self._eligible(ctx, jc) for jc in classes}
        hopeful = set(range(len(times)))
        for jc in classes:
            need = jc.rjob.replicas * jc.rjob.pods_per_job
            hopeful &= self._enough(jc, eligible[jc.index], times, duration, need, late)
        for i in sorted(hopeful):
            t = times[i]
            packed = self._pack(classes, eligible, t, t + duration, late)
            if packed is not None:
                for node, use in packed:
                    self.uses.setdefault(node, []).append(_Use(js.key, t, t + duration, use, ()))
                return SharedStart(t, self._waited_for(js.key, {n for n, _ in packed}, t))
        return None

    def _late_hosts(self, ctx: PlacementContext) -> dict[str, float]:
        """Hosts with condition taints (judged untainted in `ctx`): back from `UNHEALTHY_BACK_S`."""
        kept = self.units.ctx.nodes
        untainted = {n for n, node in ctx.nodes.items() if node.taints != kept[n].taints}
        return dict.fromkeys(untainted, UNHEALTHY_BACK_S)

    def _eligible(self, ctx: PlacementContext, jc: JobClass) -> list[str]:
        """`jc`'s nodes in the ledger's order: outside every exclusive domain of the queue first
        (`PlacementLedger.place_shared`), each group by name; none a rule rules out for good."""
        if self._in_domains is None:
            self._in_domains = frozenset(n for d in ctx.exclusive_domains for n in d.nodes)
        facts, blocked = ctx.class_facts(jc), self._in_domains
        nodes = [n for n in ctx.nodes if facts.exclusion(n) is None]
        return sorted(nodes, key=lambda n: (n in blocked, n))

    def _room(
        self,
        node: str,
        pod: PodShape,
        t: float,
        end: float,
        late: Mapping[str, float],
        taken: ResourceMap | None = None,
    ) -> int:
        """Pods of `pod`'s shape fitting on `node` over `[t, end)` (less `taken` there)."""
        if late.get(node, 0.0) > t:
            return 0
        free = dict(self.units.ctx.nodes[node].free)
        ports = set(self.units.ctx.nodes[node].used_host_ports)
        for use in self.uses.get(node, ()):
            if not use.overlaps(t, end):
                continue
            if use.requests is None:
                return 0
            _take(free, use.requests)
            ports.update(use.ports)
        if taken:
            _take(free, taken)
        fit = pods_that_fit(free, pod.requests)
        if pod.host_ports:
            return 0 if any(p in ports for p in pod.host_ports) else min(fit, 1)
        return fit

    def _enough(
        self,
        jc: JobClass,
        nodes: list[str],
        times: list[float],
        duration: float,
        need: int,
        late: Mapping[str, float],
    ) -> set[int]:
        """The indexes of `times` at which `jc`'s pods fit on `nodes` in sum (necessary for a
        fit, and sufficient for a JobSet of one shape without ports or a required topology).

        A sweep: a node is counted at time 0 and recounted only at the times its count can
        change, when one of its uses ends or first overlaps the window, or its host is back."""
        pod = jc.rjob.pod
        recount: dict[int, set[str]] = {}
        for n in nodes:
            for use in self.uses.get(n, ()):
                recount.setdefault(bisect.bisect_left(times, use.end), set()).add(n)
                if use.start > 0:
                    first = bisect.bisect_right(times, use.start - duration)
                    recount.setdefault(first, set()).add(n)
            if n in late:
                recount.setdefault(bisect.bisect_left(times, late[n]), set()).add(n)
        count = {n: self._room(n, pod, 0.0, duration, late) for n in nodes}
        total = sum(count.values())
        found = {0} if total >= need else set()
        for i in range(1, len(times)):
            t = times[i]
            for n in recount.get(i, ()):
                now = self._room(n, pod, t, t + duration, late)
                total += now - count[n]
                count[n] = now
            if total >= need:
                found.add(i)
        return found

    def _pack(
        self,
        classes: Sequence[JobClass],
        eligible: Mapping[int, list[str]],
        t: float,
        end: float,
        late: Mapping[str, float],
    ) -> list[tuple[str, ResourceMap]] | None:
        """(node, requests) of every pod of `classes` packed first-fit over `[t, end)`, a class
        with a required topology inside one domain of that level; None if some pod is left."""
        taken: dict[str, ResourceMap] = {}
        for jc in classes:
            need = jc.rjob.replicas * jc.rjob.pods_per_job
            groups: Iterable[Iterable[str]] = [eligible[jc.index]]
            level = jc.rjob.required_topology
            if level:
                # every child Job of the class in one domain of that level, as the ledger keeps it
                groups = [
                    [n for n in eligible[jc.index] if n in d.nodes]
                    for d in self.units.ctx.domains(level)
                ]
            for group in groups:
                counts = self._fill(jc.rjob.pod, group, need, t, end, late, taken)
                if counts is not None:
                    for n, k in counts:
                        taken[n] = add_resources(taken.get(n, {}), _pods(jc.rjob.pod, k))
                    break
            else:
                return None
        return list(taken.items())

    def _fill(
        self,
        pod: PodShape,
        nodes: Iterable[str],
        need: int,
        t: float,
        end: float,
        late: Mapping[str, float],
        taken: Mapping[str, ResourceMap],
    ) -> list[tuple[str, int]] | None:
        counts: list[tuple[str, int]] = []
        for n in nodes:
            if need <= 0:
                break
            k = min(self._room(n, pod, t, end, late, taken.get(n)), need)
            if k > 0:
                counts.append((n, k))
                need -= k
        return counts if need <= 0 else None

    def _waited_for(self, key: str, nodes: set[str], t: float) -> tuple[str, ...]:
        """Who ends by `t` on `nodes` (a run, a planned JobSet, a reservation), last first."""
        ends: dict[str, float] = {}
        for n in nodes:
            for use in self.uses.get(n, ()):
                if use.owner and use.owner != key and 0 < use.end <= t:
                    ends[use.owner] = max(ends.get(use.owner, 0.0), use.end)
        return tuple(sorted(ends, key=lambda k: (-ends[k], k)))


def _pod_shapes(js: JobSetRequest | None) -> dict[str, PodShape]:
    return {r.name: r.pod for r in js.replicated_jobs} if js is not None else {}


def _take(free: dict[str, Decimal], used: Mapping[str, Decimal]) -> None:
    """`used` out of `free`, as the ledger consumes: a resource the node lacks goes negative
    (nothing more fits), `pods` slots only where the node counts them."""
    for name, value in used.items():
        if name != PODS or PODS in free:
            free[name] = free.get(name, Decimal(0)) - value


def _pods(pod: PodShape, count: int) -> ResourceMap:
    """What `count` pods of `pod`'s shape use, one `pods` slot each (as `JobSetUsage` counts)."""
    used = {name: value * count for name, value in pod.requests.items() if name != PODS}
    used[PODS] = Decimal(count)
    return used
