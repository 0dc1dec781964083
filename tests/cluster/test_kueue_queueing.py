"""placer beside real Kueue: a queued JobSet is Kueue's until Kueue admits it.

Kueue's JobSet webhook suspends a JobSet created in a LocalQueue; placer plans no suspended
JobSet, so it holds no domain for one that Kueue has not admitted; once Kueue admits it (quota
reserved, JobSet unsuspended), the JobSet's pods are created, gated, and placer places them. A
JobSet over quota stays suspended and unplanned.
"""

from __future__ import annotations

import time
from typing import Any, cast

from kubernetes import client as k8s

from tests.cluster.kube import apply_all
from tests.cluster.processes import wait_until
from tests.cluster.scenario import Scenario, assignment_of
from tests.cluster.test_gate_binding import multislice

KUEUE = "kueue.x-k8s.io/v1beta2"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"


def queues(scenario: Scenario, tpu_quota: int) -> list[dict[str, Any]]:
    cluster_queue = f"cq-{scenario.namespace}"[:63]
    quota = [{"name": "google.com/tpu", "nominalQuota": tpu_quota}]
    return [
        {"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": "tpu-v5e"}},
        {
            "apiVersion": KUEUE,
            "kind": "ClusterQueue",
            "metadata": {"name": cluster_queue},
            "spec": {
                "namespaceSelector": {
                    "matchLabels": {"kubernetes.io/metadata.name": scenario.namespace}
                },
                "resourceGroups": [
                    {
                        "coveredResources": ["google.com/tpu"],
                        "flavors": [
                            {
                                "name": "tpu-v5e",
                                "resources": quota,
                            }
                        ],
                    }
                ],
            },
        },
        {
            "apiVersion": KUEUE,
            "kind": "LocalQueue",
            "metadata": {"name": "training", "namespace": scenario.namespace},
            "spec": {"clusterQueue": cluster_queue},
        },
    ]


def queued(name: str, slices: int) -> dict[str, Any]:
    manifest = multislice(name, slices)
    manifest["metadata"].setdefault("labels", {})[QUEUE_LABEL] = "training"
    return manifest


def test_kueue_admits_within_quota_placer_places_only_what_kueue_admitted(
    scenario: Scenario,
) -> None:
    scenario.use_example_cluster("tpu-v5e-v6e.yaml")
    # Quota for 2 slices of v5e 2x4: 2 child Jobs x 2 pods x 4 chips.
    apply_all(scenario.admin, queues(scenario, tpu_quota=16))
    scenario.start_webhook()
    scenario.start_controller()

    scenario.create_jobset(queued("first", slices=2))
    scenario.wait_pods_bound("first", count=4, timeout_s=120)
    assert assignment_of(scenario.get_jobset("first"))["jobs"]

    scenario.create_jobset(queued("over-quota", slices=2))

    def kueue_saw_it() -> bool:
        listing = k8s.CustomObjectsApi(scenario._api).list_namespaced_custom_object(
            "kueue.x-k8s.io", "v1beta2", scenario.namespace, "workloads"
        )
        workloads = cast(dict[str, Any], listing)["items"]  # the JSON, typed `object`
        return any(
            owner["name"] == "over-quota"
            for w in workloads
            for owner in w["metadata"].get("ownerReferences", [])
        )

    wait_until(kueue_saw_it, timeout_s=60, what="Kueue's Workload for over-quota")
    # Several controller cycles: still suspended by Kueue, no pods, no record, no domain.
    for _ in range(3):
        jobset = scenario.get_jobset("over-quota")
        assert jobset["spec"]["suspend"] is True
        assert assignment_of(jobset) == {}
        assert scenario.pods_of("over-quota") == []
        time.sleep(2)

    # Quota frees when the first finishes; Kueue admits the second and placer places it.
    scenario.start_pod_reaper()
    scenario.custom.delete_namespaced_custom_object(
        "jobset.x-k8s.io", "v1alpha2", scenario.namespace, "jobsets", "first"
    )
    scenario.wait_pods_bound("over-quota", count=4, timeout_s=180)
    assert assignment_of(scenario.get_jobset("over-quota"))["jobs"]
