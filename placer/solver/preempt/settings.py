"""Tuning of the preemption search, apart from its logic.

`MAX_CANDIDATES`: at most this many running JobSets are offered to the model as victims, the
cheapest per accelerator first. Each candidate is a domain class of its own (its eviction literal),
so the model grows with them: at 10,000 nodes with 177 candidates the first admission stage found
no solution in its time and the planner fell back to greedy (no eviction at all); with the 16
cheapest it admitted 360 more accelerator units of the waiting tier, evicting 13
(benchmarks/RESULTS-preemption.md). Small clusters never reach the cap.
"""

from __future__ import annotations

__all__ = ["MAX_CANDIDATES"]

MAX_CANDIDATES = 16
