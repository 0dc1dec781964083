"""The controller's topology-aware preemption (`--preemption lower-priority`) on the in-memory
cluster: a victim suspended after the ledger records the intent, the beneficiary released once the
victim's pods are gone, the victim back in the queue; crashes between the steps; who is
protected."""

from __future__ import annotations

from typing import Any

from benchmarks import cluster_sim as sim
from placer.controller.act.memory_adapter import MemoryCluster
from placer.controller.adapter import Obj
from placer.controller.decide.domains import DomainIndex
from placer.controller.decide.ledger import EVICTION, LEDGER_NAME, exclusive_clashes, read_ledger
from placer.controller.decide.snapshot import planning_snapshot
from placer.controller.reconcile import Controller, CycleReport
from placer.model.options import SolveOptions
from placer.model.preemption import PREEMPTED_AT, PreemptionPolicy, format_stamp
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

LEDGER_NS = "placer-system"


def preempting(cluster: MemoryCluster, **config: Any) -> Controller:
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
