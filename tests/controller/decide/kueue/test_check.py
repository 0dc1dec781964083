"""Placer as a Kueue AdmissionCheck, the pure decisions: which Workloads placer serves, what each
cycle does with their JobSets, and the exact check state and message it writes."""

from __future__ import annotations

import dataclasses
import re
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchmarks.simulate import cluster_sim as sim
from placer.controller.act.memory_adapter import MemoryCluster
from placer.controller.adapter import Obj, copy_json
from placer.controller.decide.kueue.check import (
    PLACEMENT_ANNOTATION,
    CheckUpdate,
    check_updates,
    kueue_admission,
    pod_set_updates,
    release_evicted,
)
from placer.controller.decide.kueue.eta import estimate_behind
from placer.controller.decide.observe.domains import DomainIndex, hold_token
from placer.controller.decide.observe.kueue import CONTROLLER_NAME, KueueView, read_kueue
from placer.controller.decide.observe.snapshot import planning_snapshot
from placer.controller.decide.observe.state import ClusterState
from placer.controller.decide.observe.survey import ManagedJobSet, survey
from placer.controller.decide.plan.planning import (
    PlannedRound,
    PlanningInputs,
    planning_inputs,
    solve_targets,
)
from placer.controller.decide.records.ledger import PLACEMENT, entry_key
from placer.controller.decide.records.writes import Aborted, ActivateCheck, SetAdmissionCheck
from placer.controller.decide.review.holder_names import named
from placer.controller.decide.review.ledgerplan import LedgerView
from placer.controller.decide.review.review import Review, review
from placer.model.assignment import Assignment, JobAssignment
from placer.model.cluster import NODE_RESERVATION_KEY, DomainReservation
from placer.model.durations import EXPECTED_DURATION
from placer.model.options import SolveOptions, TimePolicy
from placer.model.plan import DomainRef
from placer.solver.check.checker import check
from placer.solver.registry import get_solver
from tests import strategies
from tests.controller.builders import (
    BLOCK,
    TPU,
    add_jobset,
    block_of,
    on_blocks,
    reviewed_of,
    state_of,
    tpu_cluster,
)

NOW = datetime(2026, 12, 1, 12, 0, 0, tzinfo=UTC)
NOW_S = NOW.timestamp()
NOW_TEXT = "2026-12-01T12:00:00Z"
OPTIONS = SolveOptions(time=TimePolicy(reservations="head"))
CHECK = "placer"


def admission_check(name: str = CHECK, **spec: Any) -> Obj:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "AdmissionCheck",
        "metadata": {"name": name, "uid": f"uid-{name}"},
        "spec": {"controllerName": CONTROLLER_NAME, **spec},
    }


def workload(
    jobset: str,
    pod_sets: list[tuple[str, int]],
    *,
    name: str = "",
    state: str = "Pending",
    reserved_at: str | None = "2026-12-01T11:59:00Z",
    evicted: bool = False,
    owner_kind: str = "JobSet",
    owner: bool = True,
    priority: int | None = None,
    message: str = "",
    check: str = CHECK,
) -> Obj:
    conditions = []
    if reserved_at is not None:
        conditions.append(
            {"type": "QuotaReserved", "status": "True", "lastTransitionTime": reserved_at}
        )
    if evicted:
        conditions.append({"type": "Evicted", "status": "True", "lastTransitionTime": NOW_TEXT})
    wl: Obj = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": name or f"jobset-{jobset}-1234",
            "namespace": "default",
            "uid": f"wl-{jobset}",
            "resourceVersion": "7",
            "ownerReferences": (
                [{"kind": owner_kind, "name": jobset, "controller": True, "uid": "x"}]
                if owner
                else []
            ),
        },
        "spec": {"podSets": [{"name": n, "count": c, "template": {}} for n, c in pod_sets]},
        "status": {
            "conditions": conditions,
            "admissionChecks": [
                {
                    "name": check,
                    "state": state,
                    "message": message,
                    "lastTransitionTime": "2026-12-01T11:59:00Z",
                }
            ],
        },
    }
    if priority is not None:
        wl["spec"]["priority"] = priority
    return wl


def suspended_jobset(cluster: MemoryCluster, name: str, *, jobs: int = 2, pods: int = 2) -> None:
    add_jobset(cluster, name, jobs=jobs, pods=pods, pods_now=False)

    def suspend(obj: Obj) -> None:
        obj["spec"]["suspend"] = True

    cluster.mutate("jobsets", name, suspend, namespace="default")


