"""The node-labels binding with JobSet's node-selector strategy, on the real control plane.

JobSet (its own controller and webhook) gives each child Job `nodeSelector:
alpha.jobset.sigs.k8s.io/namespaced-job=<ns>_<job>` and a toleration for the no-schedule taint;
placer labels and taints the nodes of each child Job's planned domain; kube-scheduler does the
rest. Nobody else labels nodes, so a pod bound at all is a pod bound where placer said.
"""

from __future__ import annotations

from collections import defaultdict

from tests.cluster.scenario import Scenario, assignment_of
from tests.cluster.test_gate_binding import POOL, multislice

NAMESPACED_JOB = "alpha.jobset.sigs.k8s.io/namespaced-job"
NO_SCHEDULE = "alpha.jobset.sigs.k8s.io/no-schedule"


def test_placer_labels_each_domain_and_jobset_pins_each_child_job_to_it(
    scenario: Scenario,
) -> None:
    scenario.use_example_cluster("tpu-v5e-v6e.yaml")
    scenario.start_controller("--binding=node-labels")
    manifest = multislice("labeled", slices=3)
    manifest["metadata"]["annotations"]["alpha.jobset.sigs.k8s.io/node-selector"] = "true"
    scenario.create_jobset(manifest)

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
