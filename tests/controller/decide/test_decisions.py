"""Pure decisions on a fixed `ClusterState`: review, reservations, plan_writes."""

from __future__ import annotations

import dataclasses
from typing import Any

from benchmarks.simulate import cluster_sim as sim
from placer.controller.act.memory_adapter import MemoryCluster
from placer.controller.decide.observe.domains import DomainIndex, hold_token, reserve
from placer.controller.decide.observe.snapshot import planning_snapshot
from placer.controller.decide.observe.survey import (
    Binding,
    ManagedJobSet,
    is_finished,
    is_managed,
    jobset_pods,
    survey,
)
from placer.controller.decide.observed import Announced, Observed
from placer.controller.decide.plan.planning import PlannedRound, PlanningInputs, solve_targets
from placer.controller.decide.records.ledger import Ledger
from placer.controller.decide.records.writes import EmitEvent, RecordAssignment, UngatePod, Write
from placer.controller.decide.review.holder_names import named, token_owners
from placer.controller.decide.review.review import held_records, review
from placer.controller.decide.round.writeplan import WriteSettings, plan_writes
from placer.model.assignment import ASSIGNMENT_ANNOTATION, Assignment, JobAssignment
from placer.model.options import SolveOptions
from placer.model.plan import DomainRef
from placer.solver.check.checker import check
from placer.solver.registry import get_solver
from tests.controller.builders import BLOCK, add_jobset, state_of, tpu_cluster

OPTIONS = SolveOptions()


def decide(
    cluster: MemoryCluster,
    *,
    placed_announced: Any = frozenset(),
    announced: Any = None,
    binding: Binding = "gate",
) -> tuple[list[Write], Any, Any]:
    state = state_of(cluster)
    managed = survey(state, binding=binding)
    snapshot = planning_snapshot(state, binding=binding)
    index = DomainIndex(snapshot)
    rev = review(managed, index, OPTIONS)
    inputs = PlanningInputs(
        snapshot=snapshot, index=index, options=OPTIONS, records=held_records(rev)
    )
    planned = solve_targets(rev.targets, inputs, get_solver("best-fit"))
    for plan, snap, requests in planned.plans:
        assert check(plan, snap, requests, OPTIONS) == []
    observed = Observed(
        state=state,
        ledger=Ledger(namespace="placer-system"),
        managed=tuple(managed),
        snapshot=snapshot,
        index=index,
        pods=jobset_pods(state),
    )
    writes = plan_writes(
        observed,
        rev,
        planned,
        WriteSettings(binding=binding),
        Announced(unschedulable=announced or {}, placed=frozenset(placed_announced)),
    )
    return writes, rev, planned


def claim(cluster: MemoryCluster, name: str, blocks: dict[str, str]) -> Assignment:
    a = Assignment(
        jobset=f"default/{name}",
        jobs={
            job: JobAssignment(domain=DomainRef(key=BLOCK, value=b, path=[(BLOCK, b)]))
            for job, b in blocks.items()
        },
        plan_id="p",
    )
    cluster.patch(
        "jobsets",
        name,
        {"metadata": {"annotations": {ASSIGNMENT_ANNOTATION: a.to_annotation()}}},
        namespace="default",
    )
    return a


def test_managed_and_finished() -> None:
    gated = sim.jobset_object("a", exclusive_key=BLOCK)
    labeled = sim.jobset_object("b", gate=False, exclusive_key=BLOCK, node_selector_strategy=True)
    assert is_managed(gated, "gate") and not is_managed(gated, "node-labels")
    assert is_managed(labeled, "node-labels") and not is_managed(labeled, "gate")
    assert not is_managed(
        sim.jobset_object("c", gate=False, node_selector_strategy=True), "node-labels"
    )  # no exclusive key
    assert not is_finished(gated)
    assert is_finished({**gated, "status": {"terminalState": "Failed"}})
    assert is_finished(
        {**gated, "status": {"conditions": [{"type": "Completed", "status": "True"}]}}
    )
    assert is_finished({**gated, "metadata": {"deletionTimestamp": "now"}})


def test_writes_come_record_first_then_event_then_pods() -> None:
    cluster = tpu_cluster()
    add_jobset(cluster, "a", jobs=1, pods=2)
    writes, _, planned = decide(cluster)
    assert [w.op for w in writes] == ["record", "event", "ungate", "ungate"]
    assert isinstance(writes[0], RecordAssignment)  # what the op "record" names
    assert writes[0].annotation == planned.placed["default/a"].to_annotation()


def test_a_valid_record_is_kept_and_only_its_gated_pods_are_written() -> None:
    cluster = tpu_cluster()
    add_jobset(cluster, "a", jobs=2, pods=1)
    a = claim(cluster, "a", {"a-w-0": "b2", "a-w-1": "b0"})
    writes, rev, planned = decide(cluster, placed_announced={("default/a", "p")})
    assert rev.in_force == {"default/a": a} and planned.plans == ()
    assert [
        (w.op, w.requirements[0]["values"] if isinstance(w, UngatePod) else None) for w in writes
    ] == [
        ("ungate", ["b2"]),
        ("ungate", ["b0"]),
    ]


