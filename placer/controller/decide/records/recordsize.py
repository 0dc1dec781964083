"""Whether a placement record fits on its JobSet: the API server's bound on annotations.

The API server refuses an object whose annotations, keys and values together, hold more than
256 KiB (`TotalAnnotationSizeLimitB`, k8s.io/apimachinery v0.36.3; custom resources such as a
JobSet included). The record is written after the ledger commit, so a record its JobSet cannot
carry would be answered 422 on every cycle while the ledger held its domains and its pods stayed
gated. So a placement whose record would not fit is refused while planning, with its reason,
and the round planned again without it (plan/planning.solve_targets): the JobSet stays pending,
holding nothing, until its other annotations leave room. The record's
compact form (model/assignment.py) makes that rare: about 3,000 one-node child Jobs fit.

A JobSet whose other annotations leave no room even for a record without child Jobs
(`no_room_for_a_record`) is left out before the solver is called, so while it waits a cycle
costs one solve, not two.

One race is left to the review: the JobSet's annotations grow between the commit and the record
write. A committed placement whose record is not on its JobSet and no longer fits is released
(releases.release_unwritable), so it is planned again and refused with the reason. Never one whose
record is on the JobSet: its pods may already run in those domains.
"""

from __future__ import annotations

from placer.controller.adapter import Obj
from placer.model.assignment import ASSIGNMENT_ANNOTATION, Assignment

__all__ = ["MAX_ANNOTATIONS_BYTES", "no_room_for_a_record", "record_too_large"]

MAX_ANNOTATIONS_BYTES = 262_144
"""The most an object's annotations may hold, keys and values, in bytes (UTF-8, as Go counts)."""


def _others(obj: Obj) -> int:
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    return sum(
        len(str(k).encode()) + len(str(v).encode())
        for k, v in annotations.items()
        if k != ASSIGNMENT_ANNOTATION
    )


def _own(record: Assignment) -> int:
    return len(ASSIGNMENT_ANNOTATION) + len(record.to_annotation().encode())


def record_too_large(obj: Obj, record: Assignment) -> str:
    """Why the JobSet `obj` cannot carry `record` ("" when it can)."""
    own, others = _own(record), _others(obj)
    if own + others <= MAX_ANNOTATIONS_BYTES:
        return ""
    return (
        f"its placement record ({own:,} bytes) and its other annotations ({others:,} bytes) "
        f"would pass the {MAX_ANNOTATIONS_BYTES:,} bytes the API server stores on an object"
    )


def no_room_for_a_record(obj: Obj, jobset: str) -> str:
    """Why the JobSet `obj` (key `jobset`) could carry no placement record at all ("" when the
    smallest, naming no child Job, would fit): the floor under every record it could get."""
    floor = _own(Assignment(jobset=jobset, jobs={}, plan_id="0" * 12))
    others = _others(obj)
    if floor + others <= MAX_ANNOTATIONS_BYTES:
        return ""
    return (
        f"its other annotations ({others:,} bytes) leave no room for a placement record "
        f"(at least {floor:,} bytes) within the {MAX_ANNOTATIONS_BYTES:,} bytes the API server "
        "stores on an object"
    )
