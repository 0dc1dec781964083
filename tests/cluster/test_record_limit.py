"""The placement record at the real API server's annotation limit
(controller/decide/records/recordsize.py).

The API server refuses a JobSet whose annotations hold more than 256 KiB together. The record is
written after the ledger commit, so a record the JobSet could not carry would be refused on every
cycle while the ledger held its domains. The controller refuses such a placement before the
commit, with its reason, and places the JobSet once its annotations leave room.
"""

from __future__ import annotations

import copy
from typing import Any

from kubernetes import client as k8s

from placer.controller.decide.records.ledger import LEDGER_NAME
from placer.controller.decide.records.recordsize import MAX_ANNOTATIONS_BYTES
from placer.model.assignment import ASSIGNMENT_ANNOTATION
from tests.cluster.processes import wait_until
from tests.cluster.scenario import PLACER_SYSTEM, Scenario, assignment_of
from tests.cluster.test_gate_binding import multislice
from tests.cluster.verdicts import cluster_accepts_jobset

FILLER = "example.com/notes"


def _filled(manifest: dict[str, Any], total: int) -> dict[str, Any]:
    """`manifest` with a filler annotation that brings its annotations to `total` bytes."""
    body = copy.deepcopy(manifest)
    annotations = body["metadata"].setdefault("annotations", {})
    used = sum(len(k.encode()) + len(v.encode()) for k, v in annotations.items())
    annotations[FILLER] = "x" * (total - used - len(FILLER))
    return body


def test_the_api_server_stores_a_jobsets_annotations_up_to_the_limit_and_no_more(
    scenario: Scenario,
) -> None:
    manifest = multislice("notes", slices=1)
    manifest["metadata"]["namespace"] = scenario.namespace
    assert cluster_accepts_jobset(scenario, _filled(manifest, MAX_ANNOTATIONS_BYTES))
    assert not cluster_accepts_jobset(scenario, _filled(manifest, MAX_ANNOTATIONS_BYTES + 1))


def test_a_record_the_jobset_cannot_carry_is_refused_with_its_reason_until_room_is_made(
    scenario: Scenario,
) -> None:
    scenario.use_example_cluster("tpu-v5e-v6e.yaml")
    scenario.start_webhook()
    scenario.start_controller()
    scenario.create_jobset(_filled(multislice("train", slices=1), MAX_ANNOTATIONS_BYTES - 100))

    def told() -> bool:
        return any(
            e.reason == "Unschedulable" and "placement record" in (e.message or "")
            for e in scenario.events("train")
        )

    wait_until(told, timeout_s=60, what="the JobSet told its record cannot be stored")
    assert not [p for p in scenario.pods_of("train") if p.spec.node_name]
    ledger = scenario.core.read_namespaced_config_map(LEDGER_NAME, PLACER_SYSTEM)
    assert isinstance(ledger, k8s.V1ConfigMap)
    assert not [key for key in ledger.data or {} if "train" in key]  # nothing held for it
    scenario.patch_jobset("train", {"metadata": {"annotations": {FILLER: None}}})
    pods = scenario.wait_pods_bound("train", count=2)
    assert len({p.spec.node_name for p in pods}) == 2
    jobset = scenario.get_jobset("train")
    assert ASSIGNMENT_ANNOTATION in jobset["metadata"]["annotations"]
    assert assignment_of(jobset)["jobs"]
