"""The placement ledger at the real API server's size limit (decide/records/ledgersize.py).

The ledger is one ConfigMap, and the API server refuses a ConfigMap whose values hold more than
1 MiB together, refusing the whole commit. The controller fits each round's change to that limit:
a placement that would not fit is refused with its reason and placed once room is freed.
"""

from __future__ import annotations

from kubernetes import client as k8s

from placer.controller.decide.records.ledger import LEDGER_LABEL, LEDGER_NAME, TERM_ANNOTATION
from placer.controller.decide.records.ledgersize import FULL, MAX_LEDGER_BYTES
from tests.cluster.processes import wait_until
from tests.cluster.scenario import PLACER_SYSTEM, Scenario
from tests.cluster.test_gate_binding import multislice
from tests.cluster.verdicts import raw_dry_run

FILLER = "placement.other.filler"
"""A value the controller cannot read: held as it is, as another writer's entry would be."""


def _ledger(value_bytes: int) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": LEDGER_NAME,
            "namespace": PLACER_SYSTEM,
            "labels": {LEDGER_LABEL: "placements"},
            "annotations": {TERM_ANNOTATION: "0"},
        },
        "data": {FILLER: "x" * value_bytes},
    }


def test_the_api_server_stores_a_ledger_of_exactly_the_limit_and_no_more(
    scenario: Scenario,
) -> None:
    api = scenario.core.api_client
    path = f"/api/v1/namespaces/{PLACER_SYSTEM}/configmaps"
    assert raw_dry_run(api, path, _ledger(MAX_LEDGER_BYTES))
    assert not raw_dry_run(api, path, _ledger(MAX_LEDGER_BYTES + 1))


def test_a_full_ledger_refuses_the_placement_with_its_reason_until_room_is_freed(
    scenario: Scenario,
) -> None:
    scenario.use_example_cluster("tpu-v5e-v6e.yaml")
    scenario.core.create_namespaced_config_map(PLACER_SYSTEM, _ledger(MAX_LEDGER_BYTES - 50))  # type: ignore[arg-type]  # a dict is sent as is
    scenario.start_webhook()
    scenario.start_controller()
    scenario.create_jobset(multislice("train", slices=1))

    def told() -> bool:
        return any(
            e.reason == "Unschedulable" and FULL in (e.message or "")
            for e in scenario.events("train")
        )

    wait_until(told, timeout_s=60, what="the JobSet told the ledger is full")
    assert not [p for p in scenario.pods_of("train") if p.spec.node_name]
    freed = {"data": {FILLER: None}}
    scenario.core.patch_namespaced_config_map(LEDGER_NAME, PLACER_SYSTEM, freed)
    pods = scenario.wait_pods_bound("train", count=2)
    assert len({p.spec.node_name for p in pods}) == 2
    ledger = scenario.core.read_namespaced_config_map(LEDGER_NAME, PLACER_SYSTEM)
    assert isinstance(ledger, k8s.V1ConfigMap) and ledger.data
    assert FILLER not in ledger.data and any("train" in key for key in ledger.data)