def running_jobset(cluster: MemoryCluster, name: str, blocks: list[int], hours: int) -> None:
    """A JobSet (not managed) running on whole blocks since NOW - 1h, expected to run `hours`."""
    obj = sim.jobset_object(
        name, replicated_jobs=[("w", len(blocks), 2, {TPU: "4"})], exclusive_key=BLOCK, gate=False
    )
    obj["metadata"]["annotations"][EXPECTED_DURATION] = f"{hours}h"
    cluster.create("jobsets", obj)
    pods = sorted(sim.create_pods(cluster, "default", name), key=lambda p: p["metadata"]["name"])
    for i, pod in enumerate(pods):
        node = f"n-{blocks[i // 2]}-{i % 2}"

        def bind(o: Obj, node: str = node) -> None:
            o["spec"]["nodeName"] = node
            o["status"] = {"phase": "Running", "startTime": "2026-12-01T11:00:00Z"}

        cluster.mutate("pods", pod["metadata"]["name"], bind, namespace="default")


def with_kueue(
    state: ClusterState, *workloads: Obj, checks: list[Obj] | None = None
) -> ClusterState:
    return dataclasses.replace(
        state,
        workloads={("default", w["metadata"]["name"]): w for w in workloads},
        admission_checks={c["metadata"]["name"]: c for c in checks or [admission_check()]},
    )


@dataclasses.dataclass
class Cycle:
    view: KueueView
    managed: tuple[ManagedJobSet, ...]
    rev: Review
    planned: PlannedRound
    updates: list[CheckUpdate]
    release: frozenset[str]


def cycle(
    state: ClusterState, *, hold_s: float = 300.0, ledger: dict[str, Any] | None = None
) -> Cycle:
    """One cycle's decisions as the controller makes them, the plans checked."""
    entries = ledger or {}
    managed = survey(state, binding="gate")
    managed = [
        dataclasses.replace(ms, assignment=entries[ms.key], committed=True)
        if ms.key in entries
        else ms
        for ms in managed
    ]
    view = read_kueue(state, {ms.key: ms.request for ms in managed}, now=NOW_TEXT)
    adm = kueue_admission(managed, view)
    snapshot = planning_snapshot(state, binding="gate")
    rev = review(adm.managed, DomainIndex(snapshot), OPTIONS, admit=adm.admit)
    reviewed = reviewed_of(state, adm.managed, rev, OPTIONS, wall_s=NOW_S, kueue=view)
    inputs = planning_inputs(reviewed, pinned=False)
    solver = get_solver("best-fit", time_policy=inputs.options.time)
    planned = estimate_behind(reviewed, inputs, solve_targets(rev.targets, inputs, solver))
    for plan, snap, requests in planned.plans:
        assert check(plan, snap, requests, inputs.options) == []
    updates = check_updates(
        view, adm.managed, rev, planned, committed=True, now_s=NOW_S, hold_s=hold_s
    )
    return Cycle(view, adm.managed, rev, planned, updates, adm.release)


def only(updates: list[CheckUpdate]) -> CheckUpdate:
    assert len(updates) == 1, updates
    return updates[0]


def test_a_reserved_workload_is_admitted_with_its_placement() -> None:
    cluster = tpu_cluster(blocks=3)
    suspended_jobset(cluster, "a", jobs=2)
    c = cycle(with_kueue(state_of(cluster), workload("a", [("w", 4)])))
    record = c.planned.placed["default/a"]
    blocks = sorted(j.domain.value for j in record.jobs.values() if j.domain)
    assert len(set(blocks)) == 2
    update = only(c.updates)
    assert update.state == "Ready"
    assert update.message == f"placed (plan {record.plan_id}) on {BLOCK}={', '.join(blocks)}"
    # two child Jobs on two blocks share no domain: an annotation, no nodeSelector
    assert update.pod_set_updates == (
        {
            "name": "w",
            "annotations": {PLACEMENT_ANNOTATION: f"{record.plan_id} {BLOCK}={', '.join(blocks)}"},
        },
    )
    entry = update.entry(NOW_TEXT)
    assert entry["name"] == CHECK and entry["lastTransitionTime"] == NOW_TEXT
    assert "requeueAfterSeconds" not in entry


def test_one_domain_for_a_whole_pod_set_becomes_a_node_selector() -> None:
    cluster = tpu_cluster(blocks=2)
    suspended_jobset(cluster, "a", jobs=1)
    c = cycle(with_kueue(state_of(cluster), workload("a", [("w", 2)])))
    [job] = c.planned.placed["default/a"].jobs.values()
    assert job.domain is not None
    [podset] = only(c.updates).pod_set_updates
    assert podset["nodeSelector"] == {BLOCK: job.domain.value}


def test_a_finished_jobsets_workload_is_left_to_kueue() -> None:
    """The JobSet completed while its Workload still shows reserved quota (Kueue has not caught
    up): nothing is planned for it and its check is not written."""
    cluster = tpu_cluster(blocks=3)
    suspended_jobset(cluster, "a", jobs=1)

    def completed(obj: Obj) -> None:
        obj["status"] = {"conditions": [{"type": "Completed", "status": "True"}]}

    cluster.mutate("jobsets", "a", completed, namespace="default")
    c = cycle(with_kueue(state_of(cluster), workload("a", [("w", 2)])))
    assert c.planned.placed == {} and c.updates == []


