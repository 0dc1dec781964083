"""Placer's Kueue check when Kueue preempts, and beside Workloads placer cannot serve (real
Kueue, real JobSet). Kueue owns preemption: placer only frees an evicted Workload's domains at
once, so the preemptor is placed on them; a Workload placer cannot serve gets a Warning and its
check is left as it is, and the others are still admitted."""

from __future__ import annotations

import time
from typing import Any, cast

from kubernetes import client as k8s

from tests.cluster.kube import apply_all
from tests.cluster.processes import wait_until
from tests.cluster.scenario import Scenario, assignment_of
from tests.cluster.test_kueue_admission_check import (
    CHECK,
    KUEUE,
    KUEUE_GROUP,
    KUEUE_VERSION,
    check_of,
    queued,
    setup,
    workload_of,
)

PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"


def slices_of(scenario: Scenario, jobset: str) -> set[str]:
    """The domains (node pools) placer recorded for each child Job of the JobSet."""
    record = assignment_of(scenario.get_jobset(jobset))
    return {job["domain"]["value"] for job in record["jobs"].values() if job.get("domain")}


def prioritized(name: str, slices: int, priority_class: str) -> dict[str, Any]:
    manifest = queued(name, slices=slices, expected="2h")
    manifest["metadata"]["labels"][PRIORITY_LABEL] = priority_class
    return manifest


def test_kueue_preempting_frees_the_domains_and_the_preemptor_is_placed_on_them(
    scenario: Scenario,
) -> None:
    scenario.use_example_cluster("tpu-v5e-v6e.yaml")  # 7 usable v5e slices
    setup(scenario, tpu_quota=48, preemption=True)  # 6 slices' worth
    apply_all(
        scenario.admin,
        [
            {
                "apiVersion": KUEUE,
                "kind": "WorkloadPriorityClass",
                "metadata": {"name": n},
                "value": v,
            }
            for n, v in (("placer-test-low", 100), ("placer-test-high", 1000))
        ],
    )
    scenario.start_controller("--kueue-admission-check", "--replan-interval=2")
    scenario.start_pod_reaper()  # no kubelet: evicted pods would stay Terminating

    scenario.create_jobset(prioritized("low", 6, "placer-test-low"))
    scenario.wait_pods_bound("low", count=12, timeout_s=240)
    low_slices = slices_of(scenario, "low")
    assert len(low_slices) == 6

    # high needs 2 slices: one is free, so it needs one of low's too, and quota only low holds
    scenario.create_jobset(prioritized("high", 2, "placer-test-high"))
    pods = scenario.wait_pods_bound("high", count=4, timeout_s=300)
    assert check_of(workload_of(scenario, "high"))["state"] == "Ready"
    high_slices = slices_of(scenario, "high")
    assert len(high_slices) == 2 and high_slices & low_slices  # on what Kueue's preemption freed
    labels = scenario.node_labels()
    assert {labels[p.spec.node_name]["cloud.google.com/gke-nodepool"] for p in pods} == high_slices

    low = scenario.get_jobset("low")
    assert low["spec"]["suspend"] is True  # Kueue evicted it; placer never preempts
    wl = workload_of(scenario, "low") or {}
    assert any(
        c["type"] == "Evicted" and c["status"] == "True"
        for c in (wl.get("status") or {}).get("conditions") or []
    )

    # low waits for quota again, and its check says when it would start once it has quota
    def told() -> bool:
        message: str = check_of(workload_of(scenario, "low")).get("message", "")
        return message.startswith("waits for Kueue to reserve quota; ")

    wait_until(told, timeout_s=60, what="low's quota-wait message")
    assert check_of(workload_of(scenario, "low"))["state"] == "Pending"


def hand_made_workload(name: str, *, owner: dict[str, Any] | None, pod_set: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if owner is not None:
        meta["ownerReferences"] = [owner]
    return {
        "apiVersion": KUEUE,
        "kind": "Workload",
        "metadata": meta,
        "spec": {
            "queueName": "training",
            "podSets": [
                {
                    "name": pod_set,
                    "count": 1,
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [
                                {
                                    "name": "c",
                                    "image": "busybox",
                                    "resources": {"requests": {"google.com/tpu": "4"}},
                                }
                            ],
                        }
                    },
                }
            ],
        },
    }


def test_workloads_placer_cannot_serve_are_warned_about_and_the_rest_is_admitted(
    scenario: Scenario,
) -> None:
    scenario.use_example_cluster("tpu-v5e-v6e.yaml")
    setup(scenario, tpu_quota=64)
    scenario.start_controller("--kueue-admission-check")
    # a JobSet placer manages, not in the queue: Kueue makes no Workload for it
    plain = queued("plain", slices=1)
    del plain["metadata"]["labels"]["kueue.x-k8s.io/queue-name"]
    plain["spec"]["suspend"] = True
    scenario.create_jobset(plain)
    owner = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "name": "plain",
        "uid": scenario.get_jobset("plain")["metadata"]["uid"],
        "controller": True,
    }
    custom = k8s.CustomObjectsApi(scenario._api)
    for body in (
        hand_made_workload("orphan", owner=None, pod_set="main"),
        hand_made_workload("mismatched", owner=owner, pod_set="nope"),
    ):
        custom.create_namespaced_custom_object(
            KUEUE_GROUP, KUEUE_VERSION, scenario.namespace, "workloads", body
        )
    scenario.create_jobset(queued("good", slices=2))
    scenario.wait_pods_bound("good", count=4, timeout_s=180)  # the cycle went on

    def warned(name: str) -> str:
        found = [e for e in scenario.events(name) if e.reason == "NotPlaceable"]
        return found[0].message if found else ""

    wait_until(lambda: warned("orphan") and warned("mismatched"), timeout_s=60, what="warnings")
    assert "no owner reference: placer plans only Workloads of a JobSet" in warned("orphan")
    assert "spec.podSets ['nope'] are not the replicatedJobs" in warned("mismatched")
    for name in ("orphan", "mismatched"):
        answer = custom.get_namespaced_custom_object(
            KUEUE_GROUP, KUEUE_VERSION, scenario.namespace, "workloads", name
        )
        wl = cast(dict[str, Any], answer)  # the JSON, typed `object`
        [entry] = [e for e in wl["status"]["admissionChecks"] if e["name"] == CHECK]
        assert entry["state"] == "Pending" and not entry.get("message")  # left as it is
    time.sleep(2)  # a further cycle warns no more: one event each
    assert [e.count for e in scenario.events("orphan") if e.reason == "NotPlaceable"] == [1]
