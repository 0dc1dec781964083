"""The gate binding end to end on the real control plane.

placer's webhook (registered by a MutatingWebhookConfiguration, called by kube-apiserver over TLS)
gates the pods the job controller creates for the JobSet controller's child Jobs; placer's
controller, running as the shipped ServiceAccount, plans the JobSet, writes required node affinity
and removes the gate; kube-scheduler binds every pod inside its planned domain, one child Job per
domain. JobSet's own exclusive placement stays on (the example JobSets carry
`alpha.jobset.sigs.k8s.io/exclusive-topology`), so this is also the scenario where the two must
not fight.
"""

from __future__ import annotations

import copy
from collections import defaultdict
from typing import Any

from tests.cluster.processes import wait_until
from tests.cluster.scenario import GATE, REPO, Scenario, assignment_of, load_documents

POOL = "cloud.google.com/gke-nodepool"
HOSTNAME = "kubernetes.io/hostname"


def multislice(name: str, slices: int) -> dict[str, Any]:
    (manifest,) = load_documents(REPO / "examples/jobsets/tpu-v5e-multislice.yaml")
    manifest = copy.deepcopy(manifest)
    manifest["metadata"]["name"] = name
    manifest["spec"]["replicatedJobs"][0]["replicas"] = slices
    return manifest


def with_coordinator(manifest: dict[str, Any], node_selector: dict[str, str]) -> dict[str, Any]:
    """`manifest` with its first replicated job keeping the exclusive key (moved from the
    JobSet onto that job's template) and a coordinator beside it without one: one pod of the
    workers' shape, `node_selector` added to theirs."""
    exclusive = "alpha.jobset.sigs.k8s.io/exclusive-topology"
    workers = manifest["spec"]["replicatedJobs"][0]
    key = manifest["metadata"]["annotations"].pop(exclusive)
    workers["template"].setdefault("metadata", {}).setdefault("annotations", {})[exclusive] = key
    coordinator = copy.deepcopy(workers)
    coordinator["name"] = "coord"
    coordinator["replicas"] = 1
    coordinator["template"]["metadata"]["annotations"].pop(exclusive)
    coordinator["template"]["spec"].update(parallelism=1, completions=1)
    coordinator["template"]["spec"]["template"]["spec"]["nodeSelector"].update(node_selector)
    manifest["spec"]["replicatedJobs"].append(coordinator)
    return manifest


def pools_by_child_job(scenario: Scenario, pods: list[Any]) -> dict[str, set[str]]:
    labels = scenario.node_labels()
    pools: dict[str, set[str]] = defaultdict(set)
    for pod in pods:
        job = pod.metadata.labels["batch.kubernetes.io/job-name"]
        pools[job].add(labels[pod.spec.node_name][POOL])
    return dict(pools)


def required_values(pod: Any, key: str) -> list[str]:
    affinity = pod.spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution
    return [
        value
        for term in affinity.node_selector_terms
        for expression in term.match_expressions or []
        if expression.key == key
        for value in expression.values or []
    ]


def with_pods_removed(scenario: Scenario) -> None:
    """The example TPU cluster, the webhook and the controller, and a reaper that finishes pod
    deletions as a kubelet would (restarts and suspends delete pods; nothing else here does)."""
    scenario.use_example_cluster("tpu-v5e-v6e.yaml")
    scenario.start_pod_reaper()
    scenario.start_webhook()
    scenario.start_controller()


