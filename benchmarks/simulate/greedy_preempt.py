"""Kueue-like greedy preemption, the baseline of issue 20's over-time benchmark.

As Kueue (and the other peers) preempt: for one blocked JobSet, candidates are the running
JobSets of strictly lower priority, lowest priority first and, within a priority, the most
recently started first; they are evicted one at a time, each time trying to place the blocked
JobSet alone (best-fit, the Kueue TAS stand-in), until it fits. Topology is not considered when
choosing a victim, so victims that free no usable domain are evicted too, as the peers do.
"""

from __future__ import annotations

from collections.abc import Mapping

from placer.model.cluster import ClusterSnapshot
from placer.model.options import SolveOptions
from placer.model.plan import Plan
from placer.model.whatif import without_jobsets
from placer.model.workload import JobSetRequest
from placer.solver.registry import get_solver

__all__ = ["MAX_VICTIMS", "first_fitting_victims"]

MAX_VICTIMS = 16
"""Most victims tried for one blocked JobSet (each try is one best-fit plan)."""


def first_fitting_victims(
    snapshot: ClusterSnapshot,
    request: JobSetRequest,
    running: Mapping[str, tuple[int, float]],
    options: SolveOptions,
) -> tuple[list[str], Plan] | None:
    """(victims, the plan placing `request` without them), or None if evicting every allowed
    candidate (up to `MAX_VICTIMS`) does not make it fit. `running` is key -> (priority, start)."""
    candidates = sorted(
        (k for k, (p, _) in running.items() if p < request.priority),
        key=lambda k: (running[k][0], -running[k][1], k),
    )[:MAX_VICTIMS]
    solver = get_solver("best-fit")
    plain = options.model_copy(
        update={"time": options.time.model_copy(update={"reservations": "none"})}
    )
    victims: list[str] = []
    for key in candidates:
        victims.append(key)
        freed, _, _ = without_jobsets(snapshot, victims)
        plan = solver.solve(freed, [request], plain)
        if plan.jobsets[0].status == "placed":
            return victims, plan
    return None
