"""Phase "solve": the lexicographic objective as a sequence of CP-SAT solves.

Admission first, one solve per priority tier (highest first), each maximizing that tier's
accelerator units, each optimum then fixed as a constraint before the next tier; then queue order
as the tie-breaker. Packing last, with admissions fixed: fewest stranded accelerators, then fewest
higher-level domains spanned. Every solve is
hinted with the previous solution, so a stage that runs out of time still returns at least what the
stage before found.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

from ortools.sat.python import cp_model

from placer.model.options import SolveOptions
from placer.solver.cpsat import objectives
from placer.solver.cpsat.aggregate import AggregatedProblem
from placer.solver.cpsat.variables import Variables

__all__ = [
    "SolveResult",
    "apply_parameters",
    "canonicalize",
    "solve_admission",
    "solve_packing",
]

log = logging.getLogger(__name__)


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


def apply_parameters(
    solver: cp_model.CpSolver, options: SolveOptions, time_left_s: float, *, canonical: bool = False
) -> None:
    """All solver parameters in one place.

    Stages run CP-SAT's parallel portfolio, which proves these models several times faster than
    its deterministic interleaved search, but may return any of several equally good solutions.
    `canonical` is the single-worker search `canonicalize` uses to pick one reproducibly.
    """
    solver.parameters.max_time_in_seconds = max(0.05, time_left_s)
    solver.parameters.num_workers = 1 if canonical else (options.workers or 8)
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
    model: cp_model.CpModel, options: SolveOptions, deadline: float, *, canonical: bool = False
) -> tuple[cp_model.CpSolver, Any]:
    solver = cp_model.CpSolver()
    apply_parameters(solver, options, deadline - time.perf_counter(), canonical=canonical)
    status = solver.solve(model)
    log.debug(
        "stage %s: %s, objective %s, bound %s, %.2f s",
        model.name or "-",
        solver.status_name(status),
        solver.objective_value,
        solver.best_objective_bound,
        solver.wall_time,
    )
    return solver, status


def _rehint(
    model: cp_model.CpModel, variables: list[cp_model.IntVar], values: dict[str, int]
) -> None:
    model.clear_hints()  # type: ignore[no-untyped-call]
    for x in variables:
        model.add_hint(x, values[x.name])


def solve_admission(
    model: cp_model.CpModel, v: Variables, problem: AggregatedProblem, deadline: float
) -> SolveResult:
    """Each tier's accelerator units, highest tier first, each fixed once found; then queue order.

    Queue order (earlier JobSets first among equal admissions) comes after every tier's units: it
    is a tie-breaker whose optimality is hard to prove with many similar JobSets, and a stage that
    may not finish must not starve the tiers below of solve time.
    """
    result = SolveResult()
    variables = _all_vars(v)
    stages = [
        (f"tier {t}", objectives.admitted_units(v, problem, t), True)
        for t in objectives.tiers(problem)
    ]
    stages.append(("queue order", objectives.queue_preference(v, problem), False))
    for name, expr, counts_units in stages:
        model.name = name
        model.maximize(expr)
        solver, status = _solve(model, problem.ctx.options, deadline)
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            result.notes.append(f"{name}: {solver.status_name(status)}")
            result.optimal = False
            return result if not result.found else _stop(result)
        value = round(solver.objective_value)
        bound = round(solver.best_objective_bound)
        result.found = True
        if counts_units:
            result.objective += value
            result.bound += bound
        if status != cp_model.OPTIMAL:
            result.optimal = False
            result.notes.append(f"{name}: FEASIBLE, {value} (bound {bound})")
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

    One weighted solve, stranded accelerators above spans (a lexicographic order, since spans can
    never outweigh one accelerator): at fleet scale each presolve of the fine model costs a second
    or more, and locality, a facility-location problem, is rarely proven anyway.
    """
    for key, x in v.admit.items():
        model.add(x == admitted.get(key, 0))
    stranded = objectives.stranded_accelerators(v, problem)
    spans = objectives.domains_spanned(v)
    weight = len(v.span) + len(v.local) + 1
    model.name = "packing"
    model.minimize(stranded * weight + spans)
    solver, status = _solve(model, problem.ctx.options, deadline)
    result = SolveResult(found=False, optimal=True)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        result.optimal = False
        result.notes.append(f"packing: {solver.status_name(status)}")
        return result
    value = round(solver.objective_value)
    result.found = True
    if status != cp_model.OPTIMAL:
        result.optimal = False
        bound = round(solver.best_objective_bound)
        result.notes.append(
            f"packing: FEASIBLE, {value // weight} stranded and {value % weight} spans "
            f"(bound {bound // weight} and {bound % weight})"
        )
    result.values = {x.name: solver.value(x) for x in _all_vars(v)}
    model.add(stranded * weight + spans <= value)
    return result


def canonicalize(
    model: cp_model.CpModel,
    v: Variables,
    problem: AggregatedProblem,
    deadline: float,
    result: SolveResult,
) -> SolveResult:
    """The same input gives the same plan: with every objective fixed at its proven optimum, a
    single-worker search without hints finds one solution of the tied set deterministically.

    Only meaningful when every stage was proven optimal (a time-limited stage depends on timing
    anyway); if the search does not finish in time, the portfolio's solution stands.
    """
    if not (result.found and result.optimal):
        return result
    model.clear_hints()  # type: ignore[no-untyped-call]
    model.clear_objective()  # type: ignore[no-untyped-call]
    model.name = "canonical"
    solver, status = _solve(model, problem.ctx.options, deadline, canonical=True)
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        result.values = {x.name: solver.value(x) for x in _all_vars(v)}
    else:
        result.notes.append("canonical: not found in time; an equally good plan may vary per run")
    return result