def test_webhook_gates_controller_places_scheduler_binds_one_child_job_per_domain(
    scenario: Scenario,
) -> None:
    scenario.use_example_cluster("tpu-v5e-v6e.yaml")
    scenario.start_webhook()
    scenario.start_controller()
    scenario.create_jobset(multislice("train", slices=4))

    pods = scenario.wait_pods_bound("train", count=8)

    pools = pools_by_child_job(scenario, pods)
    assert sorted(pools) == [f"train-workers-{i}" for i in range(4)]
    assert all(len(p) == 1 for p in pools.values()), pools
    chosen = [next(iter(p)) for p in pools.values()]
    assert len(set(chosen)) == 4, f"two child Jobs share a slice: {pools}"
    record = assignment_of(scenario.get_jobset("train"))
    for job, pool in pools.items():
        assert record["jobs"][job]["domain"]["value"] == next(iter(pool))
    for pod in pods:
        assert GATE not in [g.name for g in pod.spec.scheduling_gates or []]
        job = pod.metadata.labels["batch.kubernetes.io/job-name"]
        assert required_values(pod, POOL) == [record["jobs"][job]["domain"]["value"]]


def test_a_jobset_that_cannot_be_placed_keeps_its_pods_gated_with_an_event(
    scenario: Scenario,
) -> None:
    scenario.use_example_cluster("tpu-v5e-v6e.yaml")
    scenario.start_webhook()
    scenario.start_controller()
    # The example cluster has 8 v5e 2x4 slices, one with a NotReady host: 7 can take a child Job.
    scenario.create_jobset(multislice("too-wide", slices=8))

    scenario.wait_for_event("too-wide", "Unschedulable", timeout_s=90)
    pods = scenario.pods_of("too-wide")
    assert pods, "the child Jobs' pods exist"
    assert all(GATE in [g.name for g in p.spec.scheduling_gates or []] for p in pods)
    assert all(not p.spec.node_name for p in pods)
    assert assignment_of(scenario.get_jobset("too-wide")) == {}


def test_a_jobset_restart_recreates_child_jobs_in_the_same_domains(scenario: Scenario) -> None:
    with_pods_removed(scenario)
    scenario.create_jobset(multislice("restarted", slices=2))
    before = pools_by_child_job(scenario, scenario.wait_pods_bound("restarted", count=4))
    uids = {p.metadata.uid for p in scenario.pods_of("restarted")}

    # A worker fails (what its kubelet would report): backoffLimit 0 fails its Job, and the
    # JobSet's failurePolicy (maxRestarts 3) recreates every child Job.
    victim = scenario.pods_of("restarted")[0]
    scenario.core.patch_namespaced_pod_status(
        victim.metadata.name, scenario.namespace, {"status": {"phase": "Failed"}}
    )

    def restarted() -> bool:
        status = scenario.get_jobset("restarted").get("status", {})
        pods = scenario.pods_of("restarted")
        return (
            status.get("restarts", 0) >= 1
            and len(pods) == 4
            and not uids & {p.metadata.uid for p in pods}
            and all(p.spec.node_name for p in pods)
        )

    from tests.cluster.processes import wait_until

    wait_until(restarted, timeout_s=120, what="the JobSet restarted and its new pods bound")
    pods = scenario.pods_of("restarted")
    assert {p.metadata.labels["jobset.sigs.k8s.io/restart-attempt"] for p in pods} == {"1"}
    assert pools_by_child_job(scenario, pods) == before


def test_a_restart_after_a_host_is_cordoned_moves_only_the_child_job_that_lost_its_slice(
    scenario: Scenario,
) -> None:
    """deploy/controller/README.md, "Lost nodes": a host of one slice is cordoned (a bad TPU
    host taken out), then a worker fails and the JobSet restarts every child Job. The child
    Job whose slice lost a host is re-placed on another whole slice; its sibling keeps its own."""
    with_pods_removed(scenario)
    scenario.create_jobset(multislice("moved", slices=2))
    before = pools_by_child_job(scenario, scenario.wait_pods_bound("moved", count=4))
    uids = {p.metadata.uid for p in scenario.pods_of("moved")}
    lost_job, (lost_pool,) = sorted(before.items())[0]
    kept_job, kept_pools = sorted(before.items())[1]
    host = next(
        node for node, labels in scenario.node_labels().items() if labels.get(POOL) == lost_pool
    )
    scenario.core.patch_node(host, {"spec": {"unschedulable": True}})
    victim = scenario.pods_of("moved")[0]
    scenario.core.patch_namespaced_pod_status(
        victim.metadata.name, scenario.namespace, {"status": {"phase": "Failed"}}
    )

    def restarted() -> bool:
        pods = scenario.pods_of("moved")
        return (
            len(pods) == 4
            and not uids & {p.metadata.uid for p in pods}
            and all(p.spec.node_name for p in pods)
        )

    from tests.cluster.processes import wait_until

    wait_until(restarted, timeout_s=120, what="the JobSet restarted and its new pods bound")
    after = pools_by_child_job(scenario, scenario.pods_of("moved"))
    assert after[kept_job] == kept_pools
    assert len(after[lost_job]) == 1 and lost_pool not in after[lost_job]
    assert after[lost_job].isdisjoint(kept_pools)
    record = assignment_of(scenario.get_jobset("moved"))
    assert {record["jobs"][lost_job]["domain"]["value"]} == after[lost_job]


