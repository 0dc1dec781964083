"""Solvers by name, and the one place a solver is assembled for planning.

The CLI, the controller, the explanations and the benchmarks all get their solver here, so a
plan is made the same way wherever it is made: the named solver (CP-SAT or a greedy baseline),
wrapped for time-aware planning (`TimeAwareSolver`: reservations, backfill) when the time policy
asks for it, and every plan it returns checked by the independent checker (phase "check"; a plan
that fails it is never returned: `InvalidPlanError`, a bug, not bad input).
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Sequence

from placer.model.cluster import ClusterSnapshot
from placer.model.errors import InputError
from placer.model.options import SolveOptions, TimePolicy
from placer.model.plan import Plan
from placer.model.workload import JobSetRequest
from placer.solver.check.checker import check
from placer.solver.interface import Solver
from placer.solver.phases import plus_phase

__all__ = ["SOLVER_NAMES", "CheckedSolver", "InvalidPlanError", "get_solver", "prepare_solver"]

_SOLVERS: dict[str, tuple[str, str]] = {
    "cpsat": ("placer.solver.cpsat", "CpSatSolver"),
    "first-fit": ("placer.solver.greedy.baselines", "FirstFitSolver"),
    "best-fit": ("placer.solver.greedy.baselines", "BestFitSolver"),
    "largest-first": ("placer.solver.greedy.baselines", "LargestFirstSolver"),
}
SOLVER_NAMES: tuple[str, ...] = tuple(_SOLVERS)
"""Every solver name, in the order the CLI lists them (`--solver`)."""


class InvalidPlanError(AssertionError):
    """A solver returned a plan the independent checker rejects: a bug in placer, never the
    input's fault (an unschedulable JobSet is a result, not an error)."""

    def __init__(self, solver: str, violations: Sequence[str]) -> None:
        super().__init__(f"{solver} produced an invalid plan: " + "; ".join(violations[:5]))
        self.violations = tuple(violations)


def get_solver(
    name: str, *, time_policy: TimePolicy | None = None, never_check: bool = False
) -> CheckedSolver:
    """The solver called `name`, ready to plan (see `prepare_solver`)."""
    return prepare_solver(_named(name), time_policy=time_policy, never_check=never_check)


def _named(name: str) -> Solver:
    """The bare solver called `name` (an unknown name is a usage error)."""
    if name not in _SOLVERS:
        raise InputError(
            f"unknown solver {name!r}; choose one of {', '.join(SOLVER_NAMES)}",
            field="--solver",
            code="usage",
        )
    module, cls = _SOLVERS[name]
    solver: Solver = getattr(importlib.import_module(module), cls)()
    return solver


def prepare_solver(
    solver: Solver, *, time_policy: TimePolicy | None = None, never_check: bool = False
) -> CheckedSolver:
    """`solver` made ready to plan: time-aware when `time_policy` is active, plans checked.

    `never_check` is for plans someone reads the reasons of (`placer plan`, `explain`, the
    controller): without time-aware planning, a JobSet left out that never fits is told why from
    the cluster once every run ends (`NeverFitSolver`; the time-aware pass always does so).
    For a solver made elsewhere (a test's stand-in, a slowed one); solvers by name come through
    `get_solver`. Preparing a prepared solver again re-wraps its inner solver, never twice.
    """
    from placer.solver.time.never import NeverFitSolver
    from placer.solver.time.timeaware import TimeAwareSolver

    inner = solver.inner if isinstance(solver, CheckedSolver) else solver
    if isinstance(inner, NeverFitSolver):
        inner = inner.inner
    if time_policy is not None and time_policy.active:
        if not isinstance(inner, TimeAwareSolver):
            inner = TimeAwareSolver(inner)
    elif never_check and not isinstance(inner, TimeAwareSolver):
        inner = NeverFitSolver(inner)
    return CheckedSolver(inner)


class CheckedSolver:
    """Every plan of `inner` checked (unless `options.check` is off), the check timed as phase
    "check" and counted in the plan's wall seconds; `inner` is told not to check again."""

    def __init__(self, inner: Solver) -> None:
        self.inner = inner
        self.name = inner.name

    def solve(
        self, snapshot: ClusterSnapshot, jobsets: Sequence[JobSetRequest], options: SolveOptions
    ) -> Plan:
        if not options.check:
            return self.inner.solve(snapshot, jobsets, options)
        plan = self.inner.solve(snapshot, jobsets, options.model_copy(update={"check": False}))
        started = time.perf_counter()
        violations = check(plan, snapshot, jobsets, options)
        if violations:
            raise InvalidPlanError(self.name, violations)
        return plus_phase(plan, "check", time.perf_counter() - started)
