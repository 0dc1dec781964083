"""The controller's topology-aware preemption (`--preemption lower-priority`) on the in-memory
cluster: a victim suspended after the ledger records the intent, the beneficiary released once the
victim's pods are gone, the victim back in the queue; crashes between the steps; who is
protected."""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest

from benchmarks.simulate import cluster_sim as sim
from placer.controller.act.memory_adapter import MemoryCluster
from placer.controller.adapter import ClusterAdapter, Obj
from placer.controller.decide.observe.domains import DomainIndex
from placer.controller.decide.observe.snapshot import planning_snapshot
from placer.controller.decide.preempting import KUEUE_QUEUE_LABEL
from placer.controller.decide.records.bindings import NAMESPACED_JOB_LABEL
from placer.controller.decide.records.ledger import EVICTION, LEDGER_NAME, read_ledger
from placer.controller.decide.records.writes import SuspendJobSet
from placer.controller.decide.review.ledgerplan import exclusive_clashes
from placer.controller.reconcile import Controller, CycleReport
from placer.model.options import SolveOptions, TimePolicy
from placer.model.preemption import (
    CHECKPOINT_INTERVAL,
    PREEMPTED_AT,
    PREEMPTIBLE,
    PreemptionPolicy,
    format_stamp,
)
from placer.solver.check.checker import check
from tests.controller.builders import (
    add_jobset,
    controller,
    events,
    gated,
    jobset_pods,
    record,
    state_of,
    tpu_cluster,
)
from tests.controller.test_scenarios import Dying, Killed

LEDGER_NS = "placer-system"


def preempting(cluster: ClusterAdapter, **config: Any) -> Controller:
    """A controller with the cpsat planner allowed to evict lower-priority JobSets."""
    options = SolveOptions(
        time_limit_s=10.0, workers=1, seed=0, preemption=PreemptionPolicy(mode="lower-priority")
    )
    settings: dict[str, Any] = {"solver": "cpsat", "options": options, **config}
    return controller(cluster, **settings)


def cycle(ctl: Controller) -> CycleReport:
    """One cycle; every plan it made passes the independent checker (preemption included)."""
    ctl.relist()
    report = ctl.run_cycle(force_plan=True)
    for plan, snapshot, requests in report.planned.plans:
        assert check(plan, snapshot, requests, ctl.config.options) == []
    return report


def jobset_controller(cluster: MemoryCluster) -> None:
    """What JobSet and the Job controller do, reduced: a suspended JobSet's pods are deleted, a
    resumed one's are created again (gated, from the same template)."""
    for js in cluster.objects("jobsets"):
        name, ns = js["metadata"]["name"], js["metadata"]["namespace"]
        if (js.get("spec") or {}).get("suspend"):
            for pod in jobset_pods(cluster, name):
                cluster.delete("pods", pod["metadata"]["name"], namespace=ns)
        else:
            sim.create_pods(cluster, ns, name)


def running_low(cluster: MemoryCluster, **annotations: str) -> None:
    """`low` (priority 0) placed on both blocks and running; `high` (priority 100) then arrives
    needing one block."""
    add_jobset(cluster, "low", jobs=2, pods=2, priority=0)
    if annotations:
        cluster.mutate(
            "jobsets",
            "low",
            lambda o: o["metadata"].setdefault("annotations", {}).update(annotations),
            namespace="default",
        )
    cycle(controller(cluster))
    assert len(sim.schedule(cluster)) == 4
    add_jobset(cluster, "high", jobs=1, pods=2, priority=100)


def ledger_of(cluster: MemoryCluster) -> Any:
    return read_ledger(cluster.get("configmaps", LEDGER_NAME, namespace=LEDGER_NS), LEDGER_NS)


def assert_ledger_sound(cluster: MemoryCluster) -> None:
    """No node held twice by the ledger, and no JobSet both placed and being evicted."""
    ledger = ledger_of(cluster)
    index = DomainIndex(planning_snapshot(state_of(cluster), binding="gate"))
    assert exclusive_clashes(ledger.entries, index) == []
    placed = {e.owner for e in ledger.entries.values() if e.kind == "placement"}
    evicting = {e.owner for e in ledger.entries.values() if e.kind == EVICTION}
    assert not placed & evicting


def low_obj(cluster: MemoryCluster) -> Obj:
    return cluster.get("jobsets", "low", namespace="default")


