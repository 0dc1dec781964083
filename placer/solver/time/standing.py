"""A waiting JobSet's standing: priority plus aging, the reservation pass's order, the
schedule's tiers. Shared by the time-aware pass and the schedule it may hand its queue to."""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from datetime import UTC, datetime

from placer.model.options import TimePolicy
from placer.model.workload import JobSetRequest

__all__ = ["past_max_wait", "queue_standing", "reservation_order", "tiers", "waited_s"]


def queue_standing(jobset: JobSetRequest, policy: TimePolicy, now: datetime) -> float:
    """Priority plus `aging_per_hour` points per hour waited since creation."""
    if not policy.aging_per_hour or jobset.creation_timestamp is None:
        return float(jobset.priority)
    waited_h = max(0.0, (now - _aware(jobset.creation_timestamp)).total_seconds() / 3600)
    return jobset.priority + policy.aging_per_hour * waited_h


def reservation_order(
    jobset: JobSetRequest, policy: TimePolicy, now: datetime
) -> tuple[int, float, float, float, int, str]:
    """Sort key of the reservation pass: JobSets waiting past `max_wait_s` first, longest
    waiting first, then standing (priority plus aging), then queue order.

    A JobSet past the maximum wait must not only get a reservation but keep it: were it ordered
    by priority, each later arrival of a higher tier would be reserved ahead of it on the same
    domains round after round, and its start would recede for as long as they keep coming (seen
    in the over-time benchmark: 18-host GB200 JobSets waited 195 h with reservations).
    """
    if _past(jobset, policy, now):
        return (0, -waited_s(jobset, now), 0.0, *jobset.queue_key()[1:])
    return (1, 0.0, -queue_standing(jobset, policy, now), *jobset.queue_key()[1:])


def past_max_wait(
    jobsets: Sequence[JobSetRequest], policy: TimePolicy, now: datetime
) -> frozenset[str]:
    """The JobSets that have waited longer than `--max-wait` since creation: each always gets a
    reservation, ahead of the rest, and keeps pods that are not placer's off its domains from
    now on (`JobSetOutcome.past_max_wait`)."""
    return frozenset(js.key for js in jobsets if _past(js, policy, now))


def _past(jobset: JobSetRequest, policy: TimePolicy, now: datetime) -> bool:
    return policy.max_wait_s is not None and waited_s(jobset, now) > policy.max_wait_s


def tiers(
    jobsets: Sequence[JobSetRequest], policy: TimePolicy, now: datetime
) -> dict[str, tuple[int, float]]:
    """Per JobSet, (its priority tier in the schedule's objective, seconds waited): the tier is
    how many of the queue's priority values its standing (priority plus aging) reaches, so a
    JobSet aged past a higher priority weighs as that tier does."""
    values = sorted({js.priority for js in jobsets})
    return {
        js.key: (
            max(0, bisect.bisect_right(values, queue_standing(js, policy, now)) - 1),
            waited_s(js, now),
        )
        for js in jobsets
    }


def _aware(t: datetime) -> datetime:
    return t if t.tzinfo else t.replace(tzinfo=UTC)


def waited_s(jobset: JobSetRequest, now: datetime) -> float:
    if jobset.creation_timestamp is None:
        return 0.0
    return max(0.0, (now - _aware(jobset.creation_timestamp)).total_seconds())
