"""Solver settings: one frozen object, passed in, applied in one place by each solver."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

__all__ = ["QueuePolicy", "SolveOptions"]

QueuePolicy = Literal["priority", "strict-fifo"]


class SolveOptions(BaseModel):
    model_config = ConfigDict(frozen=True)
    time_limit_s: float = 10.0
    workers: int = 0
    """CP-SAT search workers; 0 means one per core."""
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
    """Write the CP-SAT model here (text proto) for offline reproduction."""
    check: bool = True
    """Run the independent plan checker on the result and refuse a plan that fails it."""