def test_a_blocked_high_priority_jobset_preempts_the_low_one_then_runs_and_low_requeues() -> None:
    cluster = tpu_cluster(blocks=2)
    running_low(cluster)
    ctl = preempting(cluster)

    # 1. one commit: low's placement released, its eviction recorded, high placed; then writes
    report = cycle(ctl)
    assert list(report.planned.placed) == ["default/high"]
    assert list(report.planned.evictions) == ["default/low"]
    ledger = ledger_of(cluster)
    [eviction] = [e for e in ledger.entries.values() if e.kind == EVICTION]
    assert (eviction.owner, eviction.beneficiaries) == ("default/low", ("default/high",))
    assert ledger.placement("default/low", "") is None
    low = low_obj(cluster)
    assert low["spec"]["suspend"] is True
    assert low["metadata"]["annotations"][PREEMPTED_AT] == format_stamp(eviction.at)
    assert record(cluster, "low") is None
    assert record(cluster, "high") is not None
    # high's pods stay gated while low's pods still run on its block
    assert all(gated(p) for p in jobset_pods(cluster, "high"))
    [preempted] = events(cluster, "Preempted")
    assert preempted["involvedObject"]["name"] == "low"
    assert "default/high" in preempted["message"] and "chip-hours" in preempted["message"]
    [preempting_event] = events(cluster, "Preempting")
    assert preempting_event["involvedObject"]["name"] == "high"
    assert "default/low" in preempting_event["message"]
    assert [e["involvedObject"]["name"] for e in events(cluster, "Placed")] == ["low"]  # not high
    assert_ledger_sound(cluster)
    assert ctl.metrics.registry.get_sample_value("placer_preemptions_total") == 1
    assert ctl.metrics.registry.get_sample_value("placer_writes_total", {"kind": "suspend"}) == 1

    # a cycle while low's pods terminate changes nothing
    cycle(ctl)
    assert all(gated(p) for p in jobset_pods(cluster, "high"))

    # 2. JobSet deletes low's pods: high is released, low resumed
    jobset_controller(cluster)
    cycle(ctl)
    assert not any(gated(p) for p in jobset_pods(cluster, "high"))
    assert sorted(e["involvedObject"]["name"] for e in events(cluster, "Placed")) == ["high", "low"]
    assert low_obj(cluster)["spec"]["suspend"] is False
    [requeued] = events(cluster, "Requeued")
    assert requeued["involvedObject"]["name"] == "low"
    assert_ledger_sound(cluster)

    # 3. low's new pods come back gated; its eviction is released, then it waits for room
    jobset_controller(cluster)
    sim.schedule(cluster)
    assert all(gated(p) for p in jobset_pods(cluster, "low"))
    cycle(ctl)
    assert not [e for e in ledger_of(cluster).entries.values() if e.kind == EVICTION]
    report = cycle(ctl)
    assert "default/low" in report.planned.unschedulable
    assert all(gated(p) for p in jobset_pods(cluster, "low"))
    assert_ledger_sound(cluster)
    # and high is not preempted back, nor low evicted twice
    assert len(events(cluster, "Preempted")) == 1


def test_with_reservations_the_eviction_runs_the_same_and_the_victim_gets_an_eta() -> None:
    """`--reservations head` beside `--preemption`: evictions are decided first (the planner on
    the cluster as it is), then the time-aware round; the flow is the one above, and once low is
    back in the queue it waits with an expected start behind high."""
    cluster = tpu_cluster(blocks=2)
    running_low(cluster)
    options = SolveOptions(
        time_limit_s=10.0,
        workers=1,
        seed=0,
        preemption=PreemptionPolicy(mode="lower-priority"),
        time=TimePolicy(reservations="head"),
    )
    ctl = controller(cluster, solver="cpsat", options=options)
    report = cycle(ctl)
    assert list(report.planned.placed) == ["default/high"]
    assert list(report.planned.evictions) == ["default/low"]
    [(plan, _, _)] = report.planned.plans
    assert any("preemption decided before reservations" in n for n in plan.solver.notes)
    assert low_obj(cluster)["spec"]["suspend"] is True
    finish_preemption(cluster, ctl)
    assert_preemption_done(cluster)
    report = cycle(ctl)
    assert "default/low" in report.planned.unschedulable
    [outcome] = [o for plan, _, _ in report.planned.plans for o in plan.jobsets if o.name == "low"]
    assert outcome.expected_start_seconds is not None


def evictions_in_ledger(cluster: MemoryCluster) -> list[str]:
    return sorted(e.owner for e in ledger_of(cluster).entries.values() if e.kind == EVICTION)


def crashing_before_writes(ctl: Controller) -> Controller:
    """The controller dies right after its ledger commit, before any write."""
    # the write phase stubbed out: the process dies right after the commit
    ctl._write = lambda reviewed, outcome, timer: ([], None)  # type: ignore[method-assign]
    return ctl


