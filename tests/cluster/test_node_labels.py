"""The node-labels binding with JobSet's node-selector strategy, on the real control plane.

JobSet (its own controller and webhook) gives each child Job `nodeSelector:
alpha.jobset.sigs.k8s.io/namespaced-job=<ns>_<job>` and a toleration for the no-schedule taint;
placer labels and taints the nodes of each child Job's planned domain; kube-scheduler does the
rest. Nobody else labels nodes, so a pod bound at all is a pod bound where placer said.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from benchmarks.simulate import cluster_sim as sim
from tests.cluster.scenario import Scenario, assignment_of
from tests.cluster.test_gate_binding import POOL, V6E_HOST, multislice, with_coordinator

NAMESPACED_JOB = "alpha.jobset.sigs.k8s.io/namespaced-job"
NO_SCHEDULE = "alpha.jobset.sigs.k8s.io/no-schedule"


def labeled(name: str, slices: int) -> dict[str, Any]:
    """The multislice example asking for JobSet's node-selector strategy."""
    manifest = multislice(name, slices=slices)
    manifest["metadata"]["annotations"]["alpha.jobset.sigs.k8s.io/node-selector"] = "true"
    return manifest


def test_placer_labels_each_domain_and_jobset_pins_each_child_job_to_it(
    scenario: Scenario,
) -> None:
    scenario.use_example_cluster("tpu-v5e-v6e.yaml")
    scenario.start_controller("--binding=node-labels")
    scenario.create_jobset(labeled("labeled", slices=3))

    pods = scenario.wait_pods_bound("labeled", count=6)

    record = assignment_of(scenario.get_jobset("labeled"))
    labels = scenario.node_labels()
    by_job: dict[str, set[str]] = defaultdict(set)
    for pod in pods:
        job = pod.metadata.labels["batch.kubernetes.io/job-name"]
        on = labels[pod.spec.node_name]
        assert on[NAMESPACED_JOB] == f"{scenario.namespace}_{job}"
        by_job[job].add(on[POOL])
    assert {job: {record["jobs"][job]["domain"]["value"]} for job in by_job} == dict(by_job)
    assert len({next(iter(p)) for p in by_job.values()}) == 3
    # Every node of a planned domain carries the label and the taint, and no other node does.
    planned = {record["jobs"][job]["domain"]["value"] for job in by_job}
    for node in scenario.core.list_node().items:
        assert node.metadata is not None and node.metadata.labels is not None
        assert node.spec is not None  # the API server returns both; every node here is labelled
        in_plan = node.metadata.labels[POOL] in planned
        assert (NAMESPACED_JOB in node.metadata.labels) == in_plan, node.metadata.name
        taints = {t.key for t in node.spec.taints or []}
        assert (NO_SCHEDULE in taints) == in_plan, node.metadata.name


def test_a_finished_jobsets_labels_and_taints_go_and_its_slices_are_labeled_for_the_next(
    scenario: Scenario,
) -> None:
    """`first` holds four of the seven usable slices; `second` needs four and waits. Every worker
    of `first` succeeds, JobSet marks it Completed: placer takes its label and taint off every
    node, labels the slices `second` gets (some of them `first`'s), and JobSet's node selector
    brings `second`'s pods there. No node keeps a label of `first`."""
    scenario.use_example_cluster("tpu-v5e-v6e.yaml")
    scenario.start_controller("--binding=node-labels")
    scenario.create_jobset(labeled("first", slices=4))
    first_pods = scenario.wait_pods_bound("first", count=8)
    scenario.create_jobset(labeled("second", slices=4))

    from tests.cluster.processes import wait_until

    scenario.wait_for_event("second", "Unschedulable", timeout_s=60)
    scenario.report_phase(first_pods, "Succeeded")
    pods = scenario.wait_pods_bound("second", count=8, timeout_s=120)
    labels = scenario.node_labels()
    first_slices = {labels[p.spec.node_name][POOL] for p in first_pods}
    second_slices = {labels[p.spec.node_name][POOL] for p in pods}
    assert len(second_slices) == 4 and second_slices & first_slices
    mine = f"{scenario.namespace}_second-workers-"
    for pod in pods:
        assert labels[pod.spec.node_name][NAMESPACED_JOB].startswith(mine)

    def only_seconds_marks() -> bool:
        for node in scenario.core.list_node().items:
            assert node.metadata is not None and node.spec is not None  # the API server sets both
            node_labels = node.metadata.labels or {}
            value = node_labels.get(NAMESPACED_JOB)
            tainted = any(t.key == NO_SCHEDULE for t in node.spec.taints or [])
            in_second = node_labels.get(POOL) in second_slices
            if (value is not None and not value.startswith(mine)) or tainted != in_second:
                return False
        return True

    wait_until(only_seconds_marks, timeout_s=30, what="only second's labels and taints left")


def node(name: str, *, labels: dict[str, str], taints: list[dict[str, str]]) -> dict[str, Any]:
    """A Ready node of 4 TPU chips, with these labels and taints."""
    return sim.node_object(name, labels, allocatable={"google.com/tpu": 4}, taints=taints)


