"""recordsize.record_too_large counts as the API server does: keys and values, in UTF-8 bytes,
the record's old text not counted (the new one replaces it)."""

from __future__ import annotations

from placer.controller.decide.records.recordsize import (
    MAX_ANNOTATIONS_BYTES,
    no_room_for_a_record,
    record_too_large,
)
from placer.model.assignment import ASSIGNMENT_ANNOTATION, Assignment, JobAssignment
from placer.model.plan import DomainRef

SLICE = "cloud.google.com/gke-tpu-slice"
RECORD = Assignment(
    jobset="ns/a",
    jobs={"a-w-0": JobAssignment(domain=DomainRef(key=SLICE, value="s0", path=[(SLICE, "s0")]))},
)
OWN = len(ASSIGNMENT_ANNOTATION) + len(RECORD.to_annotation())


def _jobset(**annotations: str) -> dict[str, object]:
    return {"metadata": {"name": "a", "namespace": "ns", "annotations": annotations}}


def test_a_record_fits_up_to_the_last_byte() -> None:
    room = MAX_ANNOTATIONS_BYTES - OWN - len("n")
    assert record_too_large(_jobset(n="x" * room), RECORD) == ""
    why = record_too_large(_jobset(n="x" * (room + 1)), RECORD)
    assert f"({OWN:,} bytes)" in why and "262,144" in why


def test_characters_count_in_utf8_bytes() -> None:
    room = MAX_ANNOTATIONS_BYTES - OWN - len("n")
    assert record_too_large(_jobset(n="é" * (room // 2)), RECORD) == ""
    assert record_too_large(_jobset(n="é" * (room // 2 + 1)), RECORD) != ""


def test_the_record_being_replaced_is_not_counted() -> None:
    old = "x" * (MAX_ANNOTATIONS_BYTES - OWN)
    assert record_too_large(_jobset(**{ASSIGNMENT_ANNOTATION: old}), RECORD) == ""


def test_no_room_for_any_record_is_judged_against_a_record_naming_no_child_job() -> None:
    """The floor under every record: it says so only where even an empty record would not fit,
    so a JobSet it leaves out could carry none (here RECORD does not fit long before)."""
    floor = len(ASSIGNMENT_ANNOTATION) + len(
        Assignment(jobset="ns/a", jobs={}, plan_id="0" * 12).to_annotation()
    )
    assert floor < OWN
    room = MAX_ANNOTATIONS_BYTES - floor - len("n")
    assert no_room_for_a_record(_jobset(n="x" * room), "ns/a") == ""
    assert record_too_large(_jobset(n="x" * room), RECORD) != ""
    why = no_room_for_a_record(_jobset(n="x" * (room + 1)), "ns/a")
    assert f"at least {floor:,} bytes" in why and "262,144" in why
