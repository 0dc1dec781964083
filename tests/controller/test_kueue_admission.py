"""Placer as a Kueue AdmissionCheck, whole cycles on an in-memory cluster: Kueue's part (quota,
admission, eviction) is played by the test, placer's by the real controller."""

from __future__ import annotations

import time
from typing import Any

from benchmarks.simulate import cluster_sim as sim
from placer.controller.act.executor import RetryPolicy
from placer.controller.act.memory_adapter import MemoryCluster
from placer.controller.adapter import Obj
from placer.controller.decide.kueue.check import PLACEMENT_ANNOTATION
from placer.controller.decide.observe.kueue import CONTROLLER_NAME
from placer.controller.decide.records.ledger import LEDGER_NAME, Ledger, read_ledger
from placer.controller.reconcile import Clocks, Controller, ControllerConfig
from placer.model.durations import format_rfc3339
from tests.controller.builders import (
    BLOCK,
    add_jobset,
    assert_valid,
    events,
    gated,
    pod_requirements,
    tpu_cluster,
)

CHECK = "placer"


def ledger(cluster: MemoryCluster) -> Ledger:
    obj = next(
        (c for c in cluster.objects("configmaps") if c["metadata"]["name"] == LEDGER_NAME), None
    )
    return read_ledger(obj, "placer-system")


def kueue_controller(cluster: MemoryCluster, **config: Any) -> Controller:
    settings: dict[str, Any] = {
        "solver": "best-fit",
        "window_s": 0.0,
        "kueue_admission_check": True,
        **config,
    }
    return Controller(cluster, ControllerConfig(**settings), clocks=Clocks(sleep=lambda s: None))


def setup(cluster: MemoryCluster) -> None:
    cluster.create(
        "admissionchecks",
        {"metadata": {"name": CHECK}, "spec": {"controllerName": CONTROLLER_NAME}},
    )


def submit(cluster: MemoryCluster, name: str, *, jobs: int, reserved_s_ago: float = 1.0) -> None:
    """A JobSet Kueue suspended, and its Workload with quota reserved `reserved_s_ago`."""
    add_jobset(cluster, name, jobs=jobs, pods_now=False)
    cluster.mutate("jobsets", name, lambda o: o["spec"].update(suspend=True), namespace="default")
    js = cluster.get("jobsets", name, namespace="default")
    at = format_rfc3339(time.time() - reserved_s_ago)
    cluster.create(
        "workloads",
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Workload",
            "metadata": {
                "name": f"jobset-{name}",
                "namespace": "default",
                "ownerReferences": [
                    {
                        "kind": "JobSet",
                        "name": name,
                        "uid": js["metadata"]["uid"],
                        "controller": True,
                    }
                ],
            },
            "spec": {"podSets": [{"name": "w", "count": 2 * jobs, "template": {}}]},
            "status": {
                "conditions": [
                    {"type": "QuotaReserved", "status": "True", "lastTransitionTime": at}
                ],
                "admissionChecks": [
                    {"name": CHECK, "state": "Pending", "message": "", "lastTransitionTime": at},
                    {"name": "other", "state": "Pending", "message": "", "lastTransitionTime": at},
                ],
            },
        },
    )


def check_of(cluster: MemoryCluster, name: str) -> Obj:
    wl = cluster.get("workloads", f"jobset-{name}", namespace="default")
    entry: Obj
    [entry] = [e for e in wl["status"]["admissionChecks"] if e["name"] == CHECK]
    return entry


def admit(cluster: MemoryCluster, name: str) -> None:
    """Kueue, once every check is Ready: admitted, the JobSet unsuspended, JobSet's pods made."""
    cluster.mutate("jobsets", name, lambda o: o["spec"].update(suspend=False), namespace="default")
    sim.create_pods(cluster, "default", name)


def evict(cluster: MemoryCluster, name: str) -> None:
    """Kueue preempting: Evicted, quota released, checks reset, the JobSet suspended."""

    def change(wl: Obj) -> None:
        wl["status"]["conditions"] = [
            {
                "type": "Evicted",
                "status": "True",
                "lastTransitionTime": format_rfc3339(time.time()),
            },
            {
                "type": "QuotaReserved",
                "status": "False",
                "lastTransitionTime": format_rfc3339(time.time()),
            },
        ]
        for e in wl["status"]["admissionChecks"]:
            e.update(state="Pending", message="", podSetUpdates=[])

    cluster.mutate("workloads", f"jobset-{name}", change, namespace="default")
    cluster.mutate("jobsets", name, lambda o: o["spec"].update(suspend=True), namespace="default")
    for pod in list(cluster.objects("pods")):
        if pod["metadata"]["labels"].get("jobset.sigs.k8s.io/jobset-name") == name:
            cluster.delete("pods", pod["metadata"]["name"], namespace="default")