def test_a_pod_set_with_a_child_job_outside_any_domain_gets_no_node_selector() -> None:
    """A node selector binds every pod of the PodSet: with one child Job on block b0 and the
    other on nodes without a domain, selecting b0 would move the second, so only the annotation
    is given."""
    request = strategies.jobset("a", strategies.rjob("w", replicas=2, exclusive=BLOCK))
    names = [name for _, _, name in request.child_jobs()]
    b0 = DomainRef(key=BLOCK, value="b0", path=[(BLOCK, "b0")])
    whole = Assignment(jobset=request.key, jobs=dict.fromkeys(names, JobAssignment(domain=b0)))
    [update] = pod_set_updates(whole, request)
    assert update["nodeSelector"] == {BLOCK: "b0"}
    mixed = whole.model_copy(
        update={
            "jobs": {names[0]: JobAssignment(domain=b0), names[1]: JobAssignment(nodes={0: "n"})}
        }
    )
    [update] = pod_set_updates(mixed, request)
    assert "nodeSelector" not in update
    assert update["annotations"] == {PLACEMENT_ANNOTATION: f"placed {BLOCK}=b0"}


def test_a_suspended_jobset_without_reserved_quota_is_not_planned_but_told_its_eta() -> None:
    cluster = tpu_cluster(blocks=3)
    suspended_jobset(cluster, "a")
    c = cycle(with_kueue(state_of(cluster), workload("a", [("w", 4)], reserved_at=None)))
    assert c.rev.targets == [] and c.planned.placed == {}
    assert c.view.workloads["default/a"].stage == "waiting"
    update = only(c.updates)
    assert (update.state, update.requeue_after_s, update.pod_set_updates) == ("Pending", None, ())
    assert update.message == (
        "waits for Kueue to reserve quota; placer places it once Kueue does; "
        "were quota reserved now: room for it now"
    )


def test_without_quota_its_eta_counts_what_runs_and_what_the_round_placed() -> None:
    cluster = tpu_cluster(blocks=3)
    running_jobset(cluster, "r", [0], hours=3)  # started 1h ago: b0 busy for 2h more
    suspended_jobset(cluster, "first", jobs=2)  # quota reserved: placed now on b1, b2
    suspended_jobset(cluster, "later", jobs=2)
    c = cycle(
        with_kueue(
            state_of(cluster),
            workload("first", [("w", 4)]),
            workload("later", [("w", 4)], reserved_at=None),
        )
    )
    assert set(c.planned.placed) == {"default/first"}
    [quota] = [u for u in c.updates if u.workload.jobset == "default/later"]
    # were its quota reserved now: b0 frees when r ends (in 2h), b1 and b2 when first, placed
    # now for the default 4h, ends; two blocks at once only then
    assert OPTIONS.time.default_duration_s == 4 * 3600
    assert c.planned.behind["default/later"].expected_start_seconds == 4 * 3600
    assert (quota.state, quota.requeue_after_s) == ("Pending", None)
    assert quota.message == (
        "waits for Kueue to reserve quota; placer places it once Kueue does; "
        "were quota reserved now: expected start 2026-12-01T16:00:00Z; waits for running default/r"
    )


def test_without_quota_a_jobset_that_never_fits_is_told_why() -> None:
    cluster = tpu_cluster(blocks=3)
    running_jobset(cluster, "r", [0, 1, 2], hours=3)
    suspended_jobset(cluster, "big", jobs=4)  # four whole blocks, of three
    c = cycle(with_kueue(state_of(cluster), workload("big", [("w", 8)], reserved_at=None)))
    assert c.planned.behind["default/big"].expected_start_seconds is None
    assert only(c.updates).message == (
        "waits for Kueue to reserve quota; placer places it once Kueue does; "
        "were quota reserved now: it can never be placed, not even on an empty cluster: "
        f"w: needs 4 domains of {BLOCK} for 2 pods of {{google.com/tpu: 4}}; 3 available of 3"
    )


def test_a_quota_wait_message_already_written_is_not_estimated_again_without_a_plan() -> None:
    cluster = tpu_cluster(blocks=3)
    suspended_jobset(cluster, "a")
    first = only(
        cycle(with_kueue(state_of(cluster), workload("a", [("w", 4)], reserved_at=None))).updates
    )
    wl = workload("a", [("w", 4)], reserved_at=None)
    wl["status"]["admissionChecks"] = [first.entry(NOW_TEXT)]
    again = cycle(with_kueue(state_of(cluster), wl))
    assert again.planned.behind == {} and again.updates == []


def test_no_room_now_stays_pending_with_when_where_and_whom_it_waits_for() -> None:
    cluster = tpu_cluster(blocks=3)
    running_jobset(cluster, "r", [0, 1], hours=3)  # started 1h ago: ends in 2h
    suspended_jobset(cluster, "a", jobs=2)
    c = cycle(with_kueue(state_of(cluster), workload("a", [("w", 4)])))
    assert "default/a" not in c.planned.placed
    update = only(c.updates)
    assert update.state == "Pending"
    assert update.requeue_after_s is None
    reason = c.planned.unschedulable["default/a"]
    assert update.message.startswith(f"no room for a placement now: {reason}; ")
    assert "; expected start 2026-12-01T14:00:00Z on " in update.message
    assert update.message.endswith("; waits for running default/r")
    assert f" on {BLOCK}=" in update.message


