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
from tests.cluster.test_gate_binding import (
    HOSTNAME,
    POOL,
    V6E_HOST,
    coordinator_nodes,
    required_values,
    small_coordinator,
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


def in_class(manifest: dict[str, Any], priority_class: str) -> dict[str, Any]:
    """`manifest` with every pod template of this PriorityClass."""
    for rjob in manifest["spec"]["replicatedJobs"]:
        rjob["template"]["spec"]["template"]["spec"]["priorityClassName"] = priority_class
    return manifest


def coordinator_pods(scenario: Scenario, name: str) -> list[Any]:
    return [
        p
        for p in scenario.pods_of(name)
        if p.metadata.labels["batch.kubernetes.io/job-name"] == f"{name}-coord-0"
    ]


def test_a_victims_coordinator_not_bound_yet_keeps_its_room_until_the_victim_is_evicted(
    scenario: Scenario,
) -> None:
    """`idle` (low priority) runs its workers on a v5e slice; its coordinator is recorded on a
    v6e host for all four chips, ungated, and never bound (it names a scheduler that does not
    run). `late` (high priority) wants one chip of that host for its coordinator. With
    `--preemption`, `idle` is offered to the solver rather than held, and its coordinator's
    room still counts as its own: `late` gets the chip by evicting `idle`, and its pods are
    released only once `idle`'s are gone. Before, nothing counted that pod: `late` was placed
    beside it without evicting anyone, and the host would be overcommitted once it bound."""
    scenario.use_example_cluster("tpu-v5e-v6e.yaml")
    scenario.start_pod_reaper()  # no kubelet: the suspended JobSet's pods would stay Terminating
    scenario.start_webhook()
    scenario.start_controller("--preemption=lower-priority", "--replan-interval=2")
    idle = in_class(small_coordinator("idle", V6E_HOST, pods=1, chips=4), "low")
    coordinator = idle["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["spec"]
    coordinator["schedulerName"] = "no-such-scheduler"
    scenario.create_jobset(idle)
    wait_until(
        lambda: (
            any(
                not (p.spec.scheduling_gates or []) and not p.spec.node_name
                for p in coordinator_pods(scenario, "idle")
            )
            and sum(1 for p in scenario.pods_of("idle") if p.spec.node_name) == 2
        ),
        timeout_s=90,
        what="idle's workers bound and its coordinator ungated, not bound",
    )
    (pod,) = coordinator_pods(scenario, "idle")
    (host,) = required_values(pod, HOSTNAME)
    late = small_coordinator("late", {**V6E_HOST, HOSTNAME: host}, pods=1, chips=1)
    scenario.create_jobset(in_class(late, "high"))
    scenario.wait_for_event("idle", "Preempted")
    assert "Preempting" in reasons(scenario, "late")
    pods = scenario.wait_pods_bound("late", count=3, timeout_s=180)
    assert {p.spec.node_name for p in coordinator_pods(scenario, "late")} == {host}
    assert not any(gated(p) for p in pods)
    assert PREEMPTED_AT in scenario.get_jobset("idle")["metadata"]["annotations"]


def test_a_pod_without_an_exclusive_key_enters_a_victims_slice_only_by_evicting_it(
    scenario: Scenario,
) -> None:
    """`idle` (low priority) runs on a v5e slice, two chips of each host's four. `late` (high
    priority) has a coordinator without an exclusive key (one chip) that only that slice's
    hosts may take. With
    `--preemption`, `idle` is offered to the solver rather than held, and its slice stays closed
    to such pods in its name: `late` evicts `idle` and its coordinator goes there once `idle`'s
    pods are gone. Before, the slice was open to it with `idle` left running: the ledger's last
    check refused that record (the slice held whole), and every cycle made the same plan."""
    scenario.use_example_cluster("tpu-v5e-v6e.yaml")
    scenario.start_pod_reaper()  # no kubelet: the suspended JobSet's pods would stay Terminating
    scenario.start_webhook()
    scenario.start_controller("--preemption=lower-priority", "--replan-interval=2")
    idle = prioritized("idle", slices=1, priority_class="low")
    pod = idle["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    pod["containers"][0]["resources"]["limits"]["google.com/tpu"] = 2  # two chips left per host
    scenario.create_jobset(idle)
    scenario.wait_pods_bound("idle", count=2)
    jobs = assignment_of(scenario.get_jobset("idle"))["jobs"].values()
    (slice_,) = {j["domain"]["value"] for j in jobs}
    late = small_coordinator("late", {POOL: slice_}, pods=1, chips=1)
    scenario.create_jobset(in_class(late, "high"))
    scenario.wait_for_event("idle", "Preempted")
    scenario.wait_pods_bound("late", count=3, timeout_s=180)
    labels = scenario.node_labels()
    assert {labels[n][POOL] for n in coordinator_nodes(scenario, "late")} == {slice_}
    messages = [e.message or "" for e in scenario.events("late")]
    assert not [m for m in messages if "overlaps" in m], messages


def test_a_jobset_of_the_victims_priority_keeps_off_the_slices_freed_for_a_higher_one(
    scenario: Scenario,
) -> None:
    """`low` holds every usable v5e slice. `peer`, of `low`'s priority, has two pods without an
    exclusive key that only v5e hosts fit, and waits. `high` needs one slice and evicts `low`,
    which frees all seven: the six `high` leaves stay closed to `peer`, which may not evict
    `low`. Before, the planner put `peer`'s pods on one of them, the plan said `low` was
    preempted for `peer` too, and the checker refused it: every cycle planned nothing ("plan
    refused by the checker") and `high` never started."""
    scenario.use_example_cluster("tpu-v5e-v6e.yaml")  # 7 usable v5e slices
    scenario.start_pod_reaper()  # no kubelet: the suspended JobSet's pods would stay Terminating
    scenario.start_controller("--preemption=lower-priority", "--replan-interval=2")
    scenario.create_jobset(prioritized("low", slices=7, priority_class="low"))
    scenario.wait_pods_bound("low", count=14)
    peer = prioritized("peer", slices=1, priority_class="low")
    del peer["metadata"]["annotations"]["alpha.jobset.sigs.k8s.io/exclusive-topology"]
    scenario.create_jobset(peer)
    scenario.wait_for_event("peer", "Unschedulable")
    scenario.create_jobset(prioritized("high", slices=1, priority_class="high"))
    scenario.wait_for_event("low", "Preempted")
    scenario.wait_pods_bound("high", count=2, timeout_s=180)
    messages = [e.message or "" for name in ("low", "peer", "high") for e in scenario.events(name)]
    assert not [m for m in messages if "checker" in m], messages
