"""The frozen values a reconcile round hands from phase to phase, and what was already announced.

A cycle reads the cache once (`Observed`, the observe phase's value), judges it (`Reviewed`, the
review phase's), then planning, the ledger commit and `plan_writes` work on these values rather
than on a growing list of parameters; what the process remembers across cycles (events already
sent) is passed the same way (`Announced`). The plan phase's value is planning.PlannedRound.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from placer.controller.decide.observe.domains import DomainIndex
from placer.controller.decide.observe.kueue import KueueView
from placer.controller.decide.observe.state import ClusterState
from placer.controller.decide.observe.survey import ManagedJobSet, PodEntry
from placer.controller.decide.preempting import (
    Eligibility,
    Evictions,
    eviction_steps,
    placements,
)
from placer.controller.decide.records.ledger import Ledger, LedgerEntry
from placer.controller.decide.review.ledgerplan import LedgerView
from placer.controller.decide.review.review import Review, Target
from placer.model.assignment import Assignment
from placer.model.cluster import ClusterSnapshot
from placer.model.options import SolveOptions

__all__ = ["Announced", "Observed", "Reviewed"]


@dataclass(frozen=True)
class Observed:
    """One consistent view: the cached objects, the ledger in them, the managed JobSets (their
    records read from the ledger or their annotations), the planner's snapshot and its domains."""

    state: ClusterState
    ledger: Ledger
    managed: tuple[ManagedJobSet, ...]
    snapshot: ClusterSnapshot
    index: DomainIndex
    pods: Mapping[str, list[PodEntry]]
    """JobSet key -> its pods in `state` (survey.jobset_pods), read once by the survey and
    shared by every later reader (the time-aware pass's start times, the evictions)."""

    def evictions(
        self,
        entries: Mapping[str, LedgerEntry],
        placed: Mapping[str, Assignment] | None = None,
    ) -> Evictions:
        """Where each eviction in `entries` stands (preempting.eviction_steps), its
        beneficiaries' records read from this ledger and from `placed` (a round's new ones)."""
        if not entries:
            return Evictions()
        records = {**placements(self.ledger.entries.values()), **(placed or {})}
        return eviction_steps(entries, self.state, records, self.index, self.pods)


@dataclass(frozen=True)
class Reviewed:
    """What the review made of one observation: the records judged, the ledger sorted, and the
    targets due for planning now."""

    observed: Observed
    options: SolveOptions
    """The configured options with `--default-duration` resolved against the cluster's classes."""
    review: Review
    ledger: LedgerView
    """The ledger against the observed JobSets, with suspects confirmed gone released."""
    due: tuple[Target, ...] = ()
    """Targets planned this round: the gather window closed, not retried too soon."""
    deferred: tuple[str, ...] = ()
    """Targets waiting (the gather window, or nothing changed since they were unschedulable)."""
    wake_in_s: float | None = None
    """Seconds until the gather window closes (None: nothing waiting for it)."""
    now_s: float = 0.0
    """The round's instant on the controller's monotonic clock (windows and retries)."""
    wall_s: float = 0.0
    """The round's instant in epoch seconds: time-aware planning's instant, reservations' clock."""
    gone: frozenset[str] | None = None
    """Ledger suspects a read confirmed gone (None: not asked yet); asked once per cycle."""
    kueue: KueueView | None = None
    """Kueue's Workloads and checks as this round read them (--kueue-admission-check)."""
    eligibility: Eligibility | None = None
    """Who may be evicted this round (None: --preemption none)."""
    evictions: Evictions = field(default_factory=Evictions)
    """The evictions in progress in the ledger, and whom they make wait (preempting.py)."""


@dataclass(frozen=True)
class Announced:
    """Events this process already sent, so they are not repeated every cycle."""

    unschedulable: Mapping[str, str] = field(default_factory=dict)
    """JobSet key -> the `Unschedulable` message last emitted."""
    placed: frozenset[tuple[str, str]] = frozenset()
    """(JobSet key, plan id) whose `Placed` event was sent (or found already sent)."""
    duration_warnings: Mapping[str, str] = field(default_factory=dict)
    """JobSet key -> the Warning about its unreadable expected duration last emitted."""
    preemption_warnings: Mapping[str, str] = field(default_factory=dict)
    """JobSet key -> the Warning about its unreadable preemption annotations last emitted."""
    evictions: frozenset[tuple[str, str, str]] = frozenset()
    """(reason, JobSet key, eviction id) of the preemption events sent (writeplan.py)."""
