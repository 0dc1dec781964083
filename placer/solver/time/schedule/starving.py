"""Which waiting JobSets the schedule may not start later than the greedy pass would: the
starving bound.

The schedule's objective weighs waits, so on its own it trades one long wait for many short ones;
the rounds of benchmarks/RESULTS-backfill.md that moved the longest waits did it here, by which
JobSets carry the bound, more than by the objective. `solve.schedule` asks once per round: the
greedy hint reserves these JobSets first (`solve.hint`), and `build_problem` gives each its
hinted start as a latest start. The shares are solver settings (`SCHEDULE_STARVING_*`).
"""

from __future__ import annotations

from placer.solver.cpsat import (
    SCHEDULE_STARVING_HEAD,
    SCHEDULE_STARVING_OVERDUE,
    SCHEDULE_STARVING_SHARE,
)
from placer.solver.time.schedule.problem import ScheduleRequest

__all__ = ["starving"]


def starving(
    request: ScheduleRequest,
    share: float = SCHEDULE_STARVING_SHARE,
    head: int | None = SCHEDULE_STARVING_HEAD,
    overdue: float | None = SCHEDULE_STARVING_OVERDUE,
) -> tuple[str, ...]:
    """JobSets that waited `share` of `--max-wait` or more, oldest first (then queue order), the
    first `head` of them (None: all), then each later one that waited `overdue` of `--max-wait`
    and may take no domain a JobSet already chosen may take: the greedy pass reserves them
    first, and the schedule never starts them later than that (`build_problem` carries the
    bound, `schedule.model.add_starving` states it). Without a maximum wait, none; JobSets without
    an exclusive need (they start now) are never starving.

    Why: the weighted waits trade one long wait for many short ones, and a reservation that
    is only kept when moving it gains little was pushed back round after round (see
    `SCHEDULE_STARVING_SHARE`); a bound taken from the greedy pass makes the schedule's longest
    waits no worse than that pass's. An overdue JobSet in a disjoint pool is bounded too
    (`SCHEDULE_STARVING_OVERDUE`): its bound cannot delay a chosen one, as they share no domain."""
    if request.max_wait_s is None:
        return ()
    threshold = share * request.max_wait_s
    order = {c.jobset: i for i, c in enumerate(request.candidates) if c.needs}
    old = [k for k in order if request.tiers[k][1] >= threshold]
    ranked = sorted(old, key=lambda k: (-request.tiers[k][1], order[k]))
    chosen = ranked[:head]
    if overdue is None or head is None:
        return tuple(chosen)
    eligible = {
        c.jobset: frozenset().union(*(n.eligible for n in c.needs))
        for c in request.candidates
        if c.jobset in order
    }
    taken = frozenset().union(*(eligible[k] for k in chosen))
    for k in ranked[head:]:
        if request.tiers[k][1] >= overdue * request.max_wait_s and not eligible[k] & taken:
            chosen.append(k)
            taken |= eligible[k]
    return tuple(chosen)
