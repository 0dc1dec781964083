"""What `placer explain` finds, as plain data: the JSON document is `Explanation.model_dump()`.

The renderer (`placer.render.explain`) prints these as text; tools read the JSON. Counts are data
(`ReasonCount`), so a test or a dashboard does not have to parse sentences.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from placer.model.plan import DomainRef, JobPlacement, Plan, SolverReport
from placer.solver.reasons.data import ReasonKind, RjobDiagnosis
from placer.solver.reasons.wording import format_shape, locality_text, reason_text, rjob_line

__all__ = [
    "Conflict",
    "Explanation",
    "ReasonCount",
    "Remedy",
    "ReplicatedJobDiagnosis",
    "Requirement",
    "diagnosis_document",
]


class ReasonCount(BaseModel):
    """How many domains (or nodes, for child Jobs without an exclusive key) one reason rules out."""

    model_config = ConfigDict(frozen=True)
    kind: ReasonKind
    count: int
    text: str
    """The reason as the table prints it after the count: `held by research/finetune-v5e`."""
    jobsets: list[str] = Field(default_factory=list)
    """JobSets named by the reason (holders, takers), sorted."""


class ReplicatedJobDiagnosis(BaseModel):
    """One replicated job of the JobSet against the cluster and the rest of the plan."""

    model_config = ConfigDict(frozen=True)
    name: str
    exclusive_key: str | None
    replicas: int
    pods_per_job: int
    shape: str
    """The pod's accelerators (else all its requests): `{google.com/tpu: 4}`."""
    unit: Literal["domain", "pod"]
    needed: int
    """Domains (exclusive) or pods (shared) it needs."""
    available: int
    """Domains (exclusive) or pods (shared) it could get beside the rest of the plan."""
    total: int
    """Domains of its key (exclusive) or nodes (shared) in the cluster."""
    reasons: list[ReasonCount] = Field(default_factory=list)
    locality: str = ""
    """Why required topology fails although enough domains are available, else empty."""
    fits: bool
    nodes_with_room: int | None = None
    """Shared replicated jobs: nodes with room for at least one pod."""
    line: str = ""
    """The whole diagnosis in one Kueue-style line."""


def diagnosis_document(d: RjobDiagnosis) -> ReplicatedJobDiagnosis:
    """The classifier's diagnosis (`placer.solver.reasons`) as explain's JSON: the same counts,
    with the texts `placer.solver.reasons.wording` gives them."""
    return ReplicatedJobDiagnosis(
        name=d.name,
        exclusive_key=d.exclusive_key,
        replicas=d.replicas,
        pods_per_job=d.pods_per_job,
        shape=format_shape(d.pod),
        unit=d.unit,
        needed=d.needed,
        available=d.available,
        total=d.total,
        reasons=[
            ReasonCount(kind=t.kind, count=t.count, text=reason_text(t), jobsets=list(t.jobsets))
            for t in d.tallies
        ],
        locality=locality_text(d),
        fits=d.fits,
        nodes_with_room=d.nodes_with_room,
        line=rjob_line(d),
    )


class Requirement(BaseModel):
    """One guarded requirement of the conflict model (a CP-SAT assumption literal)."""

    model_config = ConfigDict(frozen=True)
    id: str
    kind: Literal["replicas", "locality", "admitted"]
    jobset: str
    replicated_job: str = ""
    text: str


class Conflict(BaseModel):
    """A minimal set of requirements that cannot hold together (drop any one and the rest can)."""

    model_config = ConfigDict(frozen=True)
    status: Literal["conflict", "no-conflict", "unknown"]
    """`conflict`: `requirements` is a minimal conflicting set; `no-conflict`: some plan admits the
    JobSet beside every JobSet the plan placed; `unknown`: the solver decided nothing (out of time,
    or it rejected the model: `text` says which)."""
    requirements: list[Requirement] = Field(default_factory=list)
    minimal: bool = True
    """False when a time limit stopped the minimization: it conflicts but may not be minimal."""
    text: str = ""


class Remedy(BaseModel):
    """A change that makes the JobSet fit, checked by planning again with it."""

    model_config = ConfigDict(frozen=True)
    kind: Literal[
        "fewer-replicas", "other-topology", "relax-locality", "preempt", "move", "yield", "wait"
    ]
    text: str
    change: dict[str, object] = Field(default_factory=dict)
    """Machine-readable form: {"replicated_job": "workers", "replicas": 3}, {"remove": [...]}..."""
    verified: bool
    """True when the re-solve placed the JobSet and the plan passed the independent checker."""
    jobs: list[JobPlacement] = Field(default_factory=list)
    """Where the JobSet goes in the re-solved plan."""


class Explanation(BaseModel):
    """Why one JobSet is (not) placed in the plan `placer plan` would make, and what would help."""

    model_config = ConfigDict(frozen=True)
    jobset: str
    status: Literal["placed", "unschedulable", "partial", "running"]
    priority: int = 0
    reason: str = ""
    """The planner's own one-line reason (empty when placed)."""
    whatif: list[str] = Field(default_factory=list)
    kueue: str = ""
    """What Kueue still owes it before placer may place it (a live cluster's Workload: quota
    not reserved, admission checks pending); empty without Kueue or once admitted."""
    jobs: list[JobPlacement] = Field(default_factory=list)
    """Where it is placed (all of it, or the part a `partial` outcome holds)."""
    replicated_jobs: list[ReplicatedJobDiagnosis] = Field(default_factory=list)
    conflict: Conflict | None = None
    remedies: list[Remedy] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    never: str = ""
    """Why it fits no domain set even once every running JobSet ends, counted on that cluster
    (`placer.solver.time.never`), with or without time-aware planning; empty when it fits some
    day. The counts beside the plan (`replicated_jobs`) name the running holders first."""
    expected_start_seconds: float | None = None
    """With time-aware planning: seconds after the planning instant it is expected to start."""
    reserved_domains: list[DomainRef] = Field(default_factory=list)
    reserved_nodes: list[str] = Field(default_factory=list)
    """The nodes held with its domains for its pods without an exclusive key (`JobSetOutcome`)."""
    waits_for: list[str] = Field(default_factory=list)
    """Running JobSets its expected start waits for, the last to end first."""
    past_max_wait: bool = False
    """Waiting longer than `--max-wait`: reserved ahead of every tier, and its reserved domains
    guarded against other pods from now on (the scheduler extender)."""
    solver: SolverReport
    plan: Plan | None = Field(default=None, exclude=True)
    """The whole plan explained against (for `--map`); not part of the JSON document."""
