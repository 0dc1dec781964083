"""The assignment placer stores on a JobSet: the durable record of its plan, read back on restart.

The controller writes it (annotation `placer.dev/assignment` on the JobSet); the extender and a
restarted controller read it. Keeping it in the cluster, on the object it concerns, is what makes a
controller restart lose nothing. The key prefix is defined once here.
"""

from __future__ import annotations

import json

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from placer.model.errors import InputError
from placer.model.plan import DomainRef, JobSetOutcome

__all__ = [
    "ASSIGNMENT_ANNOTATION",
    "PLACEMENT_GATE",
    "PREFIX",
    "Assignment",
    "JobAssignment",
]

PREFIX = "placer.dev"
PLACEMENT_GATE = f"{PREFIX}/placement"
"""Scheduling gate on managed pods; removed by the controller together with the affinity write."""
ASSIGNMENT_ANNOTATION = f"{PREFIX}/assignment"


class JobAssignment(BaseModel):
    model_config = ConfigDict(frozen=True)
    domain: DomainRef | None = None
    nodes: dict[int, str] = Field(default_factory=dict)
    """completion index -> node, only when pods are pinned to nodes."""


class Assignment(BaseModel):
    """child Job name -> its domain (and nodes when pinned), for one JobSet."""

    model_config = ConfigDict(frozen=True)
    jobset: str
    """namespace/name, to catch an annotation copied onto another object."""
    jobs: dict[str, JobAssignment]
    pinned: bool = False
    plan_id: str = ""

    @classmethod
    def from_outcome(cls, outcome: JobSetOutcome, *, pinned: bool, plan_id: str = "") -> Assignment:
        return cls(
            jobset=outcome.key,
            pinned=pinned,
            plan_id=plan_id,
            jobs={
                j.name: JobAssignment(
                    domain=j.domain,
                    nodes={p.index: p.node for p in j.pods} if pinned or j.domain is None else {},
                )
                for j in outcome.jobs
            },
        )

    def to_annotation(self) -> str:
        return json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_annotation(cls, text: str, *, obj: str = "") -> Assignment:
        try:
            return cls.model_validate(json.loads(text))
        except (ValueError, ValidationError, RecursionError) as e:
            raise InputError(
                f"unreadable placement record: {e}",
                obj=obj,
                field=f"metadata.annotations[{ASSIGNMENT_ANNOTATION}]",
                code="assignment",
            ) from e