def test_pods_of_an_older_restart_attempt_are_left_alone() -> None:
    cluster = tpu_cluster()
    add_jobset(cluster, "a", jobs=1, pods=1)
    claim(cluster, "a", {"a-w-0": "b1"})

    def restarted(obj: dict[str, Any]) -> None:
        obj["status"] = {"restarts": 1}

    cluster.mutate("jobsets", "a", restarted, namespace="default")
    writes, _, _ = decide(cluster, placed_announced={("default/a", "p")})
    assert writes == []


def test_a_pod_being_deleted_is_not_ungated() -> None:
    """A gated pod with a deletion timestamp is on its way out (its Job is replacing it): an
    ungate patch to it would only race the deletion, so only its sibling is written."""
    cluster = tpu_cluster()
    add_jobset(cluster, "a", jobs=2, pods=1)
    claim(cluster, "a", {"a-w-0": "b2", "a-w-1": "b0"})
    first, second = _pod_names(cluster)

    def deleting(obj: dict[str, Any]) -> None:
        obj["metadata"]["deletionTimestamp"] = "2026-12-04T00:00:00Z"

    cluster.mutate("pods", first, deleting, namespace="default")
    writes, _, _ = decide(cluster, placed_announced={("default/a", "p")})
    assert [(w.op, w.name) for w in writes if isinstance(w, UngatePod)] == [("ungate", second)]


def _pod_names(cluster: MemoryCluster) -> list[str]:
    return sorted(p["metadata"]["name"] for p in cluster.list("pods", namespace="default").items)


def test_a_record_for_another_object_is_ignored() -> None:
    cluster = tpu_cluster()
    add_jobset(cluster, "a", jobs=1, pods=1)
    copied = Assignment(jobset="default/elsewhere", jobs={}).to_annotation()
    cluster.patch(
        "jobsets",
        "a",
        {"metadata": {"annotations": {ASSIGNMENT_ANNOTATION: copied}}},
        namespace="default",
    )
    [ms] = survey(state_of(cluster), binding="gate")
    assert ms.assignment is None and ms.annotation == copied
    writes, _, planned = decide(cluster)
    assert "default/a" in planned.placed
    assert isinstance(writes[0], RecordAssignment)
    assert writes[0].previous == copied  # the rebase premise


def test_broken_child_job_becomes_a_partial_target() -> None:
    cluster = tpu_cluster(blocks=3)
    add_jobset(cluster, "a", jobs=2, pods=2)
    claim(cluster, "a", {"a-w-0": "b0", "a-w-1": "b1"})
    sim.set_node(cluster, "n-1-1", unschedulable=True)
    _, rev, planned = decide(cluster)
    assert rev.broken == {"default/a": {"a-w-1": "domain b1 fits 1 of 2 pods (1 cordoned)"}}
    [target] = rev.targets
    assert target.partial and set(target.keep) == {"a-w-0"}
    assert [(rj.name, rj.replicas) for rj in target.request.replicated_jobs] == [("w", 1)]
    new = planned.placed["default/a"]
    assert new.jobs["a-w-0"].domain.value == "b0"
    assert new.jobs["a-w-1"].domain.value == "b2"


def test_partial_repair_that_does_not_fit_falls_back_to_the_whole_jobset() -> None:
    cluster = tpu_cluster(blocks=3)
    add_jobset(cluster, "a", jobs=2, pods=2)
    add_jobset(cluster, "b", jobs=1, pods=2)
    claim(cluster, "a", {"a-w-0": "b0", "a-w-1": "b1"})
    claim(cluster, "b", {"b-w-0": "b2"})
    # b1 loses a node; b0's healthy child Job keeps b0, but nothing else is free: the JobSet is
    # re-planned whole (it may reuse its own b0), and still does not fit.
    sim.set_node(cluster, "n-1-1", ready=False)
    _, rev, planned = decide(cluster, placed_announced={("default/b", "p")})
    assert set(rev.broken) == {"default/a"}
    assert "default/a" in planned.unschedulable and len(planned.plans) == 2
    whole = planned.plans[1][2]
    assert [(r.key, r.replicated_jobs[0].replicas) for r in whole] == [("default/a", 2)]


def test_reservations_close_held_domains_to_everyone() -> None:
    cluster = tpu_cluster(blocks=2)
    snapshot = planning_snapshot(state_of(cluster), binding="gate")
    held = reserve(snapshot, {"n-0-0": [hold_token("default", "a-w-0")]})
    assert held.node("n-0-0").jobsets == ("placer:default/a-w-0",)
    assert held.node("n-0-1").jobsets == ()
    assert reserve(snapshot, {}) is snapshot


