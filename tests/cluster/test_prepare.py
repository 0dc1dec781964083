"""`placer prepare`'s output created as it is, on the real control plane, without the webhook.

`prepare` is the way to opt JobSets in where the webhook is not installed: the gate in every pod
template (gate binding) or JobSet's node-selector annotations (node-labels binding). Its output
must pass the API server and JobSet's webhooks, and the controller must then place it and
kube-scheduler bind it.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml

from tests.cluster.scenario import REPO, Scenario, assignment_of
from tests.cluster.test_gate_binding import POOL

EXAMPLE = REPO / "examples/jobsets/tpu-v5e-multislice.yaml"


@pytest.mark.parametrize("binding", ["gate", "node-labels"])
def test_prepared_manifests_are_placed_and_bound_without_the_webhook(
    scenario: Scenario, binding: str
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "placer", "prepare", f"--binding={binding}", str(EXAMPLE)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    (manifest,) = list(yaml.safe_load_all(done.stdout))
    scenario.use_example_cluster("tpu-v5e-v6e.yaml")
    scenario.start_controller(f"--binding={binding}")
    scenario.create_jobset(manifest)
    pods = scenario.wait_pods_bound("multislice", count=8)
    record = assignment_of(scenario.get_jobset("multislice"))
    labels = scenario.node_labels()
    for pod in pods:
        job = pod.metadata.labels["batch.kubernetes.io/job-name"]
        assert labels[pod.spec.node_name][POOL] == record["jobs"][job]["domain"]["value"]
    assert len({labels[p.spec.node_name][POOL] for p in pods}) == 4
