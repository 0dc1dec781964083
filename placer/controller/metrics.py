"""Prometheus metrics of the controller, served on `/metrics`.

One `Metrics` object per controller, on its own registry (so tests can run several side by side).
What an operator watches: how long planning takes and how good the plan is (solver gap), how many
managed JobSets wait, are placed or unschedulable, and whether writes fail.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

__all__ = ["Metrics"]

_PLAN_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120)


class Metrics:
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
        self.leader = Gauge("placer_leader", "1 while this replica leads.", registry=r)

    def serve(self, port: int, addr: str = "0.0.0.0") -> None:
        """Serve `/metrics` on `addr:port` from a background thread."""
        start_http_server(port, addr=addr, registry=self.registry)
