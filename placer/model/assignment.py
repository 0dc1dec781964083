"""The assignment placer stores on a JobSet: the durable record of its plan, read back on restart.

The controller writes it (annotation `placer.dev/assignment` on the JobSet, and its entry in the
placement ledger); the extender and a restarted controller read it. Keeping it in the cluster, on
the object it concerns, is what makes a controller restart lose nothing. The key prefix is defined
once here.

The text is compact because the API server bounds it: 256 KiB for all of an object's annotations,
1 MiB for the ledger's ConfigMap. A child Job on an exclusive domain is written as its domain's
path values under the record's `levels` (the level keys most of its child Jobs share, written
once): with a two-level path and GKE-like names about 75 bytes instead of 250, so a JobSet of
3,000 one-node child Jobs still fits. A record that cannot fit is refused before anything is
written (controller/decide/records/recordsize.py).

Records in the longer form earlier versions wrote (`{"domain": {...}, "nodes": {...}}` per child
Job) read the same.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from placer.model.errors import InputError
from placer.model.plan import DomainRef, JobSetOutcome

__all__ = [
    "ASSIGNMENT_ANNOTATION",
    "PLACEMENT_GATE",
    "PREFIX",
    "Assignment",
    "JobAssignment",
    "jobs_data",
    "jobs_from",
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
        data: dict[str, object] = {"jobset": self.jobset, "plan_id": self.plan_id}
        data.update(jobs_data(self.jobs))
        if self.pinned:
            data["pinned"] = True
        return json.dumps(data, sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_annotation(cls, text: str, *, obj: str = "") -> Assignment:
        try:
            data = json.loads(text)
            if not isinstance(data, dict):
                raise ValueError("a placement record is a JSON object")
            jobs = jobs_from(data.get("jobs"), data.get("levels"))
            return cls.model_validate(
                {
                    "jobset": data.get("jobset"),
                    "jobs": jobs,
                    "pinned": data.get("pinned", False),
                    "plan_id": data.get("plan_id", ""),
                }
            )
        except (ValueError, ValidationError, RecursionError) as e:
            raise InputError(
                f"unreadable placement record: {e}",
                obj=obj,
                field=f"metadata.annotations[{ASSIGNMENT_ANNOTATION}]",
                code="assignment",
            ) from e


def _bare(job: JobAssignment) -> bool:
    """A child Job on an exclusive domain whose path ends at it, pinning no node: written as
    its path alone."""
    d = job.domain
    return d is not None and not job.nodes and d.path[-1:] == [(d.key, d.value)]


def _levels(jobs: Mapping[str, JobAssignment]) -> tuple[str, ...]:
    """The path levels most bare child Jobs share (ties: the first in sorted order)."""
    counts = Counter(
        tuple(level for level, _ in job.domain.path)
        for job in jobs.values()
        if job.domain is not None and _bare(job)
    )
    return min(counts, key=lambda levels: (-counts[levels], levels)) if counts else ()


def jobs_data(jobs: Mapping[str, JobAssignment]) -> dict[str, object]:
    """`{"jobs": {name: job}, "levels": [...]}` in the compact form (module docstring): a bare
    child Job under the shared levels is its path's values, under other levels its path's
    `[level, value]` pairs; any other is `{"key", "value", "path", "nodes"}`, empty parts left
    out. `levels` is left out when no child Job is bare."""
    levels = _levels(jobs)
    out: dict[str, object] = {}
    for name, job in sorted(jobs.items()):
        d = job.domain
        if d is not None and _bare(job):
            if tuple(level for level, _ in d.path) == levels:
                out[name] = [value for _, value in d.path]
            else:
                out[name] = [list(pair) for pair in d.path]
            continue
        data: dict[str, object] = {}
        if d is not None:
            data.update(key=d.key, value=d.value, path=[list(pair) for pair in d.path])
        if job.nodes:
            data["nodes"] = {str(i): node for i, node in sorted(job.nodes.items())}
        out[name] = data
    return {"jobs": out, "levels": list(levels)} if levels else {"jobs": out}


def jobs_from(jobs: object, levels: object = None) -> dict[str, JobAssignment]:
    """The inverse of `jobs_data`, reading the older long form too; ValueError (pydantic's
    ValidationError is one) on anything else."""
    if not isinstance(jobs, dict):
        raise ValueError("`jobs` is an object of child Jobs")
    if levels is None:
        levels = []
    if not isinstance(levels, list) or not all(isinstance(level, str) for level in levels):
        raise ValueError("`levels` is a list of label keys")
    return {str(name): _job_from(job, levels) for name, job in jobs.items()}


def _job_from(data: object, levels: list[str]) -> JobAssignment:
    if isinstance(data, list):
        if not data:
            raise ValueError("an empty domain path")
        if all(isinstance(value, str) for value in data):
            if len(data) != len(levels):
                raise ValueError(f"a path of {len(data)} values under {len(levels)} levels")
            path: list[object] = [[level, value] for level, value in zip(levels, data, strict=True)]
        else:
            path = data
        last = path[-1]
        if not isinstance(last, list) or len(last) != 2:
            raise ValueError("a domain path is a list of [level, value] pairs")
        return JobAssignment.model_validate(
            {"domain": {"key": last[0], "value": last[1], "path": path}}
        )
    if not isinstance(data, dict):
        raise ValueError("a child Job is a domain path or an object")
    if "domain" in data:  # the long form
        return JobAssignment.model_validate(data)
    domain = None
    if "key" in data or "value" in data:
        domain = {
            "key": data.get("key"),
            "value": data.get("value"),
            "path": data.get("path") or [],
        }
    return JobAssignment.model_validate({"domain": domain, "nodes": data.get("nodes") or {}})
