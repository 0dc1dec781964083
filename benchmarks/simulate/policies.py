"""The placement policies the over-time simulation compares, by the names the benchmarks use.

A policy is a solver plus the rules around it (queue order, reservations, aging, `--max-wait`,
who decides start times, preemption). The table lives apart from the simulation loop
(`overtime`) because every benchmark that names a policy (`backfill`, `who_waits`,
`preemption_overtime`, the report) needs the names and rules without the loop, and because a
policy's rules are what a RESULTS row cites: one place says what `easy-aging` is.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from placer.model.options import (
    DEFAULT_DURATION_S,
    QueuePolicy,
    ReservationPolicy,
    ScheduleMode,
    ScheduleSearch,
    TimePolicy,
)
from placer.model.preemption import PreemptionMode
from placer.solver.interface import Solver
from placer.solver.registry import get_solver

__all__ = ["AGING_PER_HOUR", "CPSAT", "GREEDY", "MAX_WAIT_S", "POLICIES", "Policy"]


@dataclass(frozen=True)
class Policy:
    """A placement policy over time: a solver, its queue rule, and what it reserves."""

    name: str
    solver: str
    queue: QueuePolicy = "priority"
    reservations: ReservationPolicy = "none"
    aging_per_hour: float = 0.0
    """Priority points per hour waited in the reservation order (see `TimePolicy`)."""
    max_wait_s: float | None = None
    """A JobSet waiting longer than this always gets a reservation (see `TimePolicy`)."""
    schedule: ScheduleMode = "greedy"
    """Who decides start times: the greedy reservation pass or the CP-SAT schedule."""
    preemption: PreemptionMode = "none"
    """`lower-priority`: the planner may evict whole running JobSets (issue 20)."""
    greedy_preemption: bool = False
    """Kueue-like: after planning, the blocked JobSets, highest priority first, evict running
    ones of lower priority, lowest first, one at a time until each fits (`greedy_preempt`)."""

    def time_policy(
        self,
        now: datetime | None = None,
        default_duration_s: float = DEFAULT_DURATION_S,
        schedule_search: ScheduleSearch = "fast",
    ) -> TimePolicy:
        """Its `TimePolicy` at a round's instant."""
        return TimePolicy(
            now=now,
            reservations=self.reservations,
            aging_per_hour=self.aging_per_hour,
            max_wait_s=self.max_wait_s,
            default_duration_s=default_duration_s,
            schedule=self.schedule,
            schedule_search=schedule_search,
        )

    def build(self) -> Solver:
        return get_solver(self.solver, time_policy=self.time_policy())


AGING_PER_HOUR = 2000.0
"""With the simulation's priorities (100, 1000, 10000), a batch JobSet waiting 5 h stands level
with a fresh production one. Chosen over 500 and 1000 on the 90% load, over-estimate cells of both
fleets (seed 1): 2000 with a 24 h max wait gave the lowest p95 on GB200 (19.1 h against 22.5 h
with 500) and on the TPU fleet (34.5 h against 40.9 h), and the lowest max delay on TPU."""

MAX_WAIT_S = 24 * 3600.0
"""The aging policies' `--max-wait`: past a day, a JobSet gets a reservation whatever its place."""

POLICIES: dict[str, Policy] = {
    p.name: p
    for p in (
        Policy("first-fit", "first-fit"),
        Policy("best-fit", "best-fit"),
        Policy("largest-first", "largest-first"),
        Policy("cpsat", "cpsat"),
        Policy("best-fit-strict", "best-fit", queue="strict-fifo"),
        Policy("easy", "best-fit", reservations="head"),
        Policy("conservative", "best-fit", reservations="all"),
        Policy("cpsat-head", "cpsat", reservations="head"),
        Policy("cpsat-all", "cpsat", reservations="all"),
        Policy(
            "easy-aging",
            "best-fit",
            reservations="head",
            aging_per_hour=AGING_PER_HOUR,
            max_wait_s=MAX_WAIT_S,
        ),
        Policy("cpsat-preempt", "cpsat", preemption="lower-priority"),
        Policy("kueue-preempt", "best-fit", greedy_preemption=True),
        Policy(
            "cpsat-schedule",
            "best-fit",
            reservations="all",
            aging_per_hour=AGING_PER_HOUR,
            max_wait_s=MAX_WAIT_S,
            schedule="cpsat",
        ),
        Policy(
            "cpsat-head-aging",
            "cpsat",
            reservations="head",
            aging_per_hour=AGING_PER_HOUR,
            max_wait_s=MAX_WAIT_S,
        ),
    )
}
"""`best-fit` is Kueue's BestEffortFIFO, `best-fit-strict` its StrictFIFO; `easy` and
`conservative` are the classic greedy backfills (reservation for the queue head / for everyone).
`cpsat-schedule` (issue 21) has the aging policies' rules, with every start time decided by the
CP-SAT schedule (`--schedule cpsat`) and best-fit placing who starts now, so its difference from
`easy-aging` is the schedule alone."""

GREEDY = ("best-fit", "best-fit-strict", "easy", "conservative", "easy-aging")
"""The greedy policies the backfill matrix runs (`benchmarks.backfill`)."""
CPSAT = ("cpsat", "cpsat-head", "cpsat-all", "cpsat-head-aging")
"""The matrix's CP-SAT policies that plan who starts now: without reservations, then with them
(issue 11's targets judge the ones with reservations)."""
