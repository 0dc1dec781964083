"""What the controller carries from one cycle to the next: which targets wait, which failed, and
which events were sent.

Every decision is made from the cluster as observed this cycle; this memory only spares repeats:
the gather window (a target is planned once the oldest has waited `window_s`), the retry of a
target that was unschedulable (only once capacity changed, or every `replan_s`), and events not
sent twice (`Announced`). It lives in the process: a restarted controller plans what is pending
at once and announces each record once more (a create answered 409 when the event exists).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from placer.controller.decide.observed import Announced
from placer.controller.decide.plan.planning import PlannedRound
from placer.controller.decide.plan.reserving import DURATION_WARNING
from placer.controller.decide.preempting import EVICTION_EVENTS, PREEMPTION_WARNING
from placer.controller.decide.records.writes import EmitEvent, Write
from placer.controller.decide.review.review import Review, Target

__all__ = ["CycleMemory", "DueTargets"]


@dataclass(frozen=True)
class DueTargets:
    """Which of the review's targets are planned this round."""

    due: list[Target] = field(default_factory=list)
    deferred: list[str] = field(default_factory=list)
    """Keys waiting: for the gather window, or for a change since they were unschedulable."""
    wake_in_s: float | None = None
    """Seconds until the gather window closes (None: nothing waiting for it)."""


class CycleMemory:
    """The controller's memory across cycles (see the module docstring)."""

    def __init__(self) -> None:
        self.pending_since: dict[str, float] = {}
        """JobSet -> when it was first seen waiting for a plan (the gather window)."""
        self.failed_at: dict[str, tuple[int, float]] = {}
        """JobSet -> (capacity version, time) of its last unschedulable plan."""
        self.unschedulable: dict[str, str] = {}
        """JobSet -> the Unschedulable message already emitted."""
        self.placed: set[tuple[str, str]] = set()
        """(JobSet, plan id) whose Placed event was sent (or found already sent)."""
        self.duration_warnings: dict[str, str] = {}
        """JobSet -> the expected-duration warning already emitted."""
        self.preemption_warnings: dict[str, str] = {}
        """JobSet -> the preemption-annotation warning already emitted."""
        self.eviction_events: set[tuple[str, str, str]] = set()
        """(reason, JobSet, eviction id) of the preemption events sent."""
        self.kueue_not_preempting: set[str] = set()
        """Kueue-managed JobSets already logged as neither preempting nor preemptible."""
        self.kueue_warnings: set[str] = set()
        """Names of the Kueue Warning events already sent (one per object and message)."""

    def due(
        self,
        rev: Review,
        capacity_version: int,
        now: float,
        *,
        window_s: float,
        replan_s: float,
        force: bool,
    ) -> DueTargets:
        """The targets to plan at `now` (monotonic seconds); `force` plans every one at once."""
        keys = {t.key for t in rev.targets}
        for k in list(self.pending_since):
            if k not in keys:
                del self.pending_since[k]
        for k in keys:
            self.pending_since.setdefault(k, now)
        if not rev.targets:
            return DueTargets()
        oldest = min(self.pending_since[k] for k in keys)
        if not force and now - oldest < window_s:
            return DueTargets(deferred=sorted(keys), wake_in_s=window_s - (now - oldest))
        due, deferred = [], []
        for t in rev.targets:
            last = self.failed_at.get(t.key)
            stale = last is not None and last[0] == capacity_version and now - last[1] < replan_s
            if stale and not force:
                deferred.append(t.key)
            else:
                due.append(t)
        return DueTargets(due=due, deferred=deferred)

    def announced(self) -> Announced:
        """The events already sent, as `plan_writes` takes them."""
        return Announced(
            unschedulable=dict(self.unschedulable),
            placed=frozenset(self.placed),
            duration_warnings=dict(self.duration_warnings),
            preemption_warnings=dict(self.preemption_warnings),
            evictions=frozenset(self.eviction_events),
        )

    def remember(
        self, planned: PlannedRound, capacity_version: int, now: float, done: Iterable[Write]
    ) -> None:
        """A round's outcome: placed targets forget their failures, unschedulable ones are
        retried after a change; the events in `done` (sent, or logged by a dry run) are not
        sent again."""
        for key in planned.placed:
            self.failed_at.pop(key, None)
            self.unschedulable.pop(key, None)
        for key in planned.unschedulable:
            self.failed_at[key] = (capacity_version, now)
        for w in done:
            if isinstance(w, EmitEvent) and w.reason == "Unschedulable":
                self.unschedulable[w.jobset] = str(w.body.get("message"))
            elif isinstance(w, EmitEvent) and w.reason == "Placed":
                self.placed.add((w.jobset, w.plan_id))
            elif isinstance(w, EmitEvent) and w.reason == DURATION_WARNING:
                self.duration_warnings[w.jobset] = str(w.body.get("message"))
            elif isinstance(w, EmitEvent) and w.reason == PREEMPTION_WARNING:
                self.preemption_warnings[w.jobset] = str(w.body.get("message"))
            elif isinstance(w, EmitEvent) and w.reason in EVICTION_EVENTS:
                self.eviction_events.add((w.reason, w.jobset, w.plan_id))
            elif isinstance(w, EmitEvent) and not w.jobset:
                self.kueue_warnings.add(str(w.body["metadata"]["name"]))
