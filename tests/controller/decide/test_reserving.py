"""Holds and their timing: one builder of hold tokens, running JobSets dated from their pods."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from benchmarks import cluster_sim as sim
from placer.controller.decide.domains import hold_token, holds
from placer.controller.decide.planning import PlannedRound
from placer.controller.decide.reserving import running_timing
from placer.controller.decide.snapshot import planning_snapshot
from placer.controller.decide.survey import jobset_pods
from placer.model.assignment import Assignment, JobAssignment
from placer.model.cluster import RunningJobSet
from placer.model.durations import EXPECTED_DURATION
from placer.model.plan import DomainRef
from tests.controller.builders import BLOCK, TPU, controller, record, state_of, tpu_cluster

STARTED = datetime(2026, 12, 1, 4, 0, tzinfo=UTC)


def test_holds_build_every_token_and_name_its_owner() -> None:
    job = JobAssignment(domain=DomainRef(key=BLOCK, value="b0", path=[(BLOCK, "b0")]))
    found = holds(
        {"ns/a": {"a-w-1": job, "a-w-0": job}},
        {"record.ns2.c": {"c-w-0": job}, "placement.ns1.b": {"b-w-0": job}},
    )
    assert [(h.token, h.owner, h.job_name) for h in found] == [
        ("placer:ns/a-w-0", "ns/a", "a-w-0"),
        ("placer:ns/a-w-1", "ns/a", "a-w-1"),
        ("placer:placement.ns1.b:b-w-0", "ns1/b", "b-w-0"),
        ("placer:record.ns2.c:c-w-0", "ns2/c", "c-w-0"),
    ]
    assert found[0].token == hold_token("ns", "a-w-0")


def _jobset(cluster: Any, name: str, duration: str) -> None:
    obj = sim.jobset_object(name, replicated_jobs=[("w", 1, 2, {TPU: "4"})], exclusive_key=BLOCK)
    obj["metadata"]["annotations"][EXPECTED_DURATION] = duration
    cluster.create("jobsets", obj)


def test_running_timing_dates_running_jobsets_and_every_hold() -> None:
    """A running JobSet: its pods' start and its stated duration; a placement whose pods are
    bound but not started: its duration, no start; one whose pods do not exist yet: its hold
    still ends after its expected duration."""
    cluster = tpu_cluster(blocks=3)
    for name, duration in (("run", "2h"), ("bound", "30m"), ("later", "1h")):
        _jobset(cluster, name, duration)
    for name in ("run", "bound"):
        sim.create_pods(cluster, "default", name)
    controller(cluster).run_once()
    sim.schedule(cluster)
    for pod in cluster.objects("pods"):
        if pod["metadata"]["labels"].get("jobset.sigs.k8s.io/jobset-name") == "run":

            def started(obj: dict[str, Any]) -> None:
                obj["status"] = {**(obj.get("status") or {}), "startTime": "2026-12-01T04:00:00Z"}

            cluster.mutate("pods", pod["metadata"]["name"], started, namespace="default")
    records: dict[str, Any] = {}
    for name in ("run", "bound", "later"):
        placed = record(cluster, name)
        assert isinstance(placed, Assignment)
        records[f"default/{name}"] = placed.jobs
    state = state_of(cluster)
    snapshot = planning_snapshot(state, binding="gate")
    timing = running_timing(state, snapshot, holds(records, {}), jobset_pods(state))
    run = RunningJobSet(
        started_at=STARTED, expected_duration_s=7200.0, duration_source="annotation"
    )
    bound = RunningJobSet(expected_duration_s=1800.0, duration_source="annotation")
    later = RunningJobSet(expected_duration_s=3600.0, duration_source="annotation")
    assert timing["default/run"] == run and timing["default/bound"] == bound
    assert "default/later" not in timing  # not running: only its hold is dated
    assert timing[hold_token("default", "run-w-0")] == run
    assert timing[hold_token("default", "bound-w-0")] == bound
    assert timing[hold_token("default", "later-w-0")] == later


def test_a_refused_placement_becomes_unschedulable() -> None:
    a = Assignment(jobset="ns/a", jobs={}, plan_id="p")
    planned = PlannedRound(placed={"ns/a": a, "ns/b": a}, unschedulable={"ns/c": "full"})
    refused = planned.refusing({"ns/a": "would share node n-0 with the ledger's x"})
    assert list(refused.placed) == ["ns/b"]
    assert refused.unschedulable == {
        "ns/c": "full",
        "ns/a": "not committed: would share node n-0 with the ledger's x",
    }
    assert planned.refusing({}) is planned
