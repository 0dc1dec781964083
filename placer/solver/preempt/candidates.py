"""Which running JobSets the planner may evict, for which pending JobSets, and what each costs.

Phase "snapshot" of the CP-SAT planner when `--preemption lower-priority` is on. The rules, each a
JobSet that is never a victim:
- annotated `placer.dev/preemptible: "false"`;
- of equal or higher priority than the JobSet that needs room, or of unknown priority (its pods
  state none in the snapshot: placer cannot tell it is lower);
- any victim of a JobSet whose PriorityClass (or pod template) says `preemptionPolicy: Never`:
  such a JobSet evicts nobody;
- any victim of a JobSet not expected to wait longer than `--preempt-after` without preemption;
- a JobSet also in the queue, or whose usage the snapshot does not record (evicting it would free
  room the planner cannot count);
- of equal or higher priority than every preemptor left waiting without preemption (`waiting`:
  the JobSets the greedy plan on the cluster as it is cannot place). Only a blocked JobSet needs
  room, so nobody is evicted to make room, even indirectly, for a JobSet of its own priority or
  lower: without this rule a higher-tier JobSet could move onto a victim's domains only so that a
  lower-tier one takes the domains it leaves, and the tier stages (admission before eviction cost)
  would pay for that.
Victims are whole: evicting one frees every node it runs on (`placer.model.whatif.without_jobsets`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from decimal import Decimal
from functools import cached_property

from placer.model.cluster import ClusterSnapshot
from placer.model.options import SolveOptions
from placer.model.preemption import EvictionCost, PreemptionFacts, eviction_cost
from placer.model.resources import PODS, is_accelerator
from placer.model.whatif import running_jobsets
from placer.model.workload import JobSetRequest
from placer.solver.preempt.settings import MAX_CANDIDATES

__all__ = ["VictimCandidate", "Victims", "find_victims", "never_preempts"]


@dataclass(frozen=True)
class VictimCandidate:
    """A running JobSet some pending JobSet may evict."""

    key: str
    priority: int
    cost: EvictionCost
    nodes: frozenset[str]
    base_weight: int = 0
    """Added to its cost (defrag: more than every move's cost together, so fewest moves win)."""

    @property
    def weight(self) -> int:
        """Its cost as the model weighs it: whole accelerator-seconds, at least 1, so among
        equally costly choices fewer victims win."""
        return self.base_weight + max(1, round(self.cost.chip_seconds))


@dataclass(frozen=True)
class Victims:
    """The candidates, and which pending JobSets may preempt at all."""

    candidates: Mapping[str, VictimCandidate]
    preemptors: frozenset[str]
    """Pending JobSet keys allowed to preempt (not `Never`, waiting longer than preempt-after)."""
    priorities: Mapping[str, int] = field(default_factory=dict)
    """Pending JobSet key -> the priority it preempts with (its declared one)."""
    snapshot: ClusterSnapshot | None = None
    """The cluster before any eviction (what attribution and the checker read)."""
    moves: bool = False
    """Defrag: candidates are moved (re-placed elsewhere, they are in the queue too), whatever
    their priority."""
    left_out: int = 0
    """Candidates not offered to the model, the costliest per accelerator beyond
    `settings.MAX_CANDIDATES`."""

    @cached_property
    def on_node(self) -> Mapping[str, tuple[str, ...]]:
        """Node -> candidates running on it."""
        found: dict[str, list[str]] = {}
        for key in sorted(self.candidates):
            for n in self.candidates[key].nodes:
                found.setdefault(n, []).append(key)
        return {n: tuple(ks) for n, ks in found.items()}

    @cached_property
    def running(self) -> frozenset[str]:
        """Every JobSet running on the cluster before any eviction."""
        return frozenset(running_jobsets(self.snapshot)) if self.snapshot else frozenset()

    def can_evict(self, jobset: str, victim: str) -> bool:
        """May pending JobSet `jobset` evict candidate `victim`?"""
        candidate = self.candidates.get(victim)
        return (
            candidate is not None
            and jobset in self.preemptors
            and (self.moves or candidate.priority < self.priorities[jobset])
        )

    def only(self, keys: Sequence[str]) -> Victims:
        """These victims alone (the ones the planner chose)."""
        chosen = {k: self.candidates[k] for k in sorted(keys)}
        return Victims(chosen, self.preemptors, self.priorities, self.snapshot, self.moves)


def never_preempts(jobset: JobSetRequest, snapshot: ClusterSnapshot) -> bool:
    """`preemptionPolicy: Never` on its pod template or its PriorityClass."""
    return jobset.never_preempts or (
        jobset.priority_class_name is not None
        and jobset.priority_class_name in snapshot.non_preempting_classes
    )


@dataclass
class _Held:
    """What one running JobSet holds, summed in one pass over the nodes."""

    nodes: set[str] = field(default_factory=set)
    accelerators: Decimal = Decimal(0)
    pods: Decimal = Decimal(0)
    known: bool = True
    """False when some node holding it does not record its usage."""
    priority: int | None = None

    @property
    def units(self) -> int | None:
        """Accelerator units its pods hold (pods when it requests none); None if unknown."""
        if not self.known:
            return None
        return int(self.accelerators) if self.accelerators > 0 else int(self.pods)


def _holdings(snapshot: ClusterSnapshot) -> dict[str, _Held]:
    """Running JobSet -> what it holds (one pass: at fleet scale a pass per JobSet is seconds)."""
    held: dict[str, _Held] = {}
    for n in snapshot.nodes:
        for key in n.jobsets:
            h = held.setdefault(key, _Held())
            h.nodes.add(n.name)
            usage = n.jobset_usage.get(key)
            if usage is None:
                h.known = False
                continue
            for name, value in usage.requests.items():
                if is_accelerator(name):
                    h.accelerators += value
            h.pods += usage.requests.get(PODS, Decimal(0))
            if usage.priority is not None:
                p = usage.priority
                h.priority = p if h.priority is None else max(h.priority, p)
    return held


def find_victims(
    snapshot: ClusterSnapshot,
    jobsets: Sequence[JobSetRequest],
    options: SolveOptions,
    waits_too_long: Callable[[JobSetRequest], bool] | None = None,
    waiting: Collection[str] | None = None,
    most: int | None = None,
) -> Victims | None:
    """The candidates under `options.preemption`, or None when preemption is off or nobody
    could be evicted. `waits_too_long` says whether a pending JobSet's expected wait without
    preemption exceeds `--preempt-after` (None: every pending JobSet may preempt); `waiting`
    names the pending JobSets left unplaced without preemption (None: any may be). At most
    `most` candidates are kept, the cheapest per accelerator (None: `settings.MAX_CANDIDATES`,
    what the model is offered; 0: all, for naming whichever victims a plan chose)."""
    policy = options.preemption
    if not policy.active:
        return None
    if policy.mode == "defrag":
        return _movable(snapshot, jobsets, options)
    pending = {js.key for js in jobsets}
    holdings = _holdings(snapshot)
    lowest = min(
        (h.priority for k, h in holdings.items() if h.priority is not None and k not in pending),
        default=None,
    )
    if lowest is None:
        return None
    # the expected wait (`--preempt-after`) costs greedy passes: asked only of JobSets that
    # outrank some running JobSet
    preemptors = [
        js
        for js in jobsets
        if js.reported_priority > lowest
        and not never_preempts(js, snapshot)
        and (waits_too_long is None or waits_too_long(js))
    ]
    if not preemptors:
        return None
    blocked = [js for js in preemptors if waiting is None or js.key in waiting]
    if not blocked:
        return None
    highest = max(js.reported_priority for js in blocked)
    candidates: dict[str, VictimCandidate] = {}
    for key, held in sorted(holdings.items()):
        priority = held.priority
        if key in pending or priority is None or priority >= highest:
            continue
        candidate = _candidate(snapshot, key, held, options, priority)
        if candidate is not None:
            candidates[key] = candidate
    if not candidates:
        return None
    limit = MAX_CANDIDATES if most is None else most or len(candidates)
    offered = _cheapest(candidates, limit)
    return Victims(
        offered,
        frozenset(js.key for js in preemptors),
        {js.key: js.reported_priority for js in jobsets},
        snapshot,
        left_out=len(candidates) - len(offered),
    )


def _cheapest(candidates: Mapping[str, VictimCandidate], most: int) -> dict[str, VictimCandidate]:
    """At most `most` candidates, the cheapest per accelerator first (ties by key), so the model
    stays solvable at fleet scale (`settings.MAX_CANDIDATES`)."""
    if len(candidates) <= most:
        return dict(candidates)
    ranked = sorted(
        candidates,
        key=lambda k: (candidates[k].weight / max(1, candidates[k].cost.accelerators), k),
    )
    return {k: candidates[k] for k in sorted(ranked[:most])}


def _candidate(
    snapshot: ClusterSnapshot, key: str, held: _Held, options: SolveOptions, priority: int
) -> VictimCandidate | None:
    """`key` as a candidate with its cost, or None when protected or its usage is unknown."""
    info = snapshot.running.get(key)
    if info is not None and not info.preemption.preemptible:
        return None
    units = held.units
    if units is None:
        return None
    now = options.time.now or datetime.now(UTC)
    started = info.started_at if info is not None else None
    facts = info.preemption if info is not None else PreemptionFacts()
    cost = eviction_cost(units, started, now, facts, options.preemption.restart_cost_s)
    return VictimCandidate(key, priority, cost, frozenset(held.nodes))


def _movable(
    snapshot: ClusterSnapshot, jobsets: Sequence[JobSetRequest], options: SolveOptions
) -> Victims | None:
    """Defrag: running JobSets given in the queue (their manifests say how to re-place them),
    not protected; every other queued JobSet may use what a move frees."""
    holdings = _holdings(snapshot)
    running = set(holdings)
    found: dict[str, VictimCandidate] = {}
    for js in jobsets:
        if js.key in running:
            c = _candidate(snapshot, js.key, holdings[js.key], options, js.reported_priority)
            if c is not None:
                found[js.key] = c
    if not running.intersection(js.key for js in jobsets):
        return None  # nothing given runs: a plain plan (kept whole otherwise: the rest stay put)
    above = sum(c.weight for c in found.values()) + 1
    moves = {k: replace(c, base_weight=above) for k, c in found.items()}
    pending = frozenset(js.key for js in jobsets if js.key not in running)
    priorities = {js.key: js.reported_priority for js in jobsets}
    return Victims(moves, pending, priorities, snapshot, moves=True)
