"""Phase "solve": the lexicographic objective as a sequence of CP-SAT solves.

Admission first, one solve per priority tier (highest first), each maximizing that tier's
accelerator units, each optimum then fixed as a constraint before the next tier; then queue order
as the tie-breaker. Packing last, with admissions fixed: fewest stranded accelerators, then fewest
higher-level domains spanned. Every solve is hinted with the previous solution, so a stage that
runs out of time still returns at least what the stage before found.

What the result claims is what CP-SAT proved: a tier's bound is the solver's best objective bound
(equal to its value when proven optimal), the total bound is their sum when every tier reported
one, and None as soon as one tier found nothing (CP-SAT then proves nothing about it or the tiers
below). A stage that is not searched because the time limit is spent says so in the notes, and a
model or parameter CP-SAT rejects is named MODEL_INVALID with CP-SAT's own message.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from ortools.sat.python import cp_model

from placer.model.options import SolveOptions
from placer.solver.cpsat import objectives
from placer.solver.cpsat.builder import BuiltModel
from placer.solver.cpsat.export import export_stage
from placer.solver.cpsat.settings import SolverPurpose, make_solver
from placer.solver.cpsat.solution import Solution

__all__ = [
    "NOT_SEARCHED",
    "SolveResult",
    "StageRunner",
    "canonicalize",
    "solve_admission",
    "solve_packing",
]

log = logging.getLogger(__name__)

NOT_SEARCHED = "NOT_SEARCHED"
"""Stage status when the time limit was spent before the stage could start searching."""


@dataclass(frozen=True)
class SolveResult:
    solution: Solution | None = None
    """The best solution found; None when no stage found one."""
    optimal: bool = True
    """Every stage run was proven optimal (a stage cut short or not run makes it False)."""
    objective: int = 0
    """Accelerator units admitted, summed over tiers."""
    bound: int | None = None
    """Sum of the tiers' proven bounds on admitted units; None when a tier proved nothing."""
    notes: tuple[str, ...] = ()
    failure: str | None = None
    """Status of the stage that found nothing (UNKNOWN, MODEL_INVALID, NOT_SEARCHED...)."""

    @property
    def found(self) -> bool:
        return self.solution is not None


@dataclass(frozen=True)
class StageOutcome:
    status: str
    solver: cp_model.CpSolver | None
    note: str = ""
    """Why the stage found nothing, in words, when it did not."""

    @property
    def found(self) -> bool:
        return self.status in ("OPTIMAL", "FEASIBLE")

    @property
    def optimal(self) -> bool:
        return self.status == "OPTIMAL"


class StageRunner:
    """Runs the planner's stages: one solver each, exported first when `--export-model` asks."""

    def __init__(self, options: SolveOptions) -> None:
        self.options = options
        self.exported: list[str] = []

    def run(
        self,
        model: cp_model.CpModel,
        name: str,
        deadline: float,
        purpose: SolverPurpose = "stage",
        *,
        export: bool = True,
    ) -> StageOutcome:
        if export and self.options.export_model_path:
            path = export_stage(model, self.options.export_model_path, len(self.exported) + 1, name)
            self.exported.append(path)
        left_s = deadline - time.perf_counter()
        if left_s <= 0:
            return StageOutcome(NOT_SEARCHED, None, f"{name}: not searched, time limit spent")
        solver = make_solver(self.options, purpose, left_s)
        status = solver.status_name(solver.solve(model))
        log.debug(
            "stage %s: %s, objective %s, bound %s, %.2f s",
            name,
            status,
            solver.objective_value,
            solver.best_objective_bound,
            solver.wall_time,
        )
        if status in ("OPTIMAL", "FEASIBLE"):
            return StageOutcome(status, solver)
        if status == "MODEL_INVALID":
            info = solver.solution_info() or "no detail"
            return StageOutcome(status, solver, f"{name}: MODEL_INVALID ({info})")
        if status == "UNKNOWN":
            return StageOutcome(status, solver, f"{name}: UNKNOWN (no solution within the time)")
        return StageOutcome(status, solver, f"{name}: {status}")


def solve_admission(built: BuiltModel, runner: StageRunner, deadline: float) -> SolveResult:
    """Each tier's accelerator units, highest tier first, each fixed once found; then, with
    preemption, the least eviction cost; then queue order.

    Queue order (earlier JobSets first among equal admissions) comes after every tier's units: it
    is a tie-breaker whose optimality is hard to prove with many similar JobSets, and a stage that
    may not finish must not starve the tiers below of solve time.
    """
    model, v, problem = built.model, built.variables, built.problem
    stages = [
        (f"tier {t}", objectives.admitted_units(v, problem, t), True)
        for t in objectives.tiers(problem)
    ]
    if v.evict:
        stages.append(("eviction cost", -objectives.eviction_cost(v, problem), False))
    stages.append(("queue order", objectives.queue_preference(v, problem), False))
    solution: Solution | None = None
    objective, bound, optimal = 0, 0, True
    bound_known = True
    notes: list[str] = []
    for name, expr, counts_units in stages:
        model.name = name
        model.maximize(expr)
        out = runner.run(model, name, deadline)
        if not out.found or out.solver is None:
            notes.append(out.note)
            bound_known = bound_known and not counts_units
            failure = out.status if solution is None else None
            return SolveResult(
                solution,
                False,
                objective,
                bound if bound_known else None,
                tuple(notes),
                failure,
            )
        value = round(out.solver.objective_value)
        proven = value if out.optimal else round(out.solver.best_objective_bound)
        if counts_units:
            objective += value
            bound += proven
        if not out.optimal:
            optimal = False
            notes.append(f"{name}: FEASIBLE, {value} (bound {proven})")
        solution = Solution.read(out.solver, v)
        model.add(expr >= value)
        solution.hint(model, v)
    return SolveResult(solution, optimal, objective, bound, tuple(notes))


