"""Explanations: why a JobSet is not placed, which requirements collide, and what would help.

`placer explain` calls `explain_jobset`. Counts by reason come from `placer.solver.reasons` (the
classifier the planners and `placer capacity` use too). Modules: `conflicts` (minimal conflict
sets with CP-SAT assumptions), `remedies` (changes checked by re-planning), `result` (the JSON
document, with `diagnosis_document` turning the classifier's data into it).
"""

from __future__ import annotations

from placer.solver.explain.explain import ExplainSettings, explain_jobset, find_key, find_target
from placer.solver.explain.result import (
    Conflict,
    Explanation,
    ReasonCount,
    Remedy,
    ReplicatedJobDiagnosis,
    Requirement,
    diagnosis_document,
)

__all__ = [
    "Conflict",
    "ExplainSettings",
    "Explanation",
    "ReasonCount",
    "Remedy",
    "ReplicatedJobDiagnosis",
    "Requirement",
    "diagnosis_document",
    "explain_jobset",
    "find_key",
    "find_target",
]