def finish_preemption(cluster: MemoryCluster, ctl: Controller, cycles: int = 4) -> None:
    for _ in range(cycles):
        cycle(ctl)
        assert_ledger_sound(cluster)
        jobset_controller(cluster)
        sim.schedule(cluster)


def assert_preemption_done(cluster: MemoryCluster) -> None:
    """high runs on its block, low is back in the queue (unsuspended, gated, no record), the
    ledger holds no eviction, and each was announced once."""
    assert evictions_in_ledger(cluster) == []
    assert record(cluster, "low") is None and low_obj(cluster)["spec"]["suspend"] is False
    assert all(gated(p) and not p["spec"].get("nodeName") for p in jobset_pods(cluster, "low"))
    assert all(p["spec"].get("nodeName") for p in jobset_pods(cluster, "high"))
    assert len(events(cluster, "Preempted")) == 1
    assert len(events(cluster, "Preempting")) == 1
    assert len(low_obj(cluster)["metadata"]["annotations"][PREEMPTED_AT].split(",")) == 1
    assert_ledger_sound(cluster)


def test_a_controller_restarted_between_the_commit_and_the_suspend_finishes_the_eviction() -> None:
    cluster = tpu_cluster(blocks=2)
    running_low(cluster)
    cycle(crashing_before_writes(preempting(cluster)))
    # committed, nothing written: low still runs with its record, high is gated
    assert evictions_in_ledger(cluster) == ["default/low"]
    assert not low_obj(cluster)["spec"].get("suspend") and record(cluster, "low") is not None
    assert_ledger_sound(cluster)
    restarted = preempting(cluster)
    report = cycle(restarted)
    assert report.planned.placed == {} and report.planned.evictions == {}  # nothing planned anew
    assert low_obj(cluster)["spec"]["suspend"] is True and record(cluster, "low") is None
    assert all(gated(p) for p in jobset_pods(cluster, "high"))
    finish_preemption(cluster, restarted)
    assert_preemption_done(cluster)


def test_a_controller_restarted_between_the_suspend_and_the_release_finishes_the_job() -> None:
    cluster = tpu_cluster(blocks=2)
    running_low(cluster)
    cycle(preempting(cluster))
    assert low_obj(cluster)["spec"]["suspend"] is True
    jobset_controller(cluster)  # low's pods go while no controller runs
    finish_preemption(cluster, preempting(cluster))
    assert_preemption_done(cluster)


def test_a_controller_restarted_after_the_resume_releases_the_eviction_once() -> None:
    cluster = tpu_cluster(blocks=2)
    running_low(cluster)
    ctl = preempting(cluster)
    cycle(ctl)
    jobset_controller(cluster)
    cycle(ctl)  # resumes low, releases high
    assert low_obj(cluster)["spec"]["suspend"] is False
    finish_preemption(cluster, preempting(cluster))
    assert_preemption_done(cluster)


def test_the_beneficiary_deleted_mid_way_still_lets_the_victim_return_to_the_queue() -> None:
    cluster = tpu_cluster(blocks=2)
    running_low(cluster)
    ctl = preempting(cluster)
    cycle(ctl)
    cluster.delete("jobsets", "high", namespace="default")
    for pod in jobset_pods(cluster, "high"):
        cluster.delete("pods", pod["metadata"]["name"], namespace="default")
    finish_preemption(cluster, ctl, cycles=5)
    assert evictions_in_ledger(cluster) == []
    # low resumed, planned again on the freed blocks, and runs
    assert low_obj(cluster)["spec"]["suspend"] is False
    assert record(cluster, "low") is not None
    assert all(p["spec"].get("nodeName") for p in jobset_pods(cluster, "low"))
    assert_ledger_sound(cluster)


def hours_ago(hours: float) -> str:
    return format_stamp(time.time() - hours * 3600)


def test_a_jobset_preempted_max_times_in_a_day_is_not_preempted_again() -> None:
    cluster = tpu_cluster(blocks=2)
    running_low(cluster, **{PREEMPTED_AT: f"{hours_ago(20)},{hours_ago(1)}"})
    report = cycle(preempting(cluster, max_preemptions_per_day=2))
    assert report.planned.evictions == {} and "default/high" in report.planned.unschedulable
    assert not low_obj(cluster)["spec"].get("suspend")
    assert evictions_in_ledger(cluster) == []


def test_preemptions_older_than_a_day_do_not_count() -> None:
    cluster = tpu_cluster(blocks=2)
    running_low(cluster, **{PREEMPTED_AT: f"{hours_ago(30)},{hours_ago(1)}"})
    report = cycle(preempting(cluster, max_preemptions_per_day=2))
    assert list(report.planned.evictions) == ["default/low"]
    stamps = low_obj(cluster)["metadata"]["annotations"][PREEMPTED_AT].split(",")
    assert len(stamps) == 2 and hours_ago(30) not in stamps  # the old stamp is dropped