def test_past_the_hold_it_gives_the_quota_back_until_its_expected_start() -> None:
    cluster = tpu_cluster(blocks=3)
    running_jobset(cluster, "r", [0, 1], hours=3)
    suspended_jobset(cluster, "a", jobs=2)
    state = with_kueue(
        state_of(cluster), workload("a", [("w", 4)], reserved_at="2026-12-01T11:50:00Z")
    )
    held = cycle(state, hold_s=300.0)
    update = only(held.updates)
    assert update.state == "Retry"
    assert update.requeue_after_s == 7200
    assert update.message.endswith("; quota held 10m, over the 5m hold: Retry, requeue in 2h")
    assert update.entry(NOW_TEXT)["requeueAfterSeconds"] == 7200
    # within the hold it is still Pending
    assert only(cycle(state, hold_s=900.0).updates).state == "Pending"


def test_rejected_only_when_it_never_fits_even_on_an_empty_cluster() -> None:
    cluster = tpu_cluster(blocks=3)
    suspended_jobset(cluster, "big", jobs=4)
    c = cycle(with_kueue(state_of(cluster), workload("big", [("w", 8)])))
    update = only(c.updates)
    assert update.state == "Rejected"
    reason = c.planned.unschedulable["default/big"]
    assert update.message == f"can never be placed, not even on an empty cluster: {reason}"


def _only_v6e(cluster: MemoryCluster, name: str) -> None:
    """A nodeSelector for v6e slices, which no node of `tpu_cluster` is."""

    def v6e_only(obj: Obj) -> None:
        for rj in obj["spec"]["replicatedJobs"]:
            pod = rj["template"]["spec"]["template"]["spec"]
            pod["nodeSelector"] = {"cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice"}

    cluster.mutate("jobsets", name, v6e_only, namespace="default")


def test_rejected_names_the_rule_that_holds_for_good_not_who_runs_now() -> None:
    """Every block held by a running JobSet, and a JobSet whose nodeSelector no node matches:
    Kueue deactivates the Workload on this message, so it names the nodeSelector, not the
    running JobSet that holds the blocks today (waiting for it would not help)."""
    cluster = tpu_cluster(blocks=3)
    running_jobset(cluster, "r", [0, 1, 2], hours=3)
    suspended_jobset(cluster, "v6e", jobs=2)
    _only_v6e(cluster, "v6e")
    c = cycle(with_kueue(state_of(cluster), workload("v6e", [("w", 4)])))
    update = only(c.updates)
    assert update.state == "Rejected"
    assert update.message.startswith("can never be placed, not even on an empty cluster: w: ")
    assert "3 not matching nodeSelector cloud.google.com/gke-tpu-accelerator=tpu-v6e-slice" in (
        update.message
    )
    assert "default/r" not in update.message


def test_a_committed_placement_turns_ready_without_planning_again() -> None:
    """A controller restarted between the ledger commit and Ready: the entry is in force, the
    check turns Ready with it, nothing is planned (no second placement)."""
    cluster = tpu_cluster(blocks=3)
    suspended_jobset(cluster, "a", jobs=2)
    record = on_blocks("default/a", {"a-w-0": "b1", "a-w-1": "b2"})
    state = with_kueue(state_of(cluster), workload("a", [("w", 4)]))
    c = cycle(state, ledger={"default/a": record})
    assert c.rev.targets == [] and c.planned.plans == ()
    update = only(c.updates)
    assert update.state == "Ready"
    assert update.message == f"placed (plan p) on {BLOCK}=b1, b2"


def test_an_unchanged_check_is_not_written_again() -> None:
    cluster = tpu_cluster(blocks=3)
    suspended_jobset(cluster, "a", jobs=2)
    record = on_blocks("default/a", {"a-w-0": "b1", "a-w-1": "b2"})
    wl = workload("a", [("w", 4)])
    first = only(cycle(with_kueue(state_of(cluster), wl), ledger={"default/a": record}).updates)
    wl["status"]["admissionChecks"] = [first.entry(NOW_TEXT)]
    wl["status"]["admissionChecks"][0]["state"] = "Pending"  # Kueue has not read it yet
    again = cycle(with_kueue(state_of(cluster), wl), ledger={"default/a": record})
    assert only(again.updates).entry(NOW_TEXT)["lastTransitionTime"] == NOW_TEXT
    wl["status"]["admissionChecks"] = [first.entry("2026-12-01T11:00:00Z")]
    done = cycle(with_kueue(state_of(cluster), wl), ledger={"default/a": record})
    assert done.updates == []