def test_suspending_a_jobset_frees_its_slices_once_its_pods_are_gone(scenario: Scenario) -> None:
    """deploy/controller/README.md, "Suspended JobSets": JobSet suspends the child Jobs, the Job
    controller deletes their pods; once they are gone the controller releases the slices (a
    `Released` event, the record cleared) and a JobSet waiting for them is placed and bound."""
    with_pods_removed(scenario)
    scenario.create_jobset(multislice("first", slices=4))
    scenario.wait_pods_bound("first", count=8)
    scenario.create_jobset(multislice("second", slices=4))  # 7 whole slices: waits for first

    scenario.wait_for_event("second", "Unschedulable", timeout_s=60)
    scenario.patch_jobset("first", {"spec": {"suspend": True}})
    pods = scenario.wait_pods_bound("second", count=8, timeout_s=120)
    assert len(pools_by_child_job(scenario, pods)) == 4
    assert scenario.pods_of("first") == []
    assert assignment_of(scenario.get_jobset("first")) == {}
    assert any(e.reason == "Released" for e in scenario.events("first"))


def test_a_finished_jobset_frees_its_slices_for_a_waiting_one(scenario: Scenario) -> None:
    """Every worker of `first` succeeds (what its kubelet would report): the job controller
    completes each child Job, JobSet marks `first` Completed, and the controller places `second`,
    which waited for those slices, on them. The finished pods stay (phase Succeeded) and hold
    nothing."""
    scenario.use_example_cluster("tpu-v5e-v6e.yaml")
    scenario.start_webhook()
    scenario.start_controller()
    scenario.create_jobset(multislice("first", slices=4))
    first = pools_by_child_job(scenario, scenario.wait_pods_bound("first", count=8))
    scenario.create_jobset(multislice("second", slices=4))  # 7 whole slices: waits for first

    from tests.cluster.processes import wait_until

    scenario.wait_for_event("second", "Unschedulable", timeout_s=60)
    scenario.report_phase(scenario.pods_of("first"), "Succeeded")
    wait_until(
        lambda: scenario.get_jobset("first").get("status", {}).get("terminalState") == "Completed",
        timeout_s=120,
        what="first Completed",
    )
    second = pools_by_child_job(scenario, scenario.wait_pods_bound("second", count=8))
    assert len(second) == 4 and all(len(p) == 1 for p in second.values())
    freed = set().union(*first.values())
    assert set().union(*second.values()) & freed, "second got none of first's slices"
    assert {p.status.phase for p in scenario.pods_of("first")} == {"Succeeded"}


