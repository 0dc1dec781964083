"""The simulated JobSet and Job controllers make the pods the real ones make, as placer reads them.

`benchmarks/simulate/cluster_sim.create_pods` stands in for JobSet and the job controller in the
controller's unit tests and the benchmarks. Here one JobSet is created on the real control plane
(JobSet v0.12.0's controller and webhooks, kube-controller-manager's job controller) and the same
object in the in-memory cluster: for every pod both made, placer must read the same coordinates
(`pod_ref`), and every label, annotation, gate, node selector and toleration the simulation sets
must be on the real pod with the same value.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from benchmarks.simulate import cluster_sim as sim
from placer.controller.act.memory_adapter import MemoryCluster
from placer.model.kube.pods import JOBSET_UID_LABEL, pod_ref
from tests.cluster.processes import wait_until
from tests.cluster.scenario import Scenario

POOL = "cloud.google.com/gke-nodepool"

JOBSETS: dict[str, dict[str, Any]] = {
    "plain": {"replicated_jobs": (("workers", 2, 2, {"cpu": "1"}),)},
    "exclusive": {
        "replicated_jobs": (("workers", 2, 2, {"cpu": "1"}),),
        "exclusive_key": POOL,
    },
    "exclusive-node-selector": {
        "replicated_jobs": (("workers", 2, 2, {"cpu": "1"}), ("ps", 1, 1, {"cpu": "1"})),
        "exclusive_key": POOL,
        "node_selector_strategy": True,
    },
    "priority": {"replicated_jobs": (("workers", 1, 2, {"cpu": "1"}),), "priority": 7},
}


def keyed(pods: list[dict[str, Any]]) -> dict[tuple[str, int], dict[str, Any]]:
    result = {}
    for pod in pods:
        ref = pod_ref(pod)
        assert ref is not None, pod["metadata"]["name"]
        result[(f"{ref.jobset}-{ref.replicated_job}-{ref.job_index}", ref.completion_index)] = pod
    return result


def missing(simulated: dict[str, Any], real: dict[str, Any]) -> dict[str, Any]:
    """The entries of `simulated` the real mapping lacks or holds with another value."""
    return {k: v for k, v in simulated.items() if real.get(k) != v}


@pytest.mark.parametrize("case", sorted(JOBSETS))
def test_simulated_pods_carry_what_the_real_controllers_put_on_theirs(
    scenario: Scenario, case: str
) -> None:
    namespace = scenario.namespace
    manifest = sim.jobset_object("js", namespace=namespace, **JOBSETS[case])
    total = sum(r[1] * r[2] for r in JOBSETS[case]["replicated_jobs"])
    priority = JOBSETS[case].get("priority")
    classes = [] if priority is None else [sim.priority_class_object(priority)]
    with scenario.priority_classes(classes):
        _compare(scenario, case, manifest, total)


def _compare(scenario: Scenario, case: str, manifest: dict[str, Any], total: int) -> None:
    namespace = scenario.namespace
    scenario.create_jobset(copy.deepcopy(manifest))

    def real_pods() -> list[dict[str, Any]]:
        pods = scenario.core.list_namespaced_pod(namespace).items
        return [scenario.core.api_client.sanitize_for_serialization(p) for p in pods]

    # With exclusive placement by affinity (no node-selector strategy), JobSet's pod webhook
    # admits a follower only once its leader is scheduled; gated, it never is: leaders only.
    leaders = sum(r[1] for r in JOBSETS[case]["replicated_jobs"])
    expected = leaders if case == "exclusive" else total
    wait_until(lambda: len(real_pods()) >= expected, timeout_s=60, what=f"{expected} pods")
    real = keyed(real_pods())
    memory = MemoryCluster()
    memory.create("jobsets", manifest)
    simulated = keyed(sim.create_pods(memory, namespace, "js"))
    assert set(real) <= set(simulated), sorted(set(real) - set(simulated))
    jobset_uid = scenario.get_jobset("js")["metadata"]["uid"]
    differences = {}
    for key, pod in real.items():
        twin = simulated[key]
        twin["metadata"]["labels"][JOBSET_UID_LABEL] = jobset_uid
        assert pod_ref(pod) == pod_ref(twin), (pod_ref(pod), pod_ref(twin))
        found = {
            "labels": missing(twin["metadata"]["labels"], pod["metadata"].get("labels") or {}),
            "annotations": missing(
                twin["metadata"].get("annotations") or {}, pod["metadata"].get("annotations") or {}
            ),
            "schedulingGates": twin["spec"].get("schedulingGates")
            != pod["spec"].get("schedulingGates"),
            "nodeSelector": missing(
                twin["spec"].get("nodeSelector") or {}, pod["spec"].get("nodeSelector") or {}
            ),
            "priority": missing(
                {k: v for k, v in twin["spec"].items() if k.startswith("priority")}, pod["spec"]
            ),
            "tolerations": [
                t
                for t in twin["spec"].get("tolerations") or []
                if t not in pod["spec"].get("tolerations", [])
            ],
        }
        found = {k: v for k, v in found.items() if v}
        if found:
            differences[key] = found
    assert not differences, differences