def test_admitted_only_with_a_placement_then_pinned_from_the_ledger() -> None:
    cluster = tpu_cluster(blocks=3)
    setup(cluster)
    submit(cluster, "a", jobs=2)
    ctl = kueue_controller(cluster)
    assert_valid(ctl.run_once())
    entry = ledger(cluster).placement("default/a", "")
    assert entry is not None
    blocks = {j.domain.value for j in entry.record.jobs.values() if j.domain}
    check = check_of(cluster, "a")
    assert check["state"] == "Ready"
    assert check["message"].startswith(f"placed (plan {entry.record.plan_id}) on {BLOCK}=")
    [update] = check["podSetUpdates"]
    assert update["name"] == "w"
    assert update["annotations"][PLACEMENT_ANNOTATION].startswith(entry.record.plan_id)
    # the other check's entry is untouched
    wl = cluster.get("workloads", "jobset-a", namespace="default")
    assert wl["status"]["admissionChecks"][1] == {
        "name": "other",
        "state": "Pending",
        "message": "",
        "lastTransitionTime": wl["status"]["admissionChecks"][1]["lastTransitionTime"],
    }
    admit(cluster, "a")
    assert_valid(ctl.run_once())
    pods = [p for p in cluster.objects("pods")]
    assert pods and not any(gated(p) for p in pods)
    pinned = {
        r["values"][0] for p in pods for t in pod_requirements(p) for r in t if r["key"] == BLOCK
    }
    assert pinned == blocks
    assert ledger(cluster).placement("default/a", "") == entry  # placed once


def test_fits_quota_not_topology_waits_then_gives_its_quota_back() -> None:
    cluster = tpu_cluster(blocks=3)
    setup(cluster)
    submit(cluster, "a", jobs=2)
    ctl = kueue_controller(cluster, kueue_hold_quota_s=30.0)
    ctl.run_once()
    assert check_of(cluster, "a")["state"] == "Ready"
    submit(cluster, "b", jobs=2)
    ctl.run_once()
    check = check_of(cluster, "b")
    assert check["state"] == "Pending"
    assert check["message"].startswith("no room for a placement now: ")
    assert ledger(cluster).placement("default/b", "") is None
    assert cluster.get("jobsets", "b", namespace="default")["spec"]["suspend"] is True
    # held past the hold: Retry, requeued near its expected start
    cluster.delete("workloads", "jobset-b", namespace="default")
    cluster.delete("jobsets", "b", namespace="default")
    submit(cluster, "b", jobs=2, reserved_s_ago=120.0)
    ctl.run_once()
    check = check_of(cluster, "b")
    assert check["state"] == "Retry"
    assert check["requeueAfterSeconds"] >= 1
    assert "over the 30s hold: Retry, requeue in " in check["message"]


def test_kueue_evicting_frees_the_domains_for_the_next_workload() -> None:
    cluster = tpu_cluster(blocks=2)
    setup(cluster)
    submit(cluster, "low", jobs=2)
    ctl = kueue_controller(cluster)
    ctl.run_once()
    admit(cluster, "low")
    ctl.run_once()
    submit(cluster, "high", jobs=2)
    ctl.run_once()
    assert check_of(cluster, "high")["state"] == "Pending"
    evict(cluster, "low")
    assert_valid(ctl.run_once())
    assert ledger(cluster).placement("default/low", "") is None
    assert check_of(cluster, "high")["state"] == "Ready"
    assert check_of(cluster, "low")["state"] == "Pending"  # waits for Kueue to reserve again
    assert ledger(cluster).placement("default/high", "") is not None


def readmit(cluster: MemoryCluster, name: str) -> None:
    """Kueue reserving quota again for an evicted Workload: QuotaReserved, its checks Pending."""

    def change(wl: Obj) -> None:
        at = format_rfc3339(time.time() - 1)
        wl["status"]["conditions"] = [
            {"type": "QuotaReserved", "status": "True", "lastTransitionTime": at}
        ]

    cluster.mutate("workloads", f"jobset-{name}", change, namespace="default")


def blocks_of(cluster: MemoryCluster, name: str) -> set[str]:
    entry = ledger(cluster).placement(f"default/{name}", "")
    assert entry is not None
    return {j.domain.value for j in entry.record.jobs.values() if j.domain}


