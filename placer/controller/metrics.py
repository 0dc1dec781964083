"""Prometheus metrics of the controller, served on `/metrics`.

One `Metrics` object per controller, on its own registry (so tests can run several side by side).
What an operator watches: how long planning takes and how good the plan is (solver gap), how many
managed JobSets wait, are placed or unschedulable, and whether writes fail. The cycle hands each
phase's outcome to `observe_plans`, `count_writes` and `observe_cycle`, which also log it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

from placer.controller.act.executor import ExecReport
from placer.controller.decide.plan.planning import PlanRecord
from placer.controller.report import CycleReport

__all__ = ["Metrics"]

log = logging.getLogger(__name__)

_PLAN_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120)


class Metrics:
    """The controller's metrics on their own registry, and what the cycle reports into them."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.plan_seconds = Histogram(
            "placer_plan_duration_seconds",
            "Wall time of one planning pass (solver included).",
            buckets=_PLAN_BUCKETS,
            registry=r,
        )
        self.cycle_seconds = Histogram(
            "placer_reconcile_duration_seconds",
            "Wall time of one reconcile cycle.",
            buckets=_PLAN_BUCKETS,
            registry=r,
        )
        self.cycles = Counter("placer_reconcile_cycles", "Reconcile cycles run.", registry=r)
        self.pending = Gauge(
            "placer_pending_jobsets", "Managed JobSets waiting for a placement.", registry=r
        )
        self.placed = Gauge(
            "placer_placed_jobsets", "Managed, unfinished JobSets holding a placement.", registry=r
        )
        self.unschedulable = Gauge(
            "placer_unschedulable_jobsets",
            "Managed JobSets the last plan could not place.",
            registry=r,
        )
        self.invalid = Gauge(
            "placer_invalid_jobsets",
            "Managed JobSets whose manifest cannot be planned (an Unschedulable event says why).",
            registry=r,
        )
        self.gap = Gauge(
            "placer_solver_gap", "Relative gap of the last plan (0 = proven optimal).", registry=r
        )
        self.writes = Counter("placer_writes", "Writes sent, by kind.", ["kind"], registry=r)
        self.write_failures = Counter(
            "placer_write_failures",
            "Writes that failed after retries, by kind.",
            ["kind"],
            registry=r,
        )
        self.ledger_commits = Counter(
            "placer_ledger_commits",
            "Commits to the placement ledger, by outcome (committed, conflict).",
            ["outcome"],
            registry=r,
        )
        self.preemptions = Counter(
            "placer_preemptions",
            "Running JobSets whose eviction this replica committed (--preemption).",
            registry=r,
        )
        self.leader = Gauge("placer_leader", "1 while this replica leads.", registry=r)

    def serve(self, port: int, addr: str = "0.0.0.0") -> None:
        """Serve `/metrics` on `addr:port` from a background thread."""
        start_http_server(port, addr=addr, registry=self.registry)

    def observe_plans(self, plans: Sequence[PlanRecord], plan_s: float) -> None:
        """A round planned due targets: the planning time so far, and each solver call's gap."""
        self.plan_seconds.observe(plan_s)
        for plan, _, _ in plans:
            gap = plan.solver.gap  # None: nothing proven
            self.gap.set(float("nan") if gap is None else gap)
            log.info(
                "planned %d JobSet(s) with %s: %s, gap %s, %.2fs",
                len(plan.jobsets),
                plan.solver.name,
                plan.solver.status,
                "unknown" if gap is None else f"{gap:.3f}",
                plan.solver.wall_seconds,
            )

    def count_writes(self, executed: ExecReport) -> None:
        for w in executed.done:
            self.writes.labels(kind=w.op).inc()
        for w, _ in executed.failed:
            self.write_failures.labels(kind=w.op).inc()

    def observe_cycle(self, report: CycleReport) -> None:
        """A cycle ended: its time, and how many managed JobSets wait, hold a placement, are
        unschedulable or cannot be planned at all."""
        self.cycles.inc()
        self.cycle_seconds.observe(report.wall_s)
        self.pending.set(len(report.review.targets) - len(report.planned.placed))
        self.placed.set(
            len(report.review.in_force)
            + len([k for k in report.planned.placed if k not in report.review.in_force])
        )
        self.unschedulable.set(len(report.planned.unschedulable))
        self.invalid.set(len(report.review.invalid))
        log.debug(
            "cycle: %d managed, %d in force, %d targets, %d placed, %d unschedulable, "
            "%d writes, %d round(s), %.3fs",
            len(report.managed),
            len(report.review.in_force),
            len(report.review.targets),
            len(report.planned.placed),
            len(report.planned.unschedulable),
            len(report.writes),
            report.rounds,
            report.wall_s,
        )