def solve_packing(
    built: BuiltModel,
    runner: StageRunner,
    deadline: float,
    admitted: frozenset[str],
    evicted: frozenset[str] = frozenset(),
) -> SolveResult:
    """Best fit, then Kueue's fewest domains per level, then Kueue's tightest domain, then
    locality, then Kueue's fewest hosts (`objectives.packing_terms`), with admissions (and
    evictions) fixed; a hint must already be on the model.

    Without Kueue domain terms, one weighted solve, each term's weight exceeding everything below
    it (a lexicographic order): at fleet scale each presolve of the fine model costs a second or
    more, and locality, a facility-location problem, is rarely proven anyway. With them, best fit
    and each Kueue level are solves of their own, each optimum fixed before the next, and the
    rest one weighted solve: the weighted sum of them all is much slower to prove (on the Kueue
    benchmark, 6.6 s against about 1 s), and an unproven packing is not canonicalized, so the
    plan would depend on timing.
    """
    model, v, problem = built.model, built.variables, built.problem
    for key, x in v.admit.items():
        model.add(x == int(key in admitted))
    for key, x in v.evict.items():
        model.add(x == int(key in evicted))
    terms = objectives.packing_terms(v, problem)
    kueue = len(objectives.domains_used(v, problem))
    stages = [terms] if not kueue else [[t] for t in terms[: 1 + kueue]] + [terms[1 + kueue :]]
    stages = [stage for stage in stages if any(t.bound for t in stage)] or [terms]
    solution: Solution | None = None
    notes: list[str] = []
    optimal = True
    for stage in stages:
        name = "packing" if len(stages) == 1 else f"packing ({stage[0].name})"
        weights = _lexicographic_weights(stage)
        expr = sum((w * t.expr for w, t in zip(weights, stage, strict=True)), _ZERO)
        model.name = name
        model.minimize(expr)
        out = runner.run(model, name, deadline)
        if not out.found or out.solver is None:
            if solution is None:
                return SolveResult(optimal=False, notes=(out.note,), failure=out.status)
            notes.append(out.note)  # the stages before stand
            optimal = False
            break
        value = round(out.solver.objective_value)
        if not out.optimal:
            optimal = False
            lower = round(out.solver.best_objective_bound)
            found, bound = _parts(value, stage, weights), _parts(lower, stage, weights)
            notes.append(f"{name}: FEASIBLE, {found} (bound {bound})")
        model.add(expr <= value)
        solution = Solution.read(out.solver, v)
        solution.hint(model, v)
    return SolveResult(solution, optimal, notes=tuple(notes))


_ZERO = cp_model.LinearExpr.constant(0)


def _lexicographic_weights(terms: list[objectives.Term]) -> list[int]:
    """Weights that make a weighted sum lexicographic: each exceeds all terms below at their
    largest."""
    weights = [1]
    for t in reversed(terms[1:]):
        weights.insert(0, weights[0] * (t.bound + 1))
    return weights


def _parts(value: int, terms: list[objectives.Term], weights: list[int]) -> str:
    """A weighted packing value split back into its terms: `3 stranded, 0 spans, ...`."""
    parts = []
    for t, w in zip(terms, weights, strict=True):
        parts.append(f"{value // w} {t.name}")
        value %= w
    return ", ".join(parts)


def canonicalize(
    built: BuiltModel, runner: StageRunner, deadline: float, result: SolveResult
) -> SolveResult:
    """The same input gives the same plan: with every objective fixed at its proven optimum, a
    single-worker search without hints finds one solution of the tied set deterministically.

    Only meaningful when every stage was proven optimal (a time-limited stage depends on timing
    anyway); if the search does not finish in time, the portfolio's solution stands.
    """
    if not (result.found and result.optimal):
        return result
    model = built.model
    model.clear_hints()  # type: ignore[no-untyped-call]  # unannotated in OR-Tools
    model.clear_objective()  # type: ignore[no-untyped-call]  # unannotated in OR-Tools
    model.name = "canonical"
    out = runner.run(model, "canonical", deadline, "canonical", export=False)
    if out.found and out.solver is not None:
        solution = Solution.read(out.solver, built.variables)
        return SolveResult(solution, True, result.objective, result.bound, result.notes)
    note = "canonical: not found in time; an equally good plan may vary per run"
    return SolveResult(result.solution, True, result.objective, result.bound, (*result.notes, note))
