"""When a JobSet that is not planned this round could start, were it queued now behind the rest.

The time-aware pass (`timeaware.TimeAwareSolver`) gives an expected start to every JobSet it
plans. Some JobSets may not start this round whatever the room, so they are left out of the
plan: a Kueue Workload without reserved quota (the controller's `kueue.eta`, the only caller).
Their users still ask when; the answer is the same event-driven pass over the release timeline,
run after the round's plan and its reservations and reserving nothing, so it can never move a
JobSet that was planned.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime

from placer.model.cluster import ClusterSnapshot
from placer.model.options import SolveOptions
from placer.model.plan import JobSetOutcome, Plan
from placer.model.workload import JobSetRequest
from placer.solver.time.annotate import Annotator
from placer.solver.time.release import ReleaseTimeline, expected_duration_s
from placer.solver.time.reservations import Reservation, UnitId, reserve
from placer.solver.time.shared.starts import (
    domains_when_pods_fit,
    starts_beside,
)
from placer.solver.time.standing import reservation_order
from placer.solver.time.timeaware import reservations_of
from placer.solver.time.units import Units

__all__ = ["expected_starts_behind"]


def expected_starts_behind(
    snapshot: ClusterSnapshot,
    later: Sequence[JobSetRequest],
    options: SolveOptions,
    planned: tuple[Plan, Sequence[JobSetRequest]] | None = None,
) -> list[JobSetOutcome]:
    """When each JobSet of `later` could start were it queued now behind everything the
    `planned` round (its plan and the requests it was given) placed or reserved, and behind the
    snapshot's reservations; in reservation order, reserving nothing. One unplaced outcome each,
    with its expected start, domains and whom it waits for.

    For JobSets that may not start this round whatever the room, so are not planned: a Kueue
    Workload without reserved quota, whose estimate assumes quota were reserved now.
    """
    policy = options.time
    now = policy.now or datetime.now(UTC)
    plan, queued = planned if planned is not None else (None, ())
    timeline = ReleaseTimeline.of_policy(snapshot, policy, now)
    units = Units(snapshot, [*queued, *later], options, timeline)
    durations = {js.key: expected_duration_s(js, policy) for js in [*queued, *later]}
    holds: list[tuple[UnitId, float, float]] = []
    placed = [o for o in plan.jobsets if o.status == "placed"] if plan is not None else []
    for o in placed:
        end = durations.get(o.key, policy.default_duration_s)
        holds += units.running(o, end)
    held = list(reservations_of(plan, queued, policy)) if plan is not None else []
    planned_keys = {o.key for o in plan.jobsets} if plan is not None else set()
    others = [r for r in snapshot.reservations if r.jobset not in planned_keys]
    holds += units.holds([*held, *others])
    order = sorted(later, key=lambda js: reservation_order(js, policy, now))
    candidates = [units.candidate(js, durations[js.key]) for js in order]

    def find(not_before: Mapping[str, float]) -> dict[str, Reservation]:
        timed = [replace(c, not_before_s=not_before.get(c.jobset, 0.0)) for c in candidates]
        found = reserve(units.layout, timed, free_at=units.free_at, holds=holds)
        return {r.jobset: r for r in found}

    # a JobSet's domains found again from its pods' start when that is later (`shared.starts`)
    starts = starts_beside(units, order, durations, placed, [*held, *others])
    found, shared = domains_when_pods_fit(find, starts)
    domains = dict(found)
    after = Annotator(units, {}, domains, [], {}, shared=shared)
    return [
        after.outcome(
            JobSetOutcome(
                namespace=js.namespace, name=js.name, status="unschedulable", priority=js.priority
            )
        )
        for js in order
    ]
