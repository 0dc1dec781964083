"""Capacity planning: how many more copies fit, the largest mix, stranded accelerators, and the
cheapest node pools from a catalogue on which a queue fits.

`placer capacity` calls `capacity_report` (or `cheapest_pools` with `--cheapest`). Modules:
`counting` (the planner's model with copy counts), `copies`, `mix`, `stranded`, `cheapest`,
`result` (the JSON documents).
"""

from __future__ import annotations

from placer.solver.capacity.report import capacity_report
from placer.solver.capacity.result import (
    CapacityReport,
    CheapestReport,
    DomainTypeUsage,
    Mix,
    MixEntry,
    PoolPurchase,
    ShapeCopies,
)

__all__ = [
    "CapacityReport",
    "CheapestReport",
    "DomainTypeUsage",
    "Mix",
    "MixEntry",
    "PoolPurchase",
    "ShapeCopies",
    "capacity_report",
]