@pytest.mark.parametrize(
    ("annotation", "value"),
    [
        pytest.param(CHECKPOINT_INTERVAL, "soon", id="unparsable-interval"),
        pytest.param(CHECKPOINT_INTERVAL, "-5m", id="negative-interval"),
        pytest.param(PREEMPTIBLE, "maybe", id="unparsable-preemptible"),
    ],
)
def test_a_bad_preemption_annotation_is_a_warning_and_protects_the_jobset(
    annotation: str, value: str
) -> None:
    cluster = tpu_cluster(blocks=2)
    running_low(cluster, **{annotation: value})
    ctl = preempting(cluster)
    report = cycle(ctl)
    assert report.planned.evictions == {} and "default/high" in report.planned.unschedulable
    assert not low_obj(cluster)["spec"].get("suspend")
    [warning] = events(cluster, "InvalidPreemptionAnnotation")
    assert warning["type"] == "Warning" and warning["involvedObject"]["name"] == "low"
    assert annotation in warning["message"] and "never preempted" in warning["message"]
    assert "\n" not in warning["message"]
    cycle(ctl)
    assert len(events(cluster, "InvalidPreemptionAnnotation")) == 1  # once per message


def test_a_jobset_annotated_not_preemptible_is_never_evicted() -> None:
    cluster = tpu_cluster(blocks=2)
    running_low(cluster, **{PREEMPTIBLE: "false"})
    report = cycle(preempting(cluster))
    assert report.planned.evictions == {} and "default/high" in report.planned.unschedulable
    assert events(cluster, "InvalidPreemptionAnnotation") == []


def label(cluster: MemoryCluster, name: str, key: str, value: str) -> None:
    cluster.mutate(
        "jobsets",
        name,
        lambda o: o["metadata"].setdefault("labels", {}).update({key: value}),
        namespace="default",
    )


@pytest.mark.parametrize("who", ["low", "high"])
def test_kueue_managed_jobsets_neither_preempt_nor_are_preempted(
    who: str, caplog: pytest.LogCaptureFixture
) -> None:
    cluster = tpu_cluster(blocks=2)
    running_low(cluster)
    label(cluster, who, KUEUE_QUEUE_LABEL, "team-a")
    with caplog.at_level(logging.INFO):
        report = cycle(preempting(cluster))
    assert report.planned.evictions == {} and "default/high" in report.planned.unschedulable
    assert not low_obj(cluster)["spec"].get("suspend")
    assert f"default/{who}: managed by Kueue" in caplog.text


def test_a_config_with_preemption_under_kueue_admission_check_does_not_preempt() -> None:
    """`placer controller` refuses the pair; a config built in code has preemption turned off."""
    cluster = tpu_cluster(blocks=2)
    ctl = preempting(cluster, kueue_admission_check=True)
    assert not ctl.config.options.preemption.active


def test_without_the_flag_nothing_is_preempted() -> None:
    cluster = tpu_cluster(blocks=2)
    running_low(cluster)
    report = cycle(controller(cluster, solver="cpsat"))
    assert report.planned.evictions == {} and "default/high" in report.planned.unschedulable
    assert not low_obj(cluster)["spec"].get("suspend")
    assert events(cluster, "Preempted") == []


def test_an_equal_priority_jobset_is_not_preempted() -> None:
    cluster = tpu_cluster(blocks=2)
    add_jobset(cluster, "low", jobs=2, pods=2, priority=100)
    cycle(controller(cluster))
    sim.schedule(cluster)
    add_jobset(cluster, "high", jobs=1, pods=2, priority=100)
    report = cycle(preempting(cluster))
    assert report.planned.evictions == {} and "default/high" in report.planned.unschedulable


def test_the_cheapest_victim_is_chosen_and_only_it() -> None:
    """Two low JobSets each on one block; the younger one (less work lost) is evicted."""
    cluster = tpu_cluster(blocks=2)
    for name, started in (("old", hours_ago(10)), ("young", hours_ago(0.1))):
        add_jobset(cluster, name, jobs=1, pods=2, priority=0)
        cycle(controller(cluster))
        sim.schedule(cluster)

        def start(pod: Obj, at: str = started) -> None:
            pod["status"]["startTime"] = at

        for pod in jobset_pods(cluster, name):
            cluster.mutate("pods", pod["metadata"]["name"], start, namespace="default")
    add_jobset(cluster, "high", jobs=1, pods=2, priority=100)
    report = cycle(preempting(cluster))
    assert list(report.planned.evictions) == ["default/young"]
    assert cluster.get("jobsets", "young", namespace="default")["spec"]["suspend"] is True
    assert not cluster.get("jobsets", "old", namespace="default")["spec"].get("suspend")
    assert_ledger_sound(cluster)


