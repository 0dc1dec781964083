"""Which of the CP-SAT schedule's future reservations hold their domains this round.

A held reservation idles what it holds: from now until its start, only JobSets expected to end
by then may use its domains. That is worth it when the start it protects can be believed. A
JobSet that states no run time (`expected_duration_s` unset) has its whole future drawn from
the default duration: its own end, and so the start of every reservation behind it, and which
JobSets "end in time" to backfill ahead of it. Holding every such reservation (conservative
backfill on made-up durations) left free domains idle round after round in the over-time
benchmark without estimates (GB200, 90% load: median wait 5.47 h against `easy-aging`'s 1.59 h,
p95 1.19x; benchmarks/RESULTS-backfill.md, round 7).

So, as EASY backfill does, a JobSet without a stated run time holds its reservation only when it
is among the first `head` JobSets of the reservation order that must wait, or it has waited past
`--max-wait`; JobSets that state a run time keep every reservation the schedule gives them. A
reservation not held is reported as an expected start only (the estimate pass), not as reserved
domains, and is not kept into the next round.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from placer.solver.time.reservations import Reservation

__all__ = ["held_reservations"]


def held_reservations(
    reservations: Mapping[str, Reservation],
    order: Sequence[str],
    stated: Collection[str],
    late: Collection[str],
    head: int,
) -> tuple[dict[str, Reservation], str]:
    """The reservations that hold (starts now always do), and a note naming how many did not.

    `order` is the reservation order (queue order with aging), `stated` the JobSets whose run
    time is stated, `late` those waiting past `--max-wait`."""
    waiting = [k for k in order if k in reservations and reservations[k].start_s]
    first = set(waiting[:head])
    dropped = {k for k in waiting if k not in stated and k not in late and k not in first}
    if not dropped:
        return dict(reservations), ""
    kept = {k: r for k, r in reservations.items() if k not in dropped}
    n = len(dropped)
    behind = "the head" if head == 1 else f"the first {head} waiting"
    note = (
        f"schedule: {n} JobSet{'' if n == 1 else 's'} without a stated run time behind {behind} "
        f"{'holds' if n == 1 else 'hold'} no domains (expected start only)"
    )
    return kept, note
