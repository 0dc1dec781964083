"""The controller's topology-aware preemption on the real control plane (real JobSet, Job
controller and kube-scheduler; no Kueue). A low-priority JobSet holds every usable TPU slice; a
high-priority one needs one: with `--preemption lower-priority` placer records the eviction in its
ledger, suspends the low one (JobSet suspends its child Jobs, the Job controller deletes their
pods), places the high one on a slice the low one held once those pods are gone, and resumes the
low one, whose new pods come back gated: it is back in the queue."""

from __future__ import annotations

import copy
import json
import signal
from typing import Any

from tests.cluster.processes import wait_until
from tests.cluster.scenario import (
    GATE,
    PLACER_SYSTEM,
    REPO,
    Scenario,
    assignment_of,
    load_documents,
)

PREEMPTED_AT = "placer.dev/preempted-at"


def prioritized(name: str, slices: int, priority_class: str) -> dict[str, Any]:
    """The example multislice JobSet, `slices` v5e slices, gated for placer, of this class."""
    (manifest,) = load_documents(REPO / "examples/jobsets/tpu-v5e-multislice.yaml")
    manifest = copy.deepcopy(manifest)
    manifest["metadata"]["name"] = name
    rjob = manifest["spec"]["replicatedJobs"][0]
    rjob["replicas"] = slices
    pod = rjob["template"]["spec"]["template"]["spec"]
    pod["priorityClassName"] = priority_class
    pod["schedulingGates"] = [{"name": GATE}]
    return manifest


def gated(pod: Any) -> bool:
    return GATE in [g.name for g in pod.spec.scheduling_gates or []]


def reasons(scenario: Scenario, name: str) -> set[str]:
    return {e.reason for e in scenario.events(name)}


def ledger_kinds(scenario: Scenario) -> list[str]:
    ledger = scenario.core.read_namespaced_config_map("placer-ledger", PLACER_SYSTEM)
    return sorted(json.loads(text)["kind"] for text in (ledger.data or {}).values())


def test_a_high_priority_jobset_preempts_the_low_one_holding_its_slices(
    scenario: Scenario,
) -> None:
    scenario.use_example_cluster("tpu-v5e-v6e.yaml")  # 7 usable v5e slices
    scenario.start_pod_reaper()  # no kubelet: the suspended JobSet's pods would stay Terminating
    scenario.start_controller("--preemption=lower-priority", "--replan-interval=2")
    scenario.create_jobset(prioritized("low", slices=7, priority_class="low"))
    scenario.wait_pods_bound("low", count=14)
    held = {
        j["domain"]["value"] for j in assignment_of(scenario.get_jobset("low"))["jobs"].values()
    }
    assert len(held) == 7

    scenario.create_jobset(prioritized("high", slices=1, priority_class="high"))

    pods = scenario.wait_pods_bound("high", count=2, timeout_s=180)
    record = assignment_of(scenario.get_jobset("high"))
    [slice_] = {j["domain"]["value"] for j in record["jobs"].values()}
    assert slice_ in held
    low = scenario.get_jobset("low")
    assert PREEMPTED_AT in low["metadata"]["annotations"]
    assert not any(gated(p) for p in pods)
    # no pod of low was left on high's slice when high's pods were released
    labels = scenario.node_labels()
    assert {labels[p.spec.node_name]["cloud.google.com/gke-nodepool"] for p in pods} == {slice_}
    assert "Preempted" in reasons(scenario, "low")
    assert {"Preempting", "Placed"} <= reasons(scenario, "high")
    # low is resumed (event Requeued) by a write after high's pods are released: wait for it
    wait_until(
        lambda: "Requeued" in reasons(scenario, "low"), timeout_s=60, what="low's Requeued event"
    )
    [preempted] = [e for e in scenario.events("low") if e.reason == "Preempted"]
    assert f"{scenario.namespace}/high" in preempted.message

    # low is back in the queue: resumed, its new pods gated (6 slices free, it needs 7). Only
    # the leader pods exist: JobSet's exclusive-topology webhook refuses a follower until its
    # leader is scheduled, as on low's first start.
    def requeued() -> bool:
        js = scenario.get_jobset("low")
        new = scenario.pods_of("low")
        jobs = {p.metadata.labels["batch.kubernetes.io/job-name"] for p in new}
        return (
            not js["spec"].get("suspend")
            and len(jobs) == 7
            and all(gated(p) and not p.spec.node_name for p in new)
        )

    try:
        wait_until(requeued, timeout_s=120, what="low resumed with its pods gated")
    except TimeoutError as e:
        seen = [
            (p.metadata.name, [g.name for g in p.spec.scheduling_gates or []], p.spec.node_name)
            for p in scenario.pods_of("low")
        ]
        suspended = scenario.get_jobset("low")["spec"].get("suspend")
        raise AssertionError(f"{e}: suspend={suspended}, pods={seen}") from e
    wait_until(
        lambda: "eviction" not in ledger_kinds(scenario),
        timeout_s=60,
        what="the eviction released from the ledger",
    )
    assert "placement" in ledger_kinds(scenario)
    assert len(scenario.get_jobset("low")["metadata"]["annotations"][PREEMPTED_AT].split(",")) == 1


def test_a_controller_killed_mid_eviction_finishes_it_after_a_restart(scenario: Scenario) -> None:
    """SIGKILL as soon as the ledger records the eviction (before or just after the suspend,
    whichever the race gives); the restarted controller finishes from the ledger: low suspended
    and back in the queue, high on one of low's slices, no slice held twice."""
    scenario.use_example_cluster("tpu-v5e-v6e.yaml")
    scenario.start_pod_reaper()
    controller = scenario.start_controller("--preemption=lower-priority", "--replan-interval=2")
    scenario.create_jobset(prioritized("low", slices=7, priority_class="low"))
    scenario.wait_pods_bound("low", count=14)
    held = {
        j["domain"]["value"] for j in assignment_of(scenario.get_jobset("low"))["jobs"].values()
    }
    scenario.create_jobset(prioritized("high", slices=1, priority_class="high"))
    wait_until(
        lambda: "eviction" in ledger_kinds(scenario),
        timeout_s=120,
        what="the eviction in the ledger",
        interval_s=0.05,
    )
    controller.stop(sig=signal.SIGKILL)
    controller.start()

    pods = scenario.wait_pods_bound("high", count=2, timeout_s=180)
    [slice_] = {
        j["domain"]["value"] for j in assignment_of(scenario.get_jobset("high"))["jobs"].values()
    }
    assert slice_ in held
    labels = scenario.node_labels()
    assert {labels[p.spec.node_name]["cloud.google.com/gke-nodepool"] for p in pods} == {slice_}
    wait_until(
        lambda: (
            not scenario.get_jobset("low")["spec"].get("suspend")
            and all(gated(p) and not p.spec.node_name for p in scenario.pods_of("low"))
            and "eviction" not in ledger_kinds(scenario)
        ),
        timeout_s=120,
        what="low back in the queue and the eviction released",
    )
    assert len(scenario.get_jobset("low")["metadata"]["annotations"][PREEMPTED_AT].split(",")) == 1
    assert [e.reason for e in scenario.events("low")].count("Preempted") == 1
