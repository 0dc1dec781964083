"""The one solver interface every consumer uses, so CP-SAT and the greedy baselines swap freely."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from placer.model.cluster import ClusterSnapshot
from placer.model.options import SolveOptions
from placer.model.plan import Plan
from placer.model.workload import JobSetRequest

__all__ = ["Solver"]


class Solver(Protocol):
    """Plan `jobsets` (any order; solvers sort by queue order) onto `snapshot`."""

    name: str

    def solve(
        self,
        snapshot: ClusterSnapshot,
        jobsets: Sequence[JobSetRequest],
        options: SolveOptions,
    ) -> Plan: ...