def test_unschedulable_event_only_when_the_reason_changes() -> None:
    cluster = tpu_cluster(blocks=1)
    add_jobset(cluster, "a", jobs=2)
    writes, _, planned = decide(cluster)
    reason = planned.unschedulable["default/a"]
    assert [w.op for w in writes] == ["event"]
    assert isinstance(writes[0], EmitEvent)  # what the op "event" names
    again, _, _ = decide(cluster, announced={"default/a": writes[0].body["message"]})
    assert again == [] and reason


def test_an_unschedulable_reason_longer_than_an_event_is_not_sent_again() -> None:
    """An Event keeps the first 1,024 characters of a reason; the controller remembers what it
    sent, so a longer reason (every taint of a big fleet counted) compared in full differed each
    cycle and was sent again at every re-plan."""
    cluster = tpu_cluster(blocks=40)
    for b in range(39):
        for i in range(2):

            def dedicate(obj: dict[str, Any], b: int = b) -> None:
                value = f"a-long-reserved-team-name-number-{b:02d}"
                taint = {"key": "dedicated", "value": value, "effect": "NoSchedule"}
                obj["spec"].setdefault("taints", []).append(taint)

            cluster.mutate("nodes", f"n-{b}-{i}", dedicate)
    add_jobset(cluster, "a", jobs=2)
    writes, rev, planned = decide(cluster)
    reason = named(planned.unschedulable["default/a"], token_owners(rev))
    [event] = [w for w in writes if w.op == "event" and w.jobset == "default/a"]
    assert len(reason) > 1024 and event.body["message"] == reason[:1024]
    again, _, _ = decide(cluster, announced={"default/a": event.body["message"]})
    assert [w for w in again if w.op == "event" and w.jobset == "default/a"] == []


def test_an_unschedulable_event_names_the_jobsets_holding_domains_not_hold_tokens() -> None:
    """The planner sees a recorded child Job's domain taken through a hold token
    (`placer:<namespace>/<job>`), beside the JobSet key of pods bound there: the Event a user
    reads says which JobSets hold how many domains, each once."""
    cluster = tpu_cluster(blocks=3)
    add_jobset(cluster, "run", jobs=2)
    claim(cluster, "run", {"run-w-0": "b0", "run-w-1": "b1"})
    sim.schedule(cluster)
    add_jobset(cluster, "wide", jobs=3)
    writes, _, planned = decide(cluster)
    assert "held by running placer:default/run-w-0" in planned.unschedulable["default/wide"]
    [event] = [w for w in writes if w.op == "event" and w.jobset == "default/wide"]
    message = event.body["message"]
    assert "placer:" not in message
    assert "2 held by running default/run" in message, message


def test_finished_jobsets_hold_nothing() -> None:
    cluster = tpu_cluster(blocks=1)
    add_jobset(cluster, "a", jobs=1)
    claim(cluster, "a", {"a-w-0": "b0"})
    sim.finish(cluster, "default", "a")
    add_jobset(cluster, "b", jobs=1)
    _, rev, planned = decide(cluster)
    assert rev.in_force == {} and list(planned.placed) == ["default/b"]


def test_survey_reads_invalid_manifests_as_errors() -> None:
    cluster = tpu_cluster(blocks=1)
    bad = sim.jobset_object("bad", exclusive_key=BLOCK)
    bad["spec"]["replicatedJobs"][0]["replicas"] = -1
    cluster.create("jobsets", bad)
    [ms] = survey(state_of(cluster), binding="gate")
    assert isinstance(ms, ManagedJobSet) and ms.request is None and "replicas" in ms.error
    writes, rev, _ = decide(cluster)
    assert "default/bad" in rev.invalid and [w.op for w in writes] == ["event"]
    assert isinstance(PlannedRound().placed, dict)


def test_a_jobset_being_evicted_is_neither_held_nor_planned() -> None:
    """While its eviction runs (the ledger records it), a JobSet's record holds nothing and it is
    not planned again until the eviction ends; the others are judged as usual."""
    cluster = tpu_cluster()
    add_jobset(cluster, "kept", jobs=1, pods=1)
    add_jobset(cluster, "new", jobs=1, pods=1)
    add_jobset(cluster, "victim", jobs=1, pods=1)
    claim(cluster, "kept", {"kept-w-0": "b1"})
    claim(cluster, "victim", {"victim-w-0": "b0"})
    state = state_of(cluster)
    managed = [
        dataclasses.replace(ms, evicting=ms.key == "default/victim")
        for ms in survey(state, binding="gate")
    ]
    rev = review(managed, DomainIndex(planning_snapshot(state, binding="gate")), OPTIONS)
    assert set(rev.in_force) == {"default/kept"}
    assert [t.managed.key for t in rev.targets] == ["default/new"]
