"""Topology-aware preemption: which running JobSets may be evicted, by whom, at what cost.

`candidates` finds them (protection rules and eviction cost) for the CP-SAT planner, which chooses
the victims in its model (cpsat/constraints.py `add_eviction`); `attribute` turns the chosen
victims into the plan's `preempts` lists and `preempted` entries.
"""

from __future__ import annotations

from placer.solver.preempt.attribute import attribute_preemptions
from placer.solver.preempt.candidates import VictimCandidate, Victims, find_victims

__all__ = ["VictimCandidate", "Victims", "attribute_preemptions", "find_victims"]
