"""CP-SAT: the planner, and the one model builder every CP-SAT question in placer goes through.

The public surface is what this module exports; nothing outside `placer/solver/cpsat/` imports its
modules directly (tests/test_architecture.py checks it). Inside:

    planner.py      the planner's phases (aggregate, greedy, build, solve, materialize, check)
    aggregate.py    the queue and cluster folded into classes (steps, one function each)
    problem.py      the frozen aggregated problem, with its class index
    builder.py      `build_model(problem, mode, guards)`: variables, then one family per call
    variables.py    every decision variable, per mode; constraints.py, objectives.py the rules
    settings.py     `make_solver(options, purpose)`: every CP-SAT parameter
    solve.py        the lexicographic stages and what they proved; export.py `--export-model`
    solution.py     `Solution`: the one form of a solution, from the greedy hint to materialize
    hints.py        plans and coarse solutions made into `Solution`s; materialize.py, coarsen.py
"""

from __future__ import annotations

from placer.solver.cpsat.aggregate import aggregate
from placer.solver.cpsat.builder import BuiltModel, build_model
from placer.solver.cpsat.export import export_stage
from placer.solver.cpsat.planner import CpSatSolver
from placer.solver.cpsat.problem import AggregatedProblem, DomainClass, NodeGroup
from placer.solver.cpsat.settings import (
    DEFAULT_WORKERS,
    SCHEDULE_STARVING_HEAD,
    SCHEDULE_STARVING_OVERDUE,
    SCHEDULE_STARVING_SHARE,
    SolverPurpose,
    make_solver,
    solve_schedule,
)
from placer.solver.cpsat.variables import (
    Guards,
    ModelMode,
    Variables,
    copies_upper_bound,
    placement_of,
)

__all__ = [
    "DEFAULT_WORKERS",
    "SCHEDULE_STARVING_HEAD",
    "SCHEDULE_STARVING_OVERDUE",
    "SCHEDULE_STARVING_SHARE",
    "AggregatedProblem",
    "BuiltModel",
    "CpSatSolver",
    "DomainClass",
    "Guards",
    "ModelMode",
    "NodeGroup",
    "SolverPurpose",
    "Variables",
    "aggregate",
    "build_model",
    "copies_upper_bound",
    "export_stage",
    "make_solver",
    "placement_of",
    "solve_schedule",
]
