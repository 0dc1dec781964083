"""Expected durations and the planning instant: Go durations, RFC 3339, which source wins."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from placer.model.durations import (
    EXPECTED_DURATION,
    MAX_DURATION_S,
    ExpectedDuration,
    format_go_duration,
    jobset_expected_duration,
    parse_go_duration,
    parse_rfc3339,
)
from placer.model.errors import InputError
from placer.model.options import TimePolicy


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        pytest.param("90m", 5400.0, id="minutes"),
        pytest.param("6h", 21600.0, id="hours"),
        pytest.param("1h30m", 5400.0, id="compound"),
        pytest.param("1.5h", 5400.0, id="fraction"),
        pytest.param("2h45m30.5s", 9930.5, id="three-units"),
        pytest.param("300ms", 0.3, id="millis"),
        pytest.param("1500us", 0.0015, id="micros"),
        pytest.param("0", 0.0, id="bare-zero"),
        pytest.param("+10s", 10.0, id="plus-sign"),
        pytest.param(".5m", 30.0, id="leading-dot"),
    ],
)
def test_go_durations_parse_to_seconds(text: str, seconds: float) -> None:
    assert parse_go_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        pytest.param("-5m", "negative", id="negative"),
        pytest.param("90", "invalid duration", id="no-unit"),
        pytest.param("1d", "invalid duration", id="days-not-go"),
        pytest.param("1h 30m", "invalid duration", id="space"),
        pytest.param("h", "invalid duration", id="unit-only"),
        pytest.param("", "empty", id="empty"),
        pytest.param("100000h", "longer than", id="too-long"),
    ],
)
def test_bad_durations_name_the_field(text: str, fragment: str) -> None:
    with pytest.raises(InputError) as err:
        parse_go_duration(text, source="js.yaml", obj="ns/a", field="metadata.annotations[x]")
    assert fragment in str(err.value)
    assert str(err.value).startswith("js.yaml: ns/a: metadata.annotations[x]: ")


@given(st.integers(min_value=0, max_value=int(MAX_DURATION_S)))
def test_formatted_durations_parse_back(seconds: int) -> None:
    assert parse_go_duration(format_go_duration(seconds)) == seconds


def test_rfc3339_is_timezone_aware_utc() -> None:
    assert parse_rfc3339("2026-12-01T08:00:00+02:00") == datetime(2026, 12, 1, 6, tzinfo=UTC)
    assert parse_rfc3339("2026-12-01T06:00:00.5Z").microsecond == 500000


@pytest.mark.parametrize("text", ["2026-12-01", "2026-12-01T06:00:00", "yesterday", "1733032800"])
def test_non_rfc3339_now_is_an_input_error(text: str) -> None:
    with pytest.raises(InputError, match=r"--now: .*RFC 3339"):
        parse_rfc3339(text)


def _jobset(
    annotations: dict[str, Any] | None = None, deadlines: list[Any] | None = None
) -> dict[str, Any]:
    rjobs = []
    for i, deadline in enumerate(deadlines or [None]):
        spec: dict[str, Any] = {"template": {"spec": {"containers": [{"name": "c"}]}}}
        if deadline is not None:
            spec["activeDeadlineSeconds"] = deadline
        rjobs.append({"name": f"r{i}", "template": {"spec": spec}})
    return {
        "kind": "JobSet",
        "metadata": {"name": "a", "namespace": "ns", "annotations": annotations or {}},
        "spec": {"replicatedJobs": rjobs},
    }


def test_annotation_wins_over_deadlines() -> None:
    js = _jobset({EXPECTED_DURATION: "2h"}, deadlines=[60, 60])
    assert jobset_expected_duration(js) == ExpectedDuration(7200.0, "annotation")


def test_longest_deadline_bounds_the_jobset_when_every_replicated_job_has_one() -> None:
    assert jobset_expected_duration(_jobset(deadlines=[600, 3600])) == ExpectedDuration(
        3600.0, "active-deadline"
    )


def test_a_replicated_job_without_deadline_leaves_the_default() -> None:
    assert jobset_expected_duration(_jobset(deadlines=[600, None])) == ExpectedDuration(
        None, "default"
    )


def test_bad_deadline_and_bad_annotation_name_file_object_and_field() -> None:
    with pytest.raises(InputError, match=r"activeDeadlineSeconds: must be a positive integer"):
        jobset_expected_duration(_jobset(deadlines=[0]), source="f.yaml", key="ns/a")
    with pytest.raises(InputError) as err:
        jobset_expected_duration(_jobset({EXPECTED_DURATION: "soon"}), source="f.yaml", key="ns/a")
    assert str(err.value).startswith(f"f.yaml: ns/a: metadata.annotations[{EXPECTED_DURATION}]: ")


def test_parsed_jobset_carries_its_expected_duration() -> None:
    from placer.model.jobset.parse import parse_jobset

    js = _jobset({EXPECTED_DURATION: "90m"})
    js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"] = {
        "spec": {"containers": [{"name": "c"}]}
    }
    parsed = parse_jobset(js, source="a.yaml")
    assert (parsed.expected_duration_s, parsed.duration_source) == (5400.0, "annotation")
    js["metadata"]["annotations"][EXPECTED_DURATION] = "-1h"
    with pytest.raises(InputError, match=r"^a.yaml: ns/a: metadata.annotations\[.*negative"):
        parse_jobset(js, source="a.yaml")


def test_class_default_durations_resolve_to_priority_values() -> None:
    """`--default-duration CLASS=D` by name until the cluster's classes are known; two classes of
    one value: the later flag wins; a policy without class names is returned as it is."""
    policy = TimePolicy(default_duration_by_class={"gold": 3600.0, "also-gold": 600.0, "low": 60.0})
    resolved = policy.for_classes({"gold": 100, "also-gold": 100, "low": 1, "unused": 5})
    assert resolved.default_duration_by_priority == {100: 600.0, 1: 60.0}
    assert resolved.for_classes({"gold": 100, "also-gold": 100, "low": 1}) == resolved
    plain = TimePolicy(default_duration_by_priority={7: 60.0})
    assert plain.for_classes({}) is plain
    with pytest.raises(InputError) as err:
        policy.for_classes({"gold": 100})
    assert str(err.value) == "--default-duration: unknown PriorityClass 'also-gold' (known: gold)"
    with pytest.raises(InputError, match=r"\(known: none in the cluster\)"):
        policy.for_classes({})
