"""Solver settings: one frozen object, passed in, applied in one place by each solver."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

__all__ = ["QueuePolicy", "SolveOptions"]

QueuePolicy = Literal["priority", "strict-fifo"]


class SolveOptions(BaseModel):
    model_config = ConfigDict(frozen=True)
    time_limit_s: float = 10.0
    """Wall-clock budget of one CP-SAT solve call, counted from its start: aggregation, greedy
    hint and model building use it up before search does (see placer/solver/cpsat/planner.py)."""
    workers: int = 0
    """CP-SAT search workers; 0 means CP-SAT's default portfolio of 8, whatever the core count."""
    seed: int = 0
    queue: QueuePolicy = "priority"
    """`strict-fifo`: a JobSet is admitted only if every earlier one of its priority tier is."""
    extended_resource_toleration: bool = True
    """Model the ExtendedResourceToleration admission plugin (on by default in GKE and most GPU
    clusters): a pod tolerates `<resource>:NoSchedule`-style taints for the extended resources it
    requests."""
    levels: tuple[str, ...] = ()
    """Topology levels coarse to fine; empty means the snapshot's, else the JobSets' keys."""
    export_model_path: str | None = None
    """Write each CP-SAT stage's model, with its objective, next to this path (one file per stage,
    see placer/solver/cpsat/export.py) for offline reproduction; greedy solvers refuse it."""
    check: bool = True
    """Run the independent plan checker on the result and refuse a plan that fails it."""
