"""The gate webhook down, as `failurePolicy: Fail` in deploy/webhook means it.

While no webhook answers (its registration points at a closed local port), the API server refuses
the pods of an opted-in JobSet rather than admitting them ungated, so no pod starts unplaced
beside gated siblings. The Job controller keeps retrying; once a webhook answers, every pod is
created gated, placed by the controller and bound on its child Job's slice.
"""

from __future__ import annotations

import time

from tests.cluster.processes import wait_until
from tests.cluster.scenario import Scenario, assignment_of
from tests.cluster.test_gate_binding import POOL, multislice, required_values


def test_pods_are_refused_while_the_webhook_is_down_then_created_gated_and_placed(
    scenario: Scenario,
) -> None:
    scenario.use_example_cluster("tpu-v5e-v6e.yaml")
    scenario.start_webhook().stop()  # registered, nothing listening
    scenario.start_controller()
    scenario.create_jobset(multislice("outage", slices=2))

    def refused() -> bool:
        events = scenario.core.list_namespaced_event(scenario.namespace).items
        return any(e.reason == "FailedCreate" and "placer" in (e.message or "") for e in events)

    wait_until(refused, timeout_s=60, what="the Job controller's pod creation refused")
    time.sleep(3)  # retries keep failing: still no pod
    assert scenario.pods_of("outage") == []

    scenario.start_webhook()
    pods = scenario.wait_pods_bound("outage", count=4, timeout_s=180)
    record = assignment_of(scenario.get_jobset("outage"))
    labels = scenario.node_labels()
    for pod in pods:
        job = pod.metadata.labels["batch.kubernetes.io/job-name"]
        domain = record["jobs"][job]["domain"]["value"]
        assert required_values(pod, POOL) == [domain]  # placed through the gate, not around it
        assert labels[pod.spec.node_name][POOL] == domain