def test_a_dry_run_commits_and_writes_nothing() -> None:
    cluster = tpu_cluster(blocks=2)
    running_low(cluster)
    report = cycle(preempting(cluster, dry_run=True))
    assert [w.describe() for w in report.writes if isinstance(w, SuspendJobSet)] == [
        "suspend JobSet default/low (preempted)"
    ]
    assert evictions_in_ledger(cluster) == []
    assert not low_obj(cluster)["spec"].get("suspend")


def test_under_the_node_labels_binding_nodes_change_hands_once_the_victims_pods_are_gone() -> None:
    cluster = tpu_cluster(blocks=2)
    add_jobset(cluster, "low", jobs=2, pods=2, priority=0, gate=False, node_labels=True)
    cycle(controller(cluster, binding="node-labels"))
    sim.create_pods(cluster, "default", "low")
    assert len(sim.schedule(cluster)) == 4
    add_jobset(cluster, "high", jobs=1, pods=2, priority=100, gate=False, node_labels=True)
    ctl = preempting(cluster, binding="node-labels")

    def labels() -> set[str]:
        return {
            n["metadata"]["labels"].get(NAMESPACED_JOB_LABEL, "") for n in cluster.objects("nodes")
        }

    report = cycle(ctl)
    assert list(report.planned.evictions) == ["default/low"]
    assert low_obj(cluster)["spec"]["suspend"] is True
    assert labels() == {"default_low-w-0", "default_low-w-1"}  # low's pods still run there
    assert sim.schedule(cluster) == []
    jobset_controller(cluster)
    for _ in range(3):
        cycle(ctl)
        jobset_controller(cluster)
        sim.schedule(cluster)
    assert "default_high-w-0" in labels() and not any("low" in v for v in labels())
    assert all(p["spec"].get("nodeName") for p in jobset_pods(cluster, "high"))
    assert not any(p["spec"].get("nodeName") for p in jobset_pods(cluster, "low"))
    assert low_obj(cluster)["spec"]["suspend"] is False
    assert evictions_in_ledger(cluster) == []
    assert_ledger_sound(cluster)


def test_preempt_after_spares_a_jobset_expected_to_start_soon_enough() -> None:
    """`--preempt-after`: high is expected to start once low ends (the default duration), which
    is sooner than a year: no eviction; with a minute, low is evicted."""
    for after_s, evicted in ((365 * 86400.0, False), (60.0, True)):
        cluster = tpu_cluster(blocks=2)
        running_low(cluster)
        policy = PreemptionPolicy(mode="lower-priority", preempt_after_s=after_s)
        options = SolveOptions(time_limit_s=10.0, workers=1, seed=0, preemption=policy)
        report = cycle(preempting(cluster, options=options))
        assert bool(report.planned.evictions) is evicted


@pytest.mark.parametrize("after", range(5))
def test_killed_at_any_write_of_the_preemption_a_fresh_controller_finishes_it(after: int) -> None:
    """The preempting cycle's writes, in order: the ledger commit, the victim's suspend, its
    `Preempted`, the beneficiary's `Preempting`, its record; the process dies before the
    `after`-th one. A fresh controller (no memory) finishes with no domain doubled or leaked."""
    cluster = tpu_cluster(blocks=2)
    running_low(cluster)
    dying = preempting(Dying(cluster, after))
    with pytest.raises(Killed):
        for _ in range(3):
            cycle(dying)
    assert_ledger_sound(cluster)
    finish_preemption(cluster, preempting(cluster), cycles=5)
    assert_preemption_done(cluster)


def test_a_suspend_that_fails_sends_no_preempted_event_and_is_retried() -> None:
    cluster = tpu_cluster(blocks=2)
    running_low(cluster)
    ctl = preempting(cluster)
    cluster.inject("patch", "jobsets", 403)
    cycle(ctl)
    assert not low_obj(cluster)["spec"].get("suspend")
    assert events(cluster, "Preempted") == []
    assert all(gated(p) for p in jobset_pods(cluster, "high"))  # low still runs on its block
    cycle(ctl)
    assert low_obj(cluster)["spec"]["suspend"] is True
    assert len(events(cluster, "Preempted")) == 1
    finish_preemption(cluster, ctl)
    assert_preemption_done(cluster)