def test_a_jobset_whose_workers_wait_for_a_ready_driver_gets_every_child_job_placed_at_once(
    scenario: Scenario,
) -> None:
    """`dependsOn`: JobSet creates the workers' child Jobs only once the driver's is Ready, and a
    driver stays unready until its pods are ungated. The controller places the whole JobSet from
    its manifest (the workers' slices recorded before their pods exist), so the driver starts, and
    the workers' pods, when they come, go to their recorded slices, each its own."""
    scenario.use_example_cluster("tpu-v5e-v6e.yaml")
    scenario.start_webhook()
    scenario.start_controller()
    manifest = multislice("ordered", slices=2)
    workers = manifest["spec"]["replicatedJobs"][0]
    driver = {**copy.deepcopy(workers), "name": "driver", "replicas": 1}
    workers["dependsOn"] = [{"name": "driver", "status": "Ready"}]
    manifest["spec"]["replicatedJobs"] = [driver, workers]
    scenario.create_jobset(manifest)

    driver_pods = scenario.wait_pods_bound("ordered", count=2)
    record = assignment_of(scenario.get_jobset("ordered"))
    assert sorted(record["jobs"]) == ["ordered-driver-0", "ordered-workers-0", "ordered-workers-1"]
    assert {p.metadata.labels["jobset.sigs.k8s.io/replicatedjob-name"] for p in driver_pods} == {
        "driver"
    }
    # What the kubelet reports once the driver's containers run and pass their probes.
    running = {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}
    for pod in driver_pods:
        scenario.core.patch_namespaced_pod_status(pod.metadata.name, scenario.namespace, running)
    pods = scenario.wait_pods_bound("ordered", count=6, timeout_s=120)
    pools = pools_by_child_job(scenario, pods)
    assert all(len(p) == 1 for p in pools.values()), pools
    assert len(set().union(*pools.values())) == 3, f"two child Jobs share a slice: {pools}"
    for job, pool in pools.items():
        assert {record["jobs"][job]["domain"]["value"]} == pool


def test_a_waiting_jobset_is_placed_once_a_new_slice_joins_the_cluster(scenario: Scenario) -> None:
    """A JobSet of eight v5e 2x4 slices waits (seven usable); a new node pool of that shape
    joins, as a cluster autoscaler or a provisioning request would add it: the controller sees
    the Nodes arrive and places the JobSet, one child Job per slice, the new one among them."""
    listing = scenario.use_example_cluster("tpu-v5e-v6e.yaml")
    scenario.start_webhook()
    scenario.start_controller()
    scenario.create_jobset(multislice("eight", slices=8))

    from tests.cluster.kube import create_nodes

    scenario.wait_for_event("eight", "Unschedulable", timeout_s=90)
    template = [
        n
        for n in listing["items"]
        if n["kind"] == "Node" and n["metadata"]["labels"][POOL] == "v5e-2x4-pool-0"
    ]
    joined = []
    for index, node in enumerate(template):
        new = copy.deepcopy(node)
        name = f"gke-tpu-v5e-2x4-pool-new-host-{index}"
        new["metadata"]["name"] = name
        new["metadata"]["labels"] |= {POOL: "v5e-2x4-pool-new", "kubernetes.io/hostname": name}
        joined.append(new)
    create_nodes(scenario.admin, joined)
    pods = scenario.wait_pods_bound("eight", count=16, timeout_s=120)
    pools = pools_by_child_job(scenario, pods)
    assert all(len(p) == 1 for p in pools.values()) and len(set().union(*pools.values())) == 8
    assert {"v5e-2x4-pool-new"} in pools.values()


V6E_HOST = {
    "cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice",
    "cloud.google.com/gke-tpu-topology": "4x4",
}


def small_coordinator(name: str, node_selector: dict[str, str], pods: int, chips: int) -> Any:
    """One v5e slice of workers and a coordinator of `pods` pods of `chips` chips each without
    an exclusive key, no host network nor host ports: it leaves room on its hosts."""
    manifest = with_coordinator(multislice(name, slices=1), node_selector)
    job = manifest["spec"]["replicatedJobs"][1]["template"]["spec"]
    job.update(parallelism=pods, completions=pods)
    pod = job["template"]["spec"]
    del pod["hostNetwork"], pod["dnsPolicy"], pod["containers"][0]["ports"]
    pod["containers"][0]["resources"]["limits"]["google.com/tpu"] = chips
    return manifest


