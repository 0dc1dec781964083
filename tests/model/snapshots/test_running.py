"""What a snapshot knows of running JobSets (placer.model.snapshots.running), read directly: the
same functions serve the file loaders, the live reader and the controller."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from placer.model.cluster import RunningJobSet
from placer.model.durations import EXPECTED_DURATION
from placer.model.errors import InputError
from placer.model.preemption import PREEMPTIBLE
from placer.model.snapshots.running import (
    running_starts,
    with_expected_durations,
    with_preemption_facts,
)


def test_a_jobset_started_when_its_earliest_live_pod_did() -> None:
    starts = running_starts(
        [
            ("ns/a", "Running", "2026-12-01T05:00:00Z"),
            ("ns/a", "Running", "2026-12-01T04:00:00+00:00"),
            ("ns/a", "Succeeded", "2026-12-01T01:00:00Z"),  # finished: holds nothing
            ("ns/b", "Running", "not a time"),  # loses only its date
            ("ns/c", "Pending", None),
            ("ns/d", "Running", "2026-12-01T03:00:00"),  # no zone: read as UTC
        ]
    )
    assert starts == {
        "ns/a": RunningJobSet(started_at=datetime(2026, 12, 1, 4, tzinfo=UTC)),
        "ns/d": RunningJobSet(started_at=datetime(2026, 12, 1, 3, tzinfo=UTC)),
    }


def _manifest(annotations: dict[str, str]) -> dict[str, object]:
    return {"metadata": {"annotations": annotations}, "spec": {}}


def test_a_bad_expected_duration_costs_only_its_own_jobset(
    caplog: pytest.LogCaptureFixture,
) -> None:
    started = {"ns/a": RunningJobSet(started_at=datetime(2026, 12, 1, 4, tzinfo=UTC))}
    good = ("f.json", "ns/a", _manifest({EXPECTED_DURATION: "2h"}))
    bad = ("f.json", "ns/b", _manifest({EXPECTED_DURATION: "soon"}))
    with caplog.at_level("WARNING", logger="placer.model.snapshots.running"):
        running = with_expected_durations(started, [good, bad])
    assert running["ns/a"].expected_duration_s == 7200
    assert running["ns/a"].started_at == started["ns/a"].started_at
    assert "ns/b" not in running
    assert any("default duration" in r.getMessage() for r in caplog.records)
    assert with_expected_durations(started, [bad], warn=False) == started


def test_a_bad_preemption_fact_is_refused_in_a_file_and_never_a_victim_live() -> None:
    bad = ("f.json", "ns/a", _manifest({PREEMPTIBLE: "maybe"}))
    with pytest.raises(InputError):
        with_preemption_facts({}, [bad])
    live = with_preemption_facts({}, [bad], strict=False)
    assert live["ns/a"].preemption.preemptible is False
