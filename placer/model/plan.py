"""A placement plan: the contract between solvers and everything that renders or writes it.

`Plan.model_dump(mode="json")` is the `placer plan --format json` document other tools read (the
extender's `--plan`, the capacity tools, the benchmarks). Every JobSet given appears exactly once.
A plan read back is checked like any input: no NaN or infinity anywhere, no negative index or
expected start.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "DomainRef",
    "JobPlacement",
    "JobSetOutcome",
    "Plan",
    "PodPlacement",
    "PreemptedJobSet",
    "SolverReport",
    "eviction_text",
    "relative_gap",
]

OutcomeStatus = Literal["placed", "unschedulable", "partial"]


class DomainRef(BaseModel):
    model_config = ConfigDict(frozen=True, allow_inf_nan=False)
    key: str
    value: str
    path: list[tuple[str, str]] = Field(default_factory=list)
    """(level, value) pairs from the top level down to `key`; writers pin every one of them."""


class PodPlacement(BaseModel):
    model_config = ConfigDict(frozen=True, allow_inf_nan=False)
    index: int = Field(ge=0)
    """The pod's completion index within its child Job."""
    node: str


class JobPlacement(BaseModel):
    model_config = ConfigDict(frozen=True, allow_inf_nan=False)
    name: str
    replicated_job: str
    index: int = Field(ge=0)
    domain: DomainRef | None
    pods: list[PodPlacement]


class JobSetOutcome(BaseModel):
    model_config = ConfigDict(frozen=True, allow_inf_nan=False)
    namespace: str = "default"
    name: str
    status: OutcomeStatus
    reason: str = ""
    priority: int = 0
    accelerators: int = 0
    """Accelerator units this JobSet holds in the plan (pods where it requests none)."""
    jobs: list[JobPlacement] = Field(default_factory=list)
    expected_start_seconds: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    """Seconds after the planning instant it is expected to start: 0 when placed now; None when
    it cannot start even on an empty cluster (or when time was not planned). Never negative nor
    NaN: a reader (the extender) dates reservations from it."""
    reserved_domains: list[DomainRef] = Field(default_factory=list)
    """Domains held for its expected start (empty when placed now or not reserved)."""
    reserved_nodes: list[str] = Field(default_factory=list)
    """With reserved domains, the nodes its pods without an exclusive key are expected to take
    at its start (a JobSet with child Jobs of both kinds), held as its domains are (sorted)."""
    backfill: bool = False
    """Placed now on domains reserved for a later JobSet, expected to end before that starts."""
    waits_for: list[str] = Field(default_factory=list)
    """Running JobSets whose end its expected start waits for, the last to end first."""
    preempts: list[str] = Field(default_factory=list)
    """Running JobSets (`namespace/name`, sorted) evicted so it can run on their domains."""
    past_max_wait: bool = False
    """Not placed, and waiting longer than `--max-wait` since creation: its reservation keeps
    pods that are not placer's off its domains from now on, not only once its start is near
    (the scheduler extender's `--reservation-guard`)."""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


class PreemptedJobSet(BaseModel):
    """A running JobSet the plan evicts (whole: every child Job), and for whom."""

    model_config = ConfigDict(frozen=True, allow_inf_nan=False)
    namespace: str = "default"
    name: str
    status: Literal["preempted"] = "preempted"
    priority: int = 0
    accelerators: int = Field(default=0, ge=0)
    """Accelerator units it held (pods where it requests none)."""
    lost_chip_hours: float = Field(default=0, ge=0)
    """Accelerator-hours of work lost since its last checkpoint (else since it started)."""
    restart_chip_hours: float = Field(default=0, ge=0)
    """The restart cost (`--restart-cost` of its accelerators)."""
    makes_room_for: list[str] = Field(default_factory=list)
    """Pending JobSets placed on what it frees, sorted (usually one)."""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def cost_chip_hours(self) -> float:
        return self.lost_chip_hours + self.restart_chip_hours

    @property
    def cost_text(self) -> str:
        """`priority 100, 16 accelerators; 6.7 chip-hours: 5.3 of work lost, 1.3 to restart`:
        how the table and `placer explain` word it."""
        return (
            f"priority {self.priority}, {self.accelerators} accelerators; "
            f"{self.cost_chip_hours:.1f} chip-hours: {self.lost_chip_hours:.1f} of work lost, "
            f"{self.restart_chip_hours:.1f} to restart"
        )


def eviction_text(victims: Sequence[PreemptedJobSet]) -> str:
    """`evicting a/x (priority 100, 16 accelerators; 6.7 chip-hours: ...) and b/y (...)`: how
    `placer explain` words an eviction, in its remedies and in its verdict alike. Here, beside
    `cost_text`, so the renderer needs nothing of the solver (whose explain package loads CP-SAT
    when imported)."""
    return "evicting " + " and ".join(f"{v.key} ({v.cost_text})" for v in victims)


class SolverReport(BaseModel):
    model_config = ConfigDict(frozen=True, allow_inf_nan=False)
    name: str
    status: str
    """OPTIMAL, FEASIBLE (cpsat), HEURISTIC (greedy) or FALLBACK (cpsat fell back to greedy)."""
    objective: float = 0
    """Accelerator units admitted (summed over all tiers)."""
    bound: float | None = None
    """Proven upper bound on the admitted units of the best plan (the lexicographic optimum:
    tiers highest first): for CP-SAT the sum of its proven bound per tier, None when some tier
    proved nothing (ran out of time, or its model was rejected); equal to `objective` for OPTIMAL.
    Greedy solvers prove only the trivial bound, every unit requested."""
    gap: float | None = None
    """`relative_gap(objective, bound)`; None when there is no bound."""
    wall_seconds: float = 0
    phases: dict[str, float] = Field(default_factory=dict)
    """Wall seconds per planner phase (aggregate, greedy, build, solve, materialize, check)."""
    notes: list[str] = Field(default_factory=list)


def relative_gap(objective: float, bound: float | None) -> float | None:
    """(bound - objective) / bound: the share of the proven bound the plan may still miss.

    None when nothing is proven, or when the bound is below the objective (a greedy fallback can
    admit more units in total than the lexicographic optimum, which puts higher tiers first)."""
    if bound is None or bound < objective:
        return None
    if bound == 0:
        return 0.0
    return (bound - objective) / bound


class Plan(BaseModel):
    model_config = ConfigDict(frozen=True, allow_inf_nan=False)
    solver: SolverReport
    jobsets: list[JobSetOutcome]
    preempted: list[PreemptedJobSet] = Field(default_factory=list)
    """Running JobSets evicted by this plan (empty unless `--preemption` allows it), by key."""

    def outcome(self, key: str) -> JobSetOutcome:
        for o in self.jobsets:
            if o.key == key:
                return o
        raise KeyError(key)

    @property
    def accelerators_admitted(self) -> int:
        return sum(o.accelerators for o in self.jobsets if o.status == "placed")
