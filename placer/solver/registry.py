"""Solvers by name, so the CLI, controller and benchmarks pick one with a string."""

from __future__ import annotations

import importlib

from placer.model.errors import InputError
from placer.solver.interface import Solver

__all__ = ["SOLVER_NAMES", "get_solver"]

_SOLVERS: dict[str, tuple[str, str]] = {
    "cpsat": ("placer.solver.cpsat", "CpSatSolver"),
    "first-fit": ("placer.solver.greedy.baselines", "FirstFitSolver"),
    "best-fit": ("placer.solver.greedy.baselines", "BestFitSolver"),
    "largest-first": ("placer.solver.greedy.baselines", "LargestFirstSolver"),
}
SOLVER_NAMES: tuple[str, ...] = tuple(_SOLVERS)


def get_solver(name: str) -> Solver:
    if name not in _SOLVERS:
        raise InputError(
            f"unknown solver {name!r}; choose one of {', '.join(SOLVER_NAMES)}",
            field="--solver",
            code="usage",
        )
    module, cls = _SOLVERS[name]
    solver: Solver = getattr(importlib.import_module(module), cls)()
    return solver