def test_placers_node_label_patch_is_accepted_for_every_shape_of_node(scenario: Scenario) -> None:
    """The patch the node-labels binding sends (`node_label_patch`: the label, placer's mark and
    taint set or all three removed, the whole taint list with the resourceVersion) on nodes as a
    cluster has them: the real API server accepts each and the node comes out exactly as meant,
    its other labels and taints untouched."""
    from placer.controller.decide.records.bindings import LABELED_BY_ANNOTATION, node_label_patch
    from tests.cluster.kube import dry_run_merge_patch

    tpu = {"key": "google.com/tpu", "value": "present", "effect": "NoSchedule"}
    ours = {"key": NO_SCHEDULE, "effect": "NoSchedule"}
    mine, theirs = f"{scenario.namespace}_js-w-0", f"{scenario.namespace}_old-w-1"
    shapes = {
        "untainted": (node("n-plain", labels={}, taints=[]), mine),
        "accelerator taint": (node("n-tpu", labels={}, taints=[tpu]), mine),
        "another child Job's": (
            node("n-other", labels={NAMESPACED_JOB: theirs}, taints=[tpu, ours]),
            mine,
        ),
        "taint left by a crash": (node("n-crash", labels={}, taints=[ours, tpu]), mine),
        "released": (node("n-done", labels={NAMESPACED_JOB: theirs}, taints=[tpu, ours]), None),
    }
    scenario.use_nodes(body for body, _ in shapes.values())
    for shape, (body, value) in shapes.items():
        name = body["metadata"]["name"]
        stored = scenario.core.api_client.sanitize_for_serialization(scenario.core.read_node(name))
        patch = node_label_patch(stored, value)
        assert patch is not None, shape
        status, after = dry_run_merge_patch(
            scenario.core.api_client, f"/api/v1/nodes/{name}", patch
        )
        assert status < 300, (shape, after)
        labels, annotations = after["metadata"]["labels"], after["metadata"].get("annotations", {})
        taints = [(t["key"], t["effect"]) for t in after["spec"].get("taints", [])]
        assert labels.get(NAMESPACED_JOB) == value, shape
        assert annotations.get(LABELED_BY_ANNOTATION) == value, shape
        assert taints.count((NO_SCHEDULE, "NoSchedule")) == (value is not None), shape
        others = [t for t in body["spec"].get("taints", []) if t["key"] != NO_SCHEDULE]
        kept = [(t["key"], t["effect"]) for t in others]
        assert [t for t in taints if t[0] != NO_SCHEDULE] == kept, shape
        assert labels["kubernetes.io/hostname"] == name, shape


def test_jobset_selects_only_child_jobs_with_the_key_and_the_flag_together(
    scenario: Scenario,
) -> None:
    """JobSet gives a child Job its node selector only when the exclusive key and the
    node-selector flag apply to it together. `apart` has the key on its workers' template and
    the flag on the JobSet, and a coordinator with no key: JobSet selects none of them, so
    placer refuses it with the reason instead of labeling nodes no pod will seek. `together`
    has the flag beside the key on its workers' template: selected, and placed."""
    scenario.use_example_cluster("tpu-v5e-v6e.yaml")
    scenario.start_controller("--binding=node-labels", "--replan-interval=2")
    apart = with_coordinator(labeled("apart", slices=1), V6E_HOST)
    coordinator = apart["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["spec"]
    del coordinator["hostNetwork"], coordinator["dnsPolicy"], coordinator["containers"][0]["ports"]
    scenario.create_jobset(apart)
    scenario.wait_for_event("apart", "Unschedulable")
    said = [e.message or "" for e in scenario.events("apart") if e.reason == "Unschedulable"]
    assert any("gives the child Jobs of workers, coord no node selector" in m for m in said), said
    pods = scenario.pods_of("apart")
    assert pods and not [p for p in pods if NAMESPACED_JOB in (p.spec.node_selector or {})]
    assert not [n for n, on in scenario.node_labels().items() if NAMESPACED_JOB in on]

    together = multislice("together", slices=2)
    key = together["metadata"]["annotations"].pop("alpha.jobset.sigs.k8s.io/exclusive-topology")
    template = together["spec"]["replicatedJobs"][0]["template"]
    template.setdefault("metadata", {})["annotations"] = {
        "alpha.jobset.sigs.k8s.io/exclusive-topology": key,
        "alpha.jobset.sigs.k8s.io/node-selector": "true",
    }
    scenario.create_jobset(together)
    placed = scenario.wait_pods_bound("together", count=4)
    labels = scenario.node_labels()
    for pod in placed:
        job = pod.metadata.labels["batch.kubernetes.io/job-name"]
        assert pod.spec.node_selector[NAMESPACED_JOB] == f"{scenario.namespace}_{job}"
        assert labels[pod.spec.node_name][NAMESPACED_JOB] == f"{scenario.namespace}_{job}"
