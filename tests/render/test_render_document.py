from __future__ import annotations

import json

import yaml

from placer.model.plan import Plan
from placer.render.document import render_json, render_yaml
from tests.render.plans import sample_plan


def test_json_matches_the_contract_of_issue_2() -> None:
    doc = json.loads(render_json(sample_plan()))
    assert set(doc) == {"solver", "jobsets", "preempted"}  # preempted: issue 20
    assert doc["preempted"] == []
    assert {"name", "status", "objective", "bound", "wall_seconds"} <= set(doc["solver"])
    assert doc["solver"]["name"] == "cpsat"
    assert [(j["namespace"], j["name"], j["status"]) for j in doc["jobsets"]] == [
        ("team-a", "multislice", "placed"),
        ("team-b", "big", "unschedulable"),
        ("team-c", "cpu", "placed"),
    ]
    for js in doc["jobsets"]:
        assert {"namespace", "name", "status", "reason", "jobs"} <= set(js)
    first = doc["jobsets"][0]["jobs"][0]
    assert first["name"] == "multislice-workers-0"
    assert first["domain"]["key"] == "cloud.google.com/gke-nodepool"
    assert first["domain"]["value"] == "pool0"
    assert first["pods"] == [
        {"index": 0, "node": "pool0-host-0"},
        {"index": 1, "node": "pool0-host-1"},
    ]
    assert doc["jobsets"][2]["jobs"][0]["domain"] is None
    assert doc["jobsets"][1]["reason"].startswith("needs 8 domains")


def test_json_round_trips_into_the_plan_model() -> None:
    plan = sample_plan()
    assert Plan.model_validate_json(render_json(plan)) == plan


def test_yaml_carries_the_same_document_as_json() -> None:
    plan = sample_plan()
    assert yaml.safe_load(render_yaml(plan)) == json.loads(render_json(plan))