def finish(cluster: MemoryCluster, name: str) -> None:
    cluster.delete("workloads", f"jobset-{name}", namespace="default")
    cluster.delete("jobsets", name, namespace="default")
    for pod in list(cluster.objects("pods")):
        if pod["metadata"]["labels"].get("jobset.sigs.k8s.io/jobset-name") == name:
            cluster.delete("pods", pod["metadata"]["name"], namespace="default")


def test_readmitted_it_gets_its_old_domains_back_when_they_are_free() -> None:
    cluster = tpu_cluster(blocks=3)
    setup(cluster)
    submit(cluster, "small", jobs=1)
    submit(cluster, "a", jobs=2)
    ctl = kueue_controller(cluster)
    assert_valid(ctl.run_once())
    admit(cluster, "small")
    admit(cluster, "a")
    ctl.run_once()
    old = blocks_of(cluster, "a")
    plan_id = check_of(cluster, "a")["message"]
    evict(cluster, "a")
    assert_valid(ctl.run_once())
    assert ledger(cluster).placement("default/a", "") is None  # freed at once
    finish(cluster, "small")  # a fresh plan could now start anywhere, its old blocks included
    ctl.run_once()
    readmit(cluster, "a")
    report = assert_valid(ctl.run_once())
    assert report.planned.plans == ()  # not planned again: recorded as it was
    assert blocks_of(cluster, "a") == old
    assert check_of(cluster, "a")["state"] == "Ready"
    assert check_of(cluster, "a")["message"] == plan_id  # the same plan id, the same domains


def test_readmitted_when_an_old_domain_was_taken_it_is_planned_anew() -> None:
    cluster = tpu_cluster(blocks=3)
    setup(cluster)
    submit(cluster, "a", jobs=2)
    ctl = kueue_controller(cluster)
    ctl.run_once()
    admit(cluster, "a")
    ctl.run_once()
    old = blocks_of(cluster, "a")
    evict(cluster, "a")
    submit(cluster, "b", jobs=1)
    assert_valid(ctl.run_once())
    taken = blocks_of(cluster, "b")
    assert taken <= old  # b took one of a's old blocks while a was out
    readmit(cluster, "a")
    report = assert_valid(ctl.run_once())
    assert report.planned.plans  # planned anew
    assert check_of(cluster, "a")["state"] == "Ready"
    assert not blocks_of(cluster, "a") & taken
    assert len(blocks_of(cluster, "a")) == 2


def test_a_restart_between_ledger_commit_and_ready_neither_loses_nor_doubles() -> None:
    cluster = tpu_cluster(blocks=3)
    setup(cluster)
    submit(cluster, "a", jobs=2)
    cluster.inject("patch", "workloads", 500, times=RetryPolicy().attempts)  # the crash
    first = kueue_controller(cluster)
    first.run_once()
    entry = ledger(cluster).placement("default/a", "")
    assert entry is not None
    assert check_of(cluster, "a")["state"] == "Pending"
    second = kueue_controller(cluster)
    report = second.run_once()
    assert report.planned.plans == ()  # nothing planned again
    assert ledger(cluster).placement("default/a", "") == entry
    assert check_of(cluster, "a")["state"] == "Ready"
    assert entry.record.plan_id in check_of(cluster, "a")["message"]


def test_a_malformed_workload_is_warned_about_once_and_the_rest_goes_on() -> None:
    cluster = tpu_cluster(blocks=3)
    setup(cluster)
    submit(cluster, "a", jobs=2)
    submit(cluster, "bad", jobs=1)
    cluster.mutate(
        "workloads",
        "jobset-bad",
        lambda o: o["spec"].update(podSets=[{"name": "nope", "count": 2}]),
        namespace="default",
    )
    ctl = kueue_controller(cluster)
    ctl.run_once()
    ctl.run_once()
    assert check_of(cluster, "a")["state"] == "Ready"
    assert check_of(cluster, "bad")["state"] == "Pending"
    [warning] = events(cluster, "NotPlaceable")
    assert warning["involvedObject"]["name"] == "jobset-bad"
    assert warning["type"] == "Warning"
    assert "spec.podSets ['nope'] are not the replicatedJobs ['w']" in warning["message"]


def test_without_the_flag_kueue_is_not_read_and_suspended_jobsets_wait() -> None:
    cluster = tpu_cluster(blocks=3)
    setup(cluster)
    submit(cluster, "a", jobs=2)
    Controller(
        cluster,
        ControllerConfig(solver="best-fit", window_s=0.0),
        clocks=Clocks(sleep=lambda s: None),
    ).run_once()
    assert check_of(cluster, "a")["state"] == "Pending"
    assert ledger(cluster).placement("default/a", "") is None
