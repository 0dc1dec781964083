"""A placement plan: the contract between solvers and everything that renders or writes it.

`Plan.model_dump(mode="json")` is the `placer plan --format json` document other tools read (the
extender's `--plan`, the capacity tools, the benchmarks). Every JobSet given appears exactly once.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "DomainRef",
    "JobPlacement",
    "JobSetOutcome",
    "Plan",
    "PodPlacement",
    "SolverReport",
]

OutcomeStatus = Literal["placed", "unschedulable", "partial"]


class DomainRef(BaseModel):
    model_config = ConfigDict(frozen=True)
    key: str
    value: str
    path: list[tuple[str, str]] = Field(default_factory=list)
    """(level, value) pairs from the top level down to `key`; writers pin every one of them."""


class PodPlacement(BaseModel):
    model_config = ConfigDict(frozen=True)
    index: int
    """The pod's completion index within its child Job."""
    node: str


class JobPlacement(BaseModel):
    model_config = ConfigDict(frozen=True)
    name: str
    replicated_job: str
    index: int
    domain: DomainRef | None
    pods: list[PodPlacement]


class JobSetOutcome(BaseModel):
    model_config = ConfigDict(frozen=True)
    namespace: str = "default"
    name: str
    status: OutcomeStatus
    reason: str = ""
    priority: int = 0
    accelerators: int = 0
    """Accelerator units this JobSet holds in the plan (pods where it requests none)."""
    jobs: list[JobPlacement] = Field(default_factory=list)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


class SolverReport(BaseModel):
    model_config = ConfigDict(frozen=True)
    name: str
    status: str
    """OPTIMAL, FEASIBLE (cpsat), HEURISTIC (greedy) or FALLBACK (cpsat fell back to greedy)."""
    objective: float = 0
    """Accelerator units admitted (summed over all tiers)."""
    bound: float = 0
    """Proven upper bound on `objective` (equal to it for OPTIMAL)."""
    gap: float = 0
    wall_seconds: float = 0
    phases: dict[str, float] = Field(default_factory=dict)
    """Wall seconds per planner phase (aggregate, greedy, build, solve, materialize, check)."""
    notes: list[str] = Field(default_factory=list)


class Plan(BaseModel):
    model_config = ConfigDict(frozen=True)
    solver: SolverReport
    jobsets: list[JobSetOutcome]

    def outcome(self, key: str) -> JobSetOutcome:
        for o in self.jobsets:
            if o.key == key:
                return o
        raise KeyError(key)

    @property
    def accelerators_admitted(self) -> int:
        return sum(o.accelerators for o in self.jobsets if o.status == "placed")
