"""Why a JobSet (or a domain) is left out: one diagnosis, worded two ways.

- `classify`: the one classifier; applies the rule order to domains (or nodes) and returns plain
  frozen data (`data`) beside the rest of a plan (`occupancy`). Its parts: `classify_nodes` (its
  node half), `static` (what the cluster alone says about a domain), `nodes` (a node's rule, health
  and room for a pod), `keys` (the domains of a key with their holders and planned pods).
- `wording`: the one place that words it, one line (`placer plan`, capacity's "copy N does not
  fit") or detailed (`placer explain`, capacity's stranded accelerators).

The planners, `placer explain` and `placer capacity` all go through here, so they agree.
"""

from __future__ import annotations

from placer.solver.reasons.classify import Classifier, diagnose
from placer.solver.reasons.data import (
    KINDS,
    GroupFit,
    HostCause,
    Locality,
    Reason,
    ReasonKind,
    ReasonTally,
    RjobDiagnosis,
)
from placer.solver.reasons.occupancy import Occupancy, occupancy_from_plan, occupancy_of
from placer.solver.reasons.wording import (
    format_shape,
    jobset_reason,
    reason_lines,
    reason_text,
    rjob_line,
    stranded_text,
)

__all__ = [
    "KINDS",
    "Classifier",
    "GroupFit",
    "HostCause",
    "Locality",
    "Occupancy",
    "Reason",
    "ReasonKind",
    "ReasonTally",
    "RjobDiagnosis",
    "diagnose",
    "format_shape",
    "jobset_reason",
    "occupancy_from_plan",
    "occupancy_of",
    "reason_lines",
    "reason_text",
    "rjob_line",
    "stranded_text",
]
