"""Holds and their timing (one builder of hold tokens, running JobSets dated from their pods),
and the ledger changes a round's reservations make."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from benchmarks.simulate import cluster_sim as sim
from placer.controller.decide.observe.domains import hold_token, holds
from placer.controller.decide.observe.snapshot import planning_snapshot
from placer.controller.decide.observe.survey import ManagedJobSet, jobset_pods
from placer.controller.decide.plan.planning import PlannedRound
from placer.controller.decide.plan.reserving import (
    ReservationChanges,
    reservation_changes,
    running_timing,
    snapshot_reservations,
)
from placer.controller.decide.records.ledger import RESERVATION, LedgerEntry, entry_key
from placer.model.assignment import Assignment, JobAssignment
from placer.model.cluster import NODE_RESERVATION_KEY, RunningJobSet
from placer.model.durations import EXPECTED_DURATION
from placer.model.options import TimePolicy
from placer.model.plan import DomainRef, JobSetOutcome, Plan, SolverReport
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


POOL = "cloud.google.com/gke-nodepool"


def _waiting(
    reserved: list[DomainRef],
    start_s: float,
    *,
    past_max_wait: bool = False,
    nodes: tuple[str, ...] = (),
) -> tuple[Plan, ManagedJobSet]:
    """A plan reserving `reserved` (and `nodes`) from `start_s` for `default/wide`, and the
    JobSet as the survey sees it: waiting, no record."""
    outcome = JobSetOutcome(
        name="wide",
        status="unschedulable",
        expected_start_seconds=start_s,
        reserved_domains=reserved,
        reserved_nodes=list(nodes),
        past_max_wait=past_max_wait,
    )
    plan = Plan(solver=SolverReport(name="best-fit", status="HEURISTIC"), jobsets=[outcome])
    ms = ManagedJobSet(
        obj={"metadata": {"name": "wide", "namespace": "default", "uid": "u1"}},
        request=None,
        error="",
        assignment=None,
        annotation=None,
        finished=False,
        suspended=False,
        restarts=0,
        pods=(),
    )
    return plan, ms


KEY = entry_key(RESERVATION, "default/wide")


def _changes(
    reserved: list[DomainRef],
    start_s: float,
    old: LedgerEntry | None,
    *,
    past_max_wait: bool = False,
    nodes: tuple[str, ...] = (),
) -> ReservationChanges:
    """The ledger changes of one round reserving `reserved`, after a round that left `old`."""
    plan, ms = _waiting(reserved, start_s, past_max_wait=past_max_wait, nodes=nodes)
    ledger = {KEY: old} if old is not None else {}
    return reservation_changes([plan], [ms], ledger, 1_000_000.0, TimePolicy())


def _paths(entry: LedgerEntry) -> list[list[tuple[str, str]]]:
    return sorted(j.domain.path for j in entry.record.jobs.values() if j.domain is not None)


NESTED = [
    DomainRef(key=POOL, value="p0", path=[(BLOCK, "B0"), (POOL, "p0")]),
    DomainRef(key=POOL, value="p1", path=[(BLOCK, "B0"), (POOL, "p1")]),
]
FLAT = [DomainRef(key=POOL, value=d.value, path=[(POOL, d.value)]) for d in NESTED]


@pytest.mark.parametrize(("before", "after"), [(NESTED, FLAT), (FLAT, NESTED)])
def test_a_reservation_named_under_other_levels_is_rewritten_not_announced(
    before: list[DomainRef], after: list[DomainRef]
) -> None:
    """A JobSet exclusive per block left the queue (or came): the pools are the same, so no
    second `Reserved` event; the ledger takes this round's names."""
    old = _changes(before, 3600.0, None).put[KEY]
    changes = _changes(after, 3600.0, old)
    assert not changes.announce
    assert _paths(changes.put[KEY]) == sorted(d.path for d in after)
    # the same names and start: nothing written
    assert not _changes(before, 3600.0, old).put


def test_a_reservation_moved_to_other_domains_is_announced() -> None:
    old = _changes(NESTED, 3600.0, None).put[KEY]
    other = [NESTED[0], DomainRef(key=POOL, value="p2", path=[(POOL, "p2")])]
    assert KEY in _changes(other, 3600.0, old).announce
    # a pool of the same name in another block is another domain
    elsewhere = [NESTED[0], DomainRef(key=POOL, value="p1", path=[(BLOCK, "B1"), (POOL, "p1")])]
    assert KEY in _changes(elsewhere, 3600.0, old).announce


def test_a_reservation_whose_jobset_passes_the_maximum_wait_is_rewritten_and_kept_so() -> None:
    """The extender guards a JobSet past `--max-wait` from now on, reading it from the ledger:
    the entry says so once the plan does (rewritten, no second `Reserved` event), the flag
    survives the ConfigMap's text, and an unchanged round writes nothing."""
    old = _changes(NESTED, 3600.0, None).put[KEY]
    assert not old.past_max_wait
    changes = _changes(NESTED, 3600.0, old, past_max_wait=True)
    assert not changes.announce
    late = changes.put[KEY]
    assert late.past_max_wait
    assert LedgerEntry.from_text(late.to_text()).past_max_wait
    assert not LedgerEntry.from_text(old.to_text()).past_max_wait
    assert not _changes(NESTED, 3600.0, late, past_max_wait=True).put


def test_reserved_nodes_are_recorded_with_the_domains_and_read_back() -> None:
    """The nodes a JobSet's pods without an exclusive key are to take at its start go in the
    ledger with its domains: a restarted controller still keeps longer runs off them; a round
    moving them to another node announces the move as for a domain."""
    old = _changes(FLAT, 3600.0, None, nodes=("cpu-0", "cpu-1")).put[KEY]
    stored = LedgerEntry.from_text(old.to_text())  # as the ledger's ConfigMap keeps it
    read = snapshot_reservations([stored], 1_000_000.0 + 600.0)
    assert sorted((r.key, r.path, r.start_s) for r in read) == [
        *[(POOL, ((POOL, d.value),), 3000.0) for d in FLAT],
        *[(NODE_RESERVATION_KEY, ((NODE_RESERVATION_KEY, n),), 3000.0) for n in ("cpu-0", "cpu-1")],
    ]
    assert not _changes(FLAT, 3600.0, old, nodes=("cpu-0", "cpu-1")).put
    assert KEY in _changes(FLAT, 3600.0, old, nodes=("cpu-0", "cpu-2")).announce
