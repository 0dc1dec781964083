"""What `placer capacity` finds, as plain data: the JSON document is the report's `model_dump()`."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from placer.model.plan import Plan

__all__ = [
    "CapacityReport",
    "CheapestReport",
    "DomainTypeUsage",
    "Mix",
    "MixEntry",
    "PoolPurchase",
    "ShapeCopies",
]


class ShapeCopies(BaseModel):
    """How many more copies of one JobSet fit now, each whole (all-or-nothing) and exclusive."""

    model_config = ConfigDict(frozen=True)
    jobset: str
    accelerators_per_copy: int
    copies: int
    limit: str
    """Why one more copy does not fit: the replicated jobs that fall short, Kueue-style."""
    limit_lines: list[str] = Field(default_factory=list)
    verified: bool
    """True when the planner placed exactly this many copies and the checker accepted the plan."""


class MixEntry(BaseModel):
    model_config = ConfigDict(frozen=True)
    jobset: str
    copies: int
    accelerators: int


class Mix(BaseModel):
    """The largest mix of the given shapes that fits together, by accelerators (then copies)."""

    model_config = ConfigDict(frozen=True)
    entries: list[MixEntry]
    accelerators: int
    status: str
    """OPTIMAL or FEASIBLE (CP-SAT); another status (UNKNOWN at a timeout) means no answer, and
    the mix is then empty and not verified."""
    verified: bool


class DomainTypeUsage(BaseModel):
    """Free accelerators in the domains of one exclusive key, per kind of domain."""

    model_config = ConfigDict(frozen=True)
    key: str
    type: str
    """`ct5lp-hightpu-4t x2`: instance types of the domain's nodes and how many nodes it has."""
    domains: int
    accelerators: int
    """Allocatable accelerator units in these domains."""
    free: int
    """Free units on usable nodes (what running pods leave)."""
    usable: int
    """Free units in domains that at least one given shape can take."""
    stranded: int
    """Free units no given shape can use (free - usable)."""
    stranded_by: dict[str, int] = Field(default_factory=dict)
    """Stranded units by reason: held by running JobSets, NotReady node, too small, ..."""
    idle_after_mix: int | None = None
    """Free units still idle once the largest mix is placed (None without a mix)."""
    stranded_nodes: tuple[str, ...] = Field(default=(), exclude=True)
    """Usable nodes with free units counted as stranded (for `--map`); not in the JSON document."""


class CapacityReport(BaseModel):
    model_config = ConfigDict(frozen=True)
    whatif: list[str] = Field(default_factory=list)
    shapes: list[ShapeCopies]
    mix: Mix | None
    domain_types: list[DomainTypeUsage]
    notes: list[str] = Field(default_factory=list)
    mix_plan: Plan | None = Field(default=None, exclude=True)
    """The checked plan of the largest mix (copies named `<name>-copy-<j>`), for `--map`."""


class PoolPurchase(BaseModel):
    model_config = ConfigDict(frozen=True)
    type: str
    count: int
    hosts: int
    price_per_hour: float
    """Price of one pool of this type."""
    subtotal: float


class CheapestReport(BaseModel):
    """The cheapest node pools from the catalogue on which every given JobSet fits at once."""

    model_config = ConfigDict(frozen=True)
    whatif: list[str] = Field(default_factory=list)
    status: str
    """OPTIMAL (cheapest proven, plan verified), FEASIBLE (plan verified, cheaper not excluded in
    time) or INFEASIBLE (no purchase within the maximum counts fits everything)."""
    pools: list[PoolPurchase] = Field(default_factory=list)
    price_per_hour: float = 0
    plan: Plan | None = None
    """The plan on the existing cluster plus the chosen pools (checked)."""
    on_existing_cluster: bool = False
    """True when the pools were bought on top of a given cluster (--cluster)."""
    iterations: int = 1
    """Purchases tried: a purchase the planner could not fill is excluded and the next tried."""
    notes: list[str] = Field(default_factory=list)