def test_an_evicted_workload_frees_its_domains_and_its_old_record() -> None:
    cluster = tpu_cluster(blocks=3)
    suspended_jobset(cluster, "a", jobs=2)
    record = on_blocks("default/a", {"a-w-0": "b1", "a-w-1": "b2"})
    wl = workload("a", [("w", 4)], state="Pending", evicted=True)
    c = cycle(with_kueue(state_of(cluster), wl), ledger={"default/a": record})
    key = entry_key(PLACEMENT, "default/a")
    assert c.release == frozenset({key})
    [ms] = c.managed
    assert ms.assignment is None and not ms.committed
    assert c.rev.targets == [] and "default/a" not in c.rev.in_force
    # waiting for quota again: the check stays Pending, telling when it would start
    assert only(c.updates).state == "Pending"
    assert only(c.updates).message.startswith("waits for Kueue to reserve quota; ")
    view = release_evicted(LedgerView(foreign={key: record.jobs}), c.release)
    assert view.release == {key} and key not in view.foreign


def _readmitted(record: dict[str, str]) -> tuple[Review, PlanningInputs]:
    """A JobSet Kueue re-admitted, its record annotation (of its earlier admission) on
    `record`'s blocks, nothing in the ledger; what review and planning make of it."""
    cluster = tpu_cluster(blocks=3)
    suspended_jobset(cluster, "a", jobs=2)
    state = with_kueue(state_of(cluster), workload("a", [("w", 4)]))
    managed = [
        dataclasses.replace(ms, assignment=on_blocks(ms.key, record))
        for ms in survey(state, binding="gate")
    ]
    view = read_kueue(state, {ms.key: ms.request for ms in managed}, now=NOW_TEXT)
    adm = kueue_admission(managed, view)
    assert adm.admit == {"default/a"}
    snapshot = planning_snapshot(state, binding="gate")
    rev = review(adm.managed, DomainIndex(snapshot), OPTIONS, admit=adm.admit)
    reviewed = reviewed_of(state, adm.managed, rev, OPTIONS, wall_s=NOW_S)
    return rev, planning_inputs(reviewed, pinned=False)


def test_a_readmitted_jobset_whose_old_domains_are_free_is_restored_without_solving() -> None:
    rev, inputs = _readmitted({"a-w-0": "b1", "a-w-1": "b2"})
    [target] = rev.targets
    assert target.restore and set(target.keep) == {"a-w-0", "a-w-1"}
    planned = solve_targets(rev.targets, inputs, get_solver("best-fit"))
    assert planned.plans == ()
    record = planned.placed["default/a"]
    assert {n: j.domain.value for n, j in record.jobs.items() if j.domain} == {
        "a-w-0": "b1",
        "a-w-1": "b2",
    }


@pytest.mark.parametrize("alone", [False, True], ids=["domain", "node"])
def test_a_readmitted_jobset_whose_old_domain_is_reserved_for_another_is_planned_anew(
    alone: bool,
) -> None:
    """Block b2 reserved for another JobSet, or one of its nodes alone (another JobSet's
    coordinator at its later start): before, the restore looked a node reservation up as a
    label, found no node, and restored the record onto it without solving."""
    rev, inputs = _readmitted({"a-w-0": "b1", "a-w-1": "b2"})
    node = inputs.index.members(DomainRef(key=BLOCK, value="b2"))[0]
    key, value = (NODE_RESERVATION_KEY, node) if alone else (BLOCK, "b2")
    reservation = DomainReservation(
        jobset="default/other", key=key, path=((key, value),), start_s=600.0, end_s=4200.0
    )
    snapshot = inputs.snapshot.model_copy(update={"reservations": (reservation,)})
    inputs = dataclasses.replace(inputs, snapshot=snapshot)
    planned = solve_targets(rev.targets, inputs, get_solver("best-fit"))
    assert len(planned.plans) == 1  # solved, not restored
    plan, snap, requests = planned.plans[0]
    assert check(plan, snap, requests, OPTIONS) == []
    [request] = requests
    assert request.key == "default/a"
    placed = planned.placed["default/a"]
    assert "b2" not in {block_of(placed, job) for job in placed.jobs}


def test_an_incomplete_record_of_an_earlier_admission_is_planned_anew_holding_nothing() -> None:
    rev, inputs = _readmitted({"a-w-0": "b0"})  # a-w-1 is not in it
    [target] = rev.targets
    assert not target.restore and target.managed.assignment is None and not target.keep
    assert "default/a" not in inputs.records


def test_the_workload_priority_is_the_one_planned() -> None:
    cluster = tpu_cluster(blocks=3)
    suspended_jobset(cluster, "a", jobs=2)
    state = with_kueue(state_of(cluster), workload("a", [("w", 4)], priority=1234))
    c = cycle(state)
    assert [t.request.priority for t in c.rev.targets] == [1234]