def coordinator_nodes(scenario: Scenario, name: str) -> set[str]:
    return {
        p.spec.node_name
        for p in scenario.pods_of(name)
        if p.metadata.labels["batch.kubernetes.io/job-name"] == f"{name}-coord-0"
    }


def test_coordinators_share_a_host_in_the_room_records_leave_and_never_a_held_slice(
    scenario: Scenario,
) -> None:
    """`half` holds a v5e slice with two chips free on each host; `one`'s coordinator takes
    one chip of a v6e host. `two`'s coordinator (one chip) is pinned to that host and goes
    beside it: a record of pods without an exclusive key holds only their room, and the ledger
    commits such records side by side (round 48 closed the whole host, and `two` would wait
    for `one` to end). `three`'s coordinator (four pods of two chips, v5e) is kept off
    `half`'s slice, which its exclusive child Job holds whole: before round 48 the planner
    put it there, the ledger refused the record, and the same plan came every cycle.

    `idle`'s coordinator (two chips) is recorded on the same host but never bound (it names a
    scheduler that does not run), so the host's last two chips are its own: `late`'s (one
    chip, pinned there too) must wait, or the host would be overcommitted once `idle`'s pod
    binds. Without counting recorded pods not bound yet, `late` was placed there and ungated."""
    scenario.use_example_cluster("tpu-v5e-v6e.yaml")
    scenario.start_webhook()
    scenario.start_controller("--replan-interval=2")
    half = multislice("half", slices=1)
    pod = half["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    pod["containers"][0]["resources"]["limits"]["google.com/tpu"] = 2
    scenario.create_jobset(half)
    scenario.wait_pods_bound("half", count=2)
    scenario.create_jobset(small_coordinator("one", V6E_HOST, pods=1, chips=1))
    scenario.wait_pods_bound("one", count=3)
    (host,) = coordinator_nodes(scenario, "one")
    on_host = {**V6E_HOST, HOSTNAME: host}
    scenario.create_jobset(small_coordinator("two", on_host, pods=1, chips=1))
    scenario.create_jobset(small_coordinator("three", {}, pods=4, chips=2))
    scenario.wait_pods_bound("two", count=3)
    scenario.wait_pods_bound("three", count=6)
    labels = scenario.node_labels()
    half_pools = {labels[p.spec.node_name][POOL] for p in scenario.pods_of("half")}
    assert coordinator_nodes(scenario, "two") == {host}
    assert not {labels[n][POOL] for n in coordinator_nodes(scenario, "three")} & half_pools

    idle = small_coordinator("idle", on_host, pods=1, chips=2)
    idle["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["spec"]["schedulerName"] = (
        "no-such-scheduler"
    )
    scenario.create_jobset(idle)
    wait_until(
        lambda: any(
            not (p.spec.scheduling_gates or []) and not p.spec.node_name
            for p in scenario.pods_of("idle")
            if p.metadata.labels["batch.kubernetes.io/job-name"] == "idle-coord-0"
        ),
        timeout_s=60,
        what="idle's coordinator recorded and ungated, not bound",
    )
    scenario.create_jobset(small_coordinator("late", on_host, pods=1, chips=1))
    scenario.wait_for_event("late", "Unschedulable")
    said = [e.message or "" for e in scenario.events("late") if e.reason == "Unschedulable"]
    assert said and all(m.startswith("coord: needs 1 pod") for m in said), said
    assert all("1 no room for one pod (google.com/tpu)" in m for m in said), said
    late = [
        p
        for p in scenario.pods_of("late")
        if p.metadata.labels["batch.kubernetes.io/job-name"] == "late-coord-0"
    ]
    assert late and all(GATE in [g.name for g in p.spec.scheduling_gates or []] for p in late)
    for name in ("two", "three", "late"):
        messages = [e.message or "" for e in scenario.events(name)]
        assert not [m for m in messages if "overlaps" in m], messages
