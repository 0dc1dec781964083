"""Wall seconds per named phase: how the planner, the time-aware pass and the controller time
their steps, so every report's `phases` means the same thing.

A phase that runs more than once (the planner aggregates twice, a controller cycle plans in
several rounds) is summed. The clock is a parameter so a controller under test can use its own.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from placer.model.plan import Plan

__all__ = ["PhaseTimer", "plus_phase"]


class PhaseTimer:
    """Accumulates wall time per named phase: `with timer("solve"): ...`."""

    def __init__(
        self,
        clock: Callable[[], float] = time.perf_counter,
        seconds: dict[str, float] | None = None,
    ) -> None:
        self.clock = clock
        self.seconds: dict[str, float] = {} if seconds is None else seconds
        """Phase -> wall seconds so far, in the order the phases first ran."""

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        start = self.clock()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + self.clock() - start


def plus_phase(plan: Plan, name: str, seconds: float) -> Plan:
    """`plan` with a step taken after its solver returned counted in its report: `seconds`
    added to phase `name` and to the wall time (the checker, the never-fits check), so the
    phases still add up to no more than the wall."""
    phases = dict(plan.solver.phases)
    phases[name] = phases.get(name, 0.0) + seconds
    wall = plan.solver.wall_seconds + seconds
    report = plan.solver.model_copy(update={"phases": phases, "wall_seconds": wall})
    return plan.model_copy(update={"solver": report})