def warnings(state: ClusterState) -> list[tuple[str, str, str]]:
    managed = survey(state, binding="gate")
    view = read_kueue(state, {ms.key: ms.request for ms in managed}, now=NOW_TEXT)
    assert view.workloads == {}
    return [(e.kind, e.reason, e.message) for e in view.events]


def test_malformed_workloads_get_a_warning_and_no_decision() -> None:
    cluster = tpu_cluster(blocks=3)
    suspended_jobset(cluster, "a", jobs=2)
    base = state_of(cluster)
    name = "jobset-a-1234"
    assert warnings(with_kueue(base, workload("a", [("x", 4)]))) == [
        (
            "Workload",
            "NotPlaceable",
            f"Workload default/{name}: spec.podSets ['x'] are not the replicatedJobs ['w'] of "
            f"JobSet default/a; check {CHECK} left as it is",
        )
    ]
    assert warnings(with_kueue(base, workload("a", [("w", 3)])))[0][2] == (
        f"Workload default/{name}: spec.podSets[w].count is 3, JobSet default/a runs 4 pods in "
        f"replicatedJob w; check {CHECK} left as it is"
    )
    assert warnings(with_kueue(base, workload("a", [("w", 4)], owner=False)))[0][2] == (
        f"Workload default/{name}: no owner reference: placer plans only Workloads of a JobSet; "
        f"check {CHECK} left as it is"
    )
    assert warnings(with_kueue(base, workload("a", [("w", 4)], owner_kind="Job")))[0][2] == (
        f"Workload default/{name}: owned by a Job (a): placer plans only JobSets; "
        f"check {CHECK} left as it is"
    )


def test_a_jobset_placer_does_not_manage_is_warned_about() -> None:
    cluster = tpu_cluster(blocks=3)
    add_jobset(cluster, "plain", gate=False, pods_now=False)
    [(kind, reason, message)] = warnings(
        with_kueue(state_of(cluster), workload("plain", [("w", 4)]))
    )
    assert (kind, reason) == ("Workload", "NotPlaceable")
    assert "JobSet default/plain is not managed by placer" in message


