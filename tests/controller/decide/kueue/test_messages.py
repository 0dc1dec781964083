"""The texts placer's check writes on a Kueue Workload (`kueue.messages`)."""

from __future__ import annotations

from datetime import UTC, datetime

from placer.controller.decide.kueue.messages import eta_text
from placer.model.plan import DomainRef, JobSetOutcome

NOW_S = datetime(2026, 12, 1, 12, tzinfo=UTC).timestamp()
POOL = "cloud.google.com/gke-nodepool"


def test_the_eta_names_the_reserved_domains_and_nodes() -> None:
    """A JobSet whose coordinator's nodes are held with its domains is told both, grouped by
    key as the controller's `Reserved` event names them (`placer.dev/node=...`)."""
    waiting = JobSetOutcome(
        name="mixed",
        status="unschedulable",
        expected_start_seconds=3600.0,
        reserved_domains=[DomainRef(key=POOL, value="pool-0", path=[(POOL, "pool-0")])],
        reserved_nodes=["cpu-0", "cpu-1"],
        waits_for=["default/run"],
    )
    assert eta_text(waiting, NOW_S, {}) == (
        "expected start 2026-12-01T13:00:00Z on cloud.google.com/gke-nodepool=pool-0; "
        "placer.dev/node=cpu-0, cpu-1; waits for running default/run"
    )
    plain = waiting.model_copy(update={"reserved_nodes": []})
    assert eta_text(plain, NOW_S, {}) == (
        "expected start 2026-12-01T13:00:00Z on cloud.google.com/gke-nodepool=pool-0; "
        "waits for running default/run"
    )
