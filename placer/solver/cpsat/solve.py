"""Phase "solve": the lexicographic objective as a sequence of CP-SAT solves.

Admission first, one solve per priority tier (highest first), each maximizing that tier's
accelerator units with queue order folded in as a smaller weight; each optimum found is then fixed
as a constraint before the next tier. Packing last, with admissions fixed: fewest stranded
accelerators, then fewest higher-level domains spanned, each fixed before the next. Every solve is
hinted with the previous solution, so a stage that runs out of time still returns at least what the
stage before found.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from ortools.sat.python import cp_model

from placer.model.options import SolveOptions
from placer.solver.cpsat import objectives
from placer.solver.cpsat.aggregate import AggregatedProblem
from placer.solver.cpsat.variables import Variables

__all__ = ["SolveResult", "apply_parameters", "solve_admission", "solve_packing"]


@dataclass
class SolveResult:
    values: dict[str, int] = field(default_factory=dict)
    """Variable name -> value in the best solution found."""
    found: bool = False
    optimal: bool = True
    objective: int = 0
    """Accelerator units admitted, summed over tiers."""
    bound: int = 0
    """Proven upper bound on `objective`."""
    notes: list[str] = field(default_factory=list)


def apply_parameters(solver: cp_model.CpSolver, options: SolveOptions, time_left_s: float) -> None:
    """All solver parameters in one place. Interleaved search keeps results reproducible."""
    solver.parameters.max_time_in_seconds = max(0.05, time_left_s)
    solver.parameters.num_workers = options.workers or 8
    solver.parameters.interleave_search = True
    solver.parameters.random_seed = options.seed


def _all_vars(v: Variables) -> list[cp_model.IntVar]:
    return [
        *v.admit.values(),
        *v.count.values(),
        *v.shared_in_class.values(),
        *v.shared_in_group.values(),
        *v.local.values(),
        *v.span.values(),
    ]


def _solve(
    model: cp_model.CpModel, options: SolveOptions, deadline: float
) -> tuple[cp_model.CpSolver, Any]:
    solver = cp_model.CpSolver()
    apply_parameters(solver, options, deadline - time.perf_counter())
    return solver, solver.solve(model)


def _rehint(
    model: cp_model.CpModel, variables: list[cp_model.IntVar], values: dict[str, int]
) -> None:
    model.clear_hints()  # type: ignore[no-untyped-call]
    for x in variables:
        model.add_hint(x, values[x.name])


def solve_admission(
    model: cp_model.CpModel, v: Variables, problem: AggregatedProblem, deadline: float
) -> SolveResult:
    result = SolveResult()
    variables = _all_vars(v)
    for tier in objectives.tiers(problem):
        units = objectives.admitted_units(v, problem, tier)
        order, weight = objectives.queue_preference(v, problem, tier)
        expr = units * weight + order
        model.maximize(expr)
        solver, status = _solve(model, problem.ctx.options, deadline)
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            result.notes.append(f"tier {tier}: {solver.status_name(status)}")
            result.optimal = False
            return result if not result.found else _stop(result)
        value = round(solver.objective_value)
        bound = round(solver.best_objective_bound)
        result.found = True
        result.objective += value // weight
        result.bound += bound // weight
        if status != cp_model.OPTIMAL:
            result.optimal = False
            result.notes.append(
                f"tier {tier}: FEASIBLE, {value // weight} of at most {bound // weight} units"
            )
        result.values = {x.name: solver.value(x) for x in variables}
        model.add(expr >= value)
        _rehint(model, variables, result.values)
    return result


def _stop(result: SolveResult) -> SolveResult:
    """A later tier found nothing in time: keep what the earlier tiers found (bound unknown)."""
    result.bound = max(result.bound, result.objective)
    return result


def solve_packing(
    model: cp_model.CpModel,
    v: Variables,
    problem: AggregatedProblem,
    deadline: float,
    admitted: dict[str, int],
) -> SolveResult:
    """Best fit, then locality, with admissions fixed; a hint must already be on the model.

    Locality (fewest enclosing domains spanned) is a facility-location problem that CP-SAT rarely
    proves at fleet scale; it gets what time is left and its bound is reported in the notes.
    """
    for key, x in v.admit.items():
        model.add(x == admitted.get(key, 0))
    variables = _all_vars(v)
    result = SolveResult(found=False, optimal=True)
    stages = [
        ("best fit", objectives.stranded_accelerators(v, problem)),
        ("locality", objectives.domains_spanned(v)),
    ]
    for name, expr in stages:
        model.minimize(expr)
        solver, status = _solve(model, problem.ctx.options, deadline)
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            result.optimal = False
            result.notes.append(f"{name}: {solver.status_name(status)}")
            return result
        value = round(solver.objective_value)
        result.found = True
        if status != cp_model.OPTIMAL:
            result.optimal = False
            result.notes.append(
                f"{name}: FEASIBLE, {value} (bound {round(solver.best_objective_bound)})"
            )
        result.values = {x.name: solver.value(x) for x in variables}
        model.add(expr <= value)
        _rehint(model, variables, result.values)
    return result