def with_topology(cluster: MemoryCluster, name: str, key: str) -> None:
    """The JobSet's pod template asks for its child Jobs' block as preferred topology, under
    annotation `key` (Kueue's spelling or placer's)."""

    def annotate(obj: Obj) -> None:
        template = obj["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
        template.setdefault("metadata", {}).setdefault("annotations", {})[key] = BLOCK

    cluster.mutate("jobsets", name, annotate, namespace="default")


@pytest.mark.parametrize("spelling", ["kueue.x-k8s.io", "placer.dev"])
def test_kueues_spelling_of_topology_is_warned_about_and_told_in_the_quota_wait(
    spelling: str,
) -> None:
    """On placer's flavors (no topologyName) Kueue never reserves quota for a Workload carrying
    kueue.x-k8s.io/podset-* topology (seen on real Kueue v0.19.2: "does not support
    TopologyAwareScheduling"); placer's spelling means the same to placer and nothing to Kueue."""
    cluster = tpu_cluster(blocks=3)
    suspended_jobset(cluster, "a")
    with_topology(cluster, "a", f"{spelling}/podset-preferred-topology")
    c = cycle(with_kueue(state_of(cluster), workload("a", [("w", 4)], reserved_at=None)))
    message = only(c.updates).message
    said = [(e.reason, e.message) for e in c.view.events]
    if spelling == "placer.dev":
        assert said == [] and "placer.dev/podset-*" not in message
        assert message.endswith("were quota reserved now: room for it now")
        return
    assert said == [
        (
            "KueueTopologySpelling",
            "Workload default/jobset-a-1234: replicatedJobs w: Kueue reserves no quota for "
            "kueue.x-k8s.io/podset-* topology annotations on a flavor without topologyName, as "
            "placer's check uses: write them as placer.dev/podset-*, which placer reads the "
            "same way",
        )
    ]
    assert message.startswith(
        "waits for Kueue to reserve quota; Kueue reserves no quota for kueue.x-k8s.io/podset-*"
    )
    assert message.endswith("were quota reserved now: room for it now")


def test_an_admission_check_with_parameters_is_refused_and_its_workloads_left_alone() -> None:
    cluster = tpu_cluster(blocks=3)
    suspended_jobset(cluster, "a", jobs=2)
    params = {"apiGroup": "example.com", "kind": "Config", "name": "c"}
    state = with_kueue(
        state_of(cluster),
        workload("a", [("w", 4)]),
        checks=[admission_check(parameters=params)],
    )
    [(kind, reason, message)] = warnings(state)
    assert (kind, reason) == ("AdmissionCheck", "UnsupportedParameters")
    assert message.startswith(f"AdmissionCheck {CHECK}: spec.parameters ")


def test_workloads_of_other_checks_are_not_placers() -> None:
    cluster = tpu_cluster(blocks=3)
    suspended_jobset(cluster, "a", jobs=2)
    other = admission_check("prov", controllerName="kueue.x-k8s.io/provisioning-request")
    state = with_kueue(state_of(cluster), workload("a", [("w", 4)], check="prov"), checks=[other])
    c = cycle(state)
    assert c.view.workloads == {} and c.view.checks == frozenset()
    assert c.rev.targets == [] and c.updates == []


def test_kueue_tas_on_a_flavor_with_placers_check_is_a_conflict() -> None:
    cluster = tpu_cluster(blocks=1)
    flavors = {
        "tas": {"metadata": {"name": "tas"}, "spec": {"topologyName": "default"}},
        "plain": {"metadata": {"name": "plain"}, "spec": {}},
    }

    def queue(name: str, flavor: str, on: list[str] | None = None) -> Obj:
        rule: Obj = {"name": CHECK}
        if on is not None:
            rule["onFlavors"] = on
        return {
            "metadata": {"name": name, "uid": name},
            "spec": {
                "resourceGroups": [{"flavors": [{"name": flavor}, {"name": "plain"}]}],
                "admissionChecksStrategy": {"admissionChecks": [rule]},
            },
        }

    state = dataclasses.replace(
        with_kueue(state_of(cluster)),
        resource_flavors=flavors,
        cluster_queues={
            "clash": queue("clash", "tas"),
            "only-plain": queue("only-plain", "tas", on=["plain"]),
            "no-tas": queue("no-tas", "plain"),
        },
    )
    [(kind, reason, message)] = warnings(state)
    assert (kind, reason) == ("ClusterQueue", "TopologyConflict")
    assert message.startswith(
        "ClusterQueue clash: placer's admission check is used on ResourceFlavor(s) tas with "
        "topologyName"
    )


def test_events_are_named_after_what_they_say() -> None:
    cluster = tpu_cluster(blocks=3)
    suspended_jobset(cluster, "a", jobs=2)
    state = with_kueue(state_of(cluster), workload("a", [("x", 4)]))
    managed = survey(state, binding="gate")
    first = read_kueue(state, {ms.key: ms.request for ms in managed}, now=NOW_TEXT).events
    again = read_kueue(state, {ms.key: ms.request for ms in managed}, now="later").events
    assert [e.body["metadata"]["name"] for e in first] == [
        e.body["metadata"]["name"] for e in again
    ]
    [event] = first
    assert event.body["involvedObject"]["kind"] == "Workload"
    assert event.body["involvedObject"]["namespace"] == "default"
    assert event.body["type"] == "Warning"


def test_a_message_names_the_jobsets_holding_domains_not_the_planners_tokens() -> None:
    cluster = tpu_cluster(blocks=2)
    suspended_jobset(cluster, "a", jobs=2)
    suspended_jobset(cluster, "b", jobs=2)
    record = on_blocks("default/a", {"a-w-0": "b0", "a-w-1": "b1"})
    state = with_kueue(
        state_of(cluster),
        workload("a", [("w", 4)], state="Ready"),
        workload("b", [("w", 4)]),
    )
    c = cycle(state, ledger={"default/a": record})
    update = only(c.updates)
    assert update.workload.jobset == "default/b" and update.state == "Pending"
    assert "placer:" not in update.message
    # one count per JobSet, not one line per child Job: the breakdown adds up to the domains
    assert "; 0 available of 2: 2 held by running default/a; " in update.message
    assert update.message.endswith("; waits for running default/a")


def test_a_check_write_keeps_the_other_checks_and_survives_a_conflict() -> None:
    wl = workload("a", [("w", 4)])
    wl["status"]["admissionChecks"].append({"name": "prov", "state": "Ready", "message": "ok"})
    entry = {"name": CHECK, "state": "Ready", "message": "placed", "lastTransitionTime": NOW_TEXT}
    write = SetAdmissionCheck.on(wl, entry, jobset="default/a", previous_state="Pending")
    assert write.patch() == {
        "metadata": {"resourceVersion": "7"},
        "status": {"admissionChecks": [entry, wl["status"]["admissionChecks"][1]]},
    }
    # another controller wrote its check meanwhile: rebased on what it wrote
    fresh = copy_json(wl)
    fresh["metadata"]["resourceVersion"] = "8"
    fresh["status"]["admissionChecks"][1]["message"] = "changed"
    rebased = write.rebase(fresh)
    assert rebased is not None and rebased.resource_version == "8"
    assert rebased.checks[1]["message"] == "changed" and rebased.checks[0] == entry
    # already as intended: nothing to write
    done = copy_json(fresh)
    done["status"]["admissionChecks"][0] = entry
    assert write.rebase(done) is None
    # Kueue evicted it meanwhile (check reset, state moved on): not overwritten
    evicted = copy_json(fresh)
    evicted["status"]["admissionChecks"][0]["state"] = "Retry"
    with pytest.raises(Aborted, match="went Pending -> Retry meanwhile"):
        write.rebase(evicted)


def test_placers_checks_are_marked_active_once() -> None:
    check = admission_check()
    activate = ActivateCheck.on(check, now=NOW_TEXT)
    assert activate is not None
    [condition] = activate.patch()["status"]["conditions"]
    assert (condition["type"], condition["status"]) == ("Active", "True")
    check["status"] = {"conditions": [condition]}
    assert ActivateCheck.on(check, now=NOW_TEXT) is None
    assert activate.rebase(check) is None


def _named_by_replacing(text: str, holders: dict[str, str]) -> str:
    """The former `messages.named`, token after token: the oracle of the one-pass version."""
    for token, key in sorted(holders.items(), key=lambda t: -len(t[0])):
        text = text.replace(token, key)
    return re.sub(r"(?<![\w./-])([\w.-]+/[\w.-]+)(?:, \1(?![\w./-]))+", r"\1", text)


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["ml", "team-a", "x.y"]),
            st.sampled_from(["a", "train-1", "b.c"]),
            st.integers(0, 12),
            st.booleans(),
        ),
        max_size=8,
    ),
    st.lists(st.integers(0, 20), max_size=6),
    st.sampled_from([", ", " ", "; ", ". ", ": ", ")", "."]),
)
def test_hold_tokens_are_named_as_replacing_each_would(
    jobs: list[tuple[str, str, int, bool]], picks: list[int], sep: str
) -> None:
    holders: dict[str, str] = {}
    for ns, name, index, foreign in jobs:
        job = f"{name}-w-{index}"
        token = f"placer:placement.{ns}.{name}:{job}" if foreign else hold_token(ns, job)
        holders[token] = f"{ns}/{name}"
    tokens = [*sorted(holders), "placer:ml/unknown-9"]
    text = "held by " + sep.join(tokens[i % len(tokens)] for i in picks) + sep
    assert named(text, holders) == _named_by_replacing(text, holders)
    # named part by part with one cycle's cache (shared with another text): the same
    cache: dict[str, str] = {}
    named(f"{tokens[0]}; x", holders, cache)
    assert named(text, holders, cache) == named(text, holders)


