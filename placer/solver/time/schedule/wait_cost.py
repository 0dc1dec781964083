"""What a waiting JobSet's wait costs the schedule's objective, as a function of its start.

A second of wait weighs the JobSet's priority tier times its bounded-slowdown weight plus
aging (`weight_at`). Aging raises that weight every hour the JobSet waits, so the weight it has
now is not the weight its planned wait will have: charged at today's weight, a fresh two-day
run costs 1 per second however far it is pushed back, though twelve hours into that wait it
weighs as much as any JobSet of its tier. A model that believes the flat price pushes long runs
back round after round, and the next rounds, finding them aged, pay the real one.

So the cost of starting `s` seconds from now is the sum of the weights of those seconds at the
ages they will be waited at: piecewise linear in `s`, bending at each whole hour of age until
the weight reaches `WEIGHT_CAP`. The weight never falls as a JobSet waits, so the curve is
convex, and CP-SAT takes it exactly as the largest of its pieces' lines (`pieces`;
`schedule.model.add_waits`). The tier does not age over the horizon: the tier a JobSet has now
(aging included, `standing.tiers`) is the one its whole planned wait is charged at: tiers rising
over the horizon too were measured, and cost GB200's longest wait (benchmarks/RESULTS-backfill.md,
round 14, where this change's figures are).
"""

from __future__ import annotations

from dataclasses import dataclass

from placer.solver.time.schedule.problem import ScheduleJob

__all__ = [
    "SLOWDOWN_FLOOR_S",
    "SLOWDOWN_REF_S",
    "TIERS",
    "TIER_RATIO",
    "WEIGHT_AGING_PER_H",
    "WEIGHT_CAP",
    "Piece",
    "peak_weight",
    "pieces",
    "wait_cost",
    "wait_weight",
    "weight_at",
]

TIER_RATIO = 50
"""A second of wait in one priority tier weighs as fifty in the tier below, more than the widest
spread of slowdown weights (48): a second of a higher tier's wait always outweighs a second of
any lower tier's, whatever the runs' lengths (tiers first)."""
TIERS = 4
"""Priority tiers the weights tell apart; higher ones weigh as the fourth (the objective stays
within 64-bit integers, see `schedule.model.objective_fits`)."""
SLOWDOWN_REF_S = 24 * 3600
SLOWDOWN_FLOOR_S = 1800
"""Bounded slowdown: a JobSet's wait weighs `SLOWDOWN_REF_S / max(duration, SLOWDOWN_FLOOR_S)`
(1 to 48): an hour's wait triples a 30-minute run, and is little to a two-day one."""
WEIGHT_AGING_PER_H = 4
"""Aging inside a tier: a JobSet's weight per second waited grows by this much per hour it has
waited, up to the largest slowdown weight (48). Without it a long run weighs 1 or 2 against a
short one's 48 and is pushed back round after round until `--max-wait` (seen in the over-time
benchmark: reservations of 12 h TPU JobSets receding from 4 h to 58 h); with it, after half a day
every JobSet of a tier weighs the same."""
WEIGHT_CAP = 48
HOUR_S = 3600


def weight_at(job: ScheduleJob, waited_s: int) -> int:
    """What one second of this JobSet's wait costs once it has waited `waited_s` since creation:
    its tier, then its bounded slowdown weight plus aging by whole hours, at most `WEIGHT_CAP`
    (below `TIER_RATIO`, so tiers stay first)."""
    slowdown = max(1, round(SLOWDOWN_REF_S / max(job.duration_s, SLOWDOWN_FLOOR_S)))
    aged = slowdown + WEIGHT_AGING_PER_H * (waited_s // HOUR_S)
    return int(TIER_RATIO ** min(job.rank, TIERS - 1) * min(WEIGHT_CAP, aged))


def wait_weight(job: ScheduleJob) -> int:
    """What the next second of this JobSet's wait costs, now."""
    return weight_at(job, job.waited_s)


@dataclass(frozen=True)
class Piece:
    """From `from_s` seconds after now on, each further second of wait costs `weight`; a start
    at `from_s` costs `cost` in all."""

    from_s: int
    cost: int
    weight: int


def pieces(job: ScheduleJob, horizon_s: int) -> tuple[Piece, ...]:
    """The cost of a start as a function of it, up to `horizon_s` seconds from now: a piece per
    whole hour of age while aging still raises the weight, then one for the rest (at most
    `WEIGHT_CAP` pieces, about twelve with today's aging)."""
    s, cost = 0, 0
    found: list[Piece] = []
    while True:
        weight = weight_at(job, job.waited_s + s)
        found.append(Piece(s, cost, weight))
        next_hour = (job.waited_s + s) // HOUR_S * HOUR_S + HOUR_S - job.waited_s
        if next_hour >= horizon_s or weight_at(job, job.waited_s + next_hour) == weight:
            return tuple(found)
        cost += weight * (next_hour - s)
        s = next_hour


def wait_cost(job: ScheduleJob, start_s: int, horizon_s: int | None = None) -> int:
    """The cost of starting `start_s` seconds from now (the pieces up to `horizon_s`, by default
    up to the start itself: the same value wherever the horizon lies beyond it)."""
    found = pieces(job, start_s if horizon_s is None else horizon_s)
    last = max((p for p in found if p.from_s <= start_s), key=lambda p: p.from_s)
    return last.cost + last.weight * (start_s - last.from_s)


def peak_weight(job: ScheduleJob, horizon_s: int) -> int:
    """The most one second of this JobSet's wait can cost within `horizon_s` from now: the
    weight of its last second, since the weight never falls as it waits."""
    return weight_at(job, job.waited_s + max(0, horizon_s - 1))
