"""Which JobSet records the extender's watch trusts (`jobset_entries`). The watch itself, following
records and node labels as they change, runs against the real API server
(tests/cluster/test_extender.py)."""

from __future__ import annotations

from typing import Any

import pytest

from placer.model.assignment import ASSIGNMENT_ANNOTATION, Assignment
from plugins.extender.sources import jobset_entries
from tests.extender.builders import sample_plan


def jobset_object(name: str, *, record: str | None) -> dict[str, Any]:
    annotations = {} if record is None else {ASSIGNMENT_ANNOTATION: record}
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": name, "namespace": "ml", "annotations": annotations},
        "spec": {"replicatedJobs": []},
    }


def record(name: str, *, pinned: bool = False) -> str:
    outcome = sample_plan().outcome(f"ml/{name}")
    return Assignment.from_outcome(outcome, pinned=pinned).to_annotation()


@pytest.mark.parametrize(
    ("obj", "why"),
    [
        pytest.param(jobset_object("train", record=None), "no record", id="no-record"),
        pytest.param(jobset_object("train", record="{nope"), "unreadable", id="unreadable"),
        pytest.param(jobset_object("copy", record=record("train")), "copied", id="copied"),
        pytest.param(
            {
                **jobset_object("train", record=record("train")),
                "status": {"terminalState": "Failed"},
            },
            "finished",
            id="finished",
        ),
    ],
)
def test_untrusted_or_finished_records_hold_nothing(obj: dict[str, Any], why: str) -> None:
    key, rows = jobset_entries(obj)
    assert key == f"ml/{obj['metadata']['name']}"
    assert rows == [], why


def test_pinned_record_pins_pods() -> None:
    _, rows = jobset_entries(jobset_object("other", record=record("other", pinned=True)))
    assert [(r.job, r.pinned, r.planned) for r in rows] == [("other-w-0", True, {0: "n5", 1: "n6"})]
