"""Preemption's inputs: annotations, the eviction cost, and bad values named precisely."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from placer.model.errors import InputError
from placer.model.preemption import (
    CHECKPOINT_INTERVAL,
    PREEMPTIBLE,
    PreemptionFacts,
    eviction_cost,
    jobset_preemption_facts,
)
from placer.model.snapshots.load import load_snapshot
from tests.helpers.builders import node_manifest

NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)


def annotated(**annotations: str) -> dict[str, Any]:
    return {"metadata": {"name": "train", "namespace": "ml", "annotations": annotations}}


@pytest.mark.parametrize(
    "annotations, expected",
    [
        pytest.param({}, PreemptionFacts(), id="none"),
        pytest.param({CHECKPOINT_INTERVAL: "30m"}, PreemptionFacts(checkpoint_interval_s=1800.0)),
        pytest.param({PREEMPTIBLE: "false"}, PreemptionFacts(preemptible=False), id="protected"),
        pytest.param({PREEMPTIBLE: "True"}, PreemptionFacts(), id="true-any-case"),
    ],
)
def test_annotations_are_read(annotations: dict[str, str], expected: PreemptionFacts) -> None:
    assert jobset_preemption_facts(annotated(**annotations)) == expected


@pytest.mark.parametrize(
    "annotations, message",
    [
        pytest.param(
            {CHECKPOINT_INTERVAL: "-5m"},
            f"f.yaml: ml/train: metadata.annotations[{CHECKPOINT_INTERVAL}]: "
            "negative duration '-5m'",
            id="negative",
        ),
        pytest.param(
            {CHECKPOINT_INTERVAL: "0"},
            f"f.yaml: ml/train: metadata.annotations[{CHECKPOINT_INTERVAL}]: checkpoint interval "
            "must be positive, got '0'",
            id="zero",
        ),
        pytest.param(
            {PREEMPTIBLE: "no"},
            f'f.yaml: ml/train: metadata.annotations[{PREEMPTIBLE}]: must be "true" or "false", '
            "got 'no'",
            id="not-a-boolean",
        ),
    ],
)
def test_bad_annotations_name_file_jobset_and_field(
    annotations: dict[str, str], message: str
) -> None:
    with pytest.raises(InputError) as e:
        jobset_preemption_facts(annotated(**annotations), source="f.yaml", key="ml/train")
    assert str(e.value) == message


def test_unparsable_interval_is_refused() -> None:
    with pytest.raises(InputError, match="invalid duration"):
        jobset_preemption_facts(annotated(**{CHECKPOINT_INTERVAL: "often"}))


@pytest.mark.parametrize(
    "hours, interval_s, lost_s",
    [
        pytest.param(3.0, None, 3 * 3600.0, id="since-start"),
        pytest.param(3.5, 3600.0, 1800.0, id="since-last-checkpoint"),
        pytest.param(None, None, 0.0, id="start-unknown"),
    ],
)
def test_eviction_cost(hours: float | None, interval_s: float | None, lost_s: float) -> None:
    started = None if hours is None else NOW - timedelta(hours=hours)
    facts = PreemptionFacts(checkpoint_interval_s=interval_s)
    cost = eviction_cost(16, started, NOW, facts, restart_cost_s=600.0)
    assert cost.lost_s == pytest.approx(lost_s)
    assert cost.chip_seconds == pytest.approx(16 * (lost_s + 600.0))
    assert cost.lost_chip_hours == pytest.approx(16 * lost_s / 3600)


def _snapshot_files(tmp_path: Path, annotations: dict[str, str]) -> list[Path]:
    """A node running one pod of JobSet ml/train, and the JobSet object with `annotations`."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "train-w-0-0-abcde",
            "namespace": "ml",
            "labels": {"jobset.sigs.k8s.io/jobset-name": "train"},
        },
        "spec": {"nodeName": "n0", "containers": [{"resources": {"requests": {"cpu": "1"}}}]},
        "status": {"phase": "Running", "startTime": "2026-12-01T10:00:00Z"},
    }
    js = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", **annotated(**annotations)}
    js["spec"] = {"replicatedJobs": []}
    pc = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "polite"},
        "value": 5,
        "preemptionPolicy": "Never",
    }
    path = tmp_path / "snap.json"
    items = [node_manifest("n0"), pod, js, pc]
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    return [path]


def test_snapshot_reads_running_jobsets_facts_and_never_classes(tmp_path: Path) -> None:
    files = _snapshot_files(tmp_path, {CHECKPOINT_INTERVAL: "1h", PREEMPTIBLE: "false"})
    snap = load_snapshot(files)
    assert snap.running["ml/train"].preemption == PreemptionFacts(
        checkpoint_interval_s=3600.0, preemptible=False
    )
    assert snap.non_preempting_classes == ("polite",)


def test_snapshot_with_a_bad_annotation_is_bad_input(tmp_path: Path) -> None:
    files = _snapshot_files(tmp_path, {CHECKPOINT_INTERVAL: "soon"})
    with pytest.raises(InputError) as e:
        load_snapshot(files)
    assert str(e.value).startswith(
        f"{files[0]}: ml/train: metadata.annotations[{CHECKPOINT_INTERVAL}]: invalid duration"
    )
