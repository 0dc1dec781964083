"""Explanations: why a JobSet is not placed, which requirements collide, and what would help.

`placer explain` calls `explain_jobset`; `placer capacity` reuses `diagnose` for its limiting
factors. Modules: `reasons_detail` (counts by reason), `conflicts` (minimal conflict sets with
CP-SAT assumptions), `remedies` (changes checked by re-planning), `result` (the JSON document).
"""

from __future__ import annotations

from placer.solver.explain.explain import explain_jobset, find_target
from placer.solver.explain.reasons_detail import (
    Occupancy,
    diagnose,
    diagnosis_line,
    occupancy_from_plan,
)
from placer.solver.explain.result import (
    Conflict,
    Explanation,
    ReasonCount,
    Remedy,
    ReplicatedJobDiagnosis,
    Requirement,
)

__all__ = [
    "Conflict",
    "Explanation",
    "Occupancy",
    "ReasonCount",
    "Remedy",
    "ReplicatedJobDiagnosis",
    "Requirement",
    "diagnose",
    "diagnosis_line",
    "explain_jobset",
    "find_target",
    "occupancy_from_plan",
]