def test_a_jobset_that_cannot_be_planned_is_rejected_not_left_holding_quota() -> None:
    """Its pod template states a priority its PriorityClass does not give: the Priority
    admission plugin refuses such pods, placer never plans it, so a Pending check would keep
    the reserved quota for good. Rejected with why, Kueue deactivates it."""
    cluster = tpu_cluster(blocks=3)
    cluster.create(
        "priorityclasses",
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "high"},
            "value": 1000,
        },
    )
    suspended_jobset(cluster, "a", jobs=2)

    def state_priority(obj: Obj) -> None:
        pod = obj["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
        pod.update(priorityClassName="high", priority=7)

    cluster.mutate("jobsets", "a", state_priority, namespace="default")
    c = cycle(with_kueue(state_of(cluster), workload("a", [("w", 4)], priority=1000)))
    assert "default/a" not in c.planned.placed
    update = only(c.updates)
    assert update.state == "Rejected"
    assert update.message.startswith("can never be placed as written: cluster: default/a: ")
    assert "priority: 7 differs from 1000" in update.message


def _without_exclusive_key(cluster: MemoryCluster, name: str) -> None:
    def shared(obj: Obj) -> None:
        obj["metadata"]["annotations"].pop("alpha.jobset.sigs.k8s.io/exclusive-topology")

    cluster.mutate("jobsets", name, shared, namespace="default")


def test_a_jobset_without_an_exclusive_key_is_told_when_its_nodes_free_up() -> None:
    """Its pods need no domain: before, it was told "expected start now" while running default/r
    held every chip it could use."""
    cluster = tpu_cluster(blocks=2)
    running_jobset(cluster, "r", [0, 1], hours=3)  # started 1h ago: every chip busy for 2h more
    suspended_jobset(cluster, "a", jobs=2)
    _without_exclusive_key(cluster, "a")
    c = cycle(with_kueue(state_of(cluster), workload("a", [("w", 4)])))
    assert "default/a" not in c.planned.placed
    update = only(c.updates)
    assert update.state == "Pending"
    assert "; expected start 2026-12-01T14:00:00Z" in update.message
    assert update.message.endswith("; waits for running default/r")


def test_a_jobset_without_an_exclusive_key_that_fits_no_node_is_rejected() -> None:
    """Before, it was told "expected start now", so it was never Rejected."""
    cluster = tpu_cluster(blocks=2)
    running_jobset(cluster, "r", [0, 1], hours=3)
    suspended_jobset(cluster, "v6e", jobs=2)
    _without_exclusive_key(cluster, "v6e")
    _only_v6e(cluster, "v6e")
    c = cycle(with_kueue(state_of(cluster), workload("v6e", [("w", 4)])))
    update = only(c.updates)
    assert update.state == "Rejected"
    assert update.message.startswith("can never be placed, not even on an empty cluster: w: ")
    assert "nodeSelector cloud.google.com/gke-tpu-accelerator=tpu-v6e-slice" in update.message
    assert "default/r" not in update.message
