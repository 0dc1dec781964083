"""The CP-SAT planner: plans every pending JobSet at once, never worse than the best greedy plan.

Phases, each one function, timed into `SolverReport.phases`:
  snapshot     facts every solver shares (queue order, domains, who fits where)
  aggregate    fold interchangeable child Jobs and domains into classes (and a coarser admission
               view when locality does not constrain admission)
  greedy       best-fit and largest-first plans; the better one hints CP-SAT and is the fallback
  build        variables, then the rules, one constraint family per call
  solve        admission per priority tier, then packing (best fit, locality); see solve.py
  materialize  class counts -> concrete domains and nodes, through the ledger greedy uses
  check        the independent plan checker; a plan that fails it is never returned
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

from ortools.sat.python import cp_model

from placer.model.cluster import ClusterSnapshot
from placer.model.options import SolveOptions
from placer.model.plan import Plan, SolverReport
from placer.model.workload import JobSetRequest
from placer.solver.checker import check
from placer.solver.context import PlacementContext
from placer.solver.cpsat import constraints
from placer.solver.cpsat.aggregate import AggregatedProblem, aggregate
from placer.solver.cpsat.coarsen import coarsen
from placer.solver.cpsat.hints import hint_from_chosen, hint_from_plan, spread_counts
from placer.solver.cpsat.materialize import Chosen, chosen_from_values, materialize
from placer.solver.cpsat.solve import (
    SolveResult,
    canonicalize,
    solve_admission,
    solve_packing,
)
from placer.solver.cpsat.variables import Variables, create_variables
from placer.solver.greedy import greedy_plan

__all__ = ["ADMISSION_SHARE", "PACKING_SHARE", "CpSatSolver", "build_model", "plan_with_context"]

log = logging.getLogger(__name__)
T = TypeVar("T")

ADMISSION_SHARE = 0.75
"""Share of the time limit admission may use; packing gets the rest (admission matters more)."""
PACKING_MODEL_LIMIT = 15_000
"""Above this many (child-Job class, domain class) pairs the packing model takes longer to build
and presolve than it can gain; the admission solution is then spread heuristically."""
PACKING_SHARE = 0.2
"""Packing (best fit, locality) searches for at most this share of the time limit (at least 1 s,
and always 0.5 s): at fleet scale it is rarely proven and improves slowly after the first seconds.
Model building is not counted: the time limit bounds search."""


class CpSatSolver:
    name = "cpsat"

    def solve(
        self, snapshot: ClusterSnapshot, jobsets: Sequence[JobSetRequest], options: SolveOptions
    ) -> Plan:
        phases: dict[str, float] = {}
        started = time.perf_counter()
        ctx = _timed(phases, "snapshot", lambda: snapshot_phase(snapshot, jobsets, options))
        plan = plan_with_context(ctx, phases)
        return plan.model_copy(
            update={
                "solver": plan.solver.model_copy(
                    update={"wall_seconds": time.perf_counter() - started, "phases": phases}
                )
            }
        )


def _timed(phases: dict[str, float], name: str, fn: Callable[[], T]) -> T:
    start = time.perf_counter()
    try:
        return fn()
    finally:
        phases[name] = phases.get(name, 0.0) + time.perf_counter() - start


def snapshot_phase(
    snapshot: ClusterSnapshot, jobsets: Sequence[JobSetRequest], options: SolveOptions
) -> PlacementContext:
    ctx = PlacementContext(snapshot, jobsets, options)
    _ = ctx.topology, ctx.exclusive_domains, ctx.held_by
    return ctx


def build_model(problem: AggregatedProblem) -> tuple[cp_model.CpModel, Variables]:
    """The model as a list of rules; solve.py sets the objective of each stage."""
    model = cp_model.CpModel()
    v = create_variables(model, problem)
    constraints.add_all_or_nothing(model, v, problem)
    constraints.add_domain_exclusivity(model, v, problem)
    constraints.add_overlapping_domains(model, v, problem)
    constraints.add_shared_fit(model, v, problem)
    constraints.add_locality(model, v, problem)
    constraints.add_strict_fifo(model, v, problem)
    constraints.add_impossible(model, v, problem)
    return model, v


def plan_with_context(ctx: PlacementContext, phases: dict[str, float] | None = None) -> Plan:
    phases = phases if phases is not None else {}
    start = time.perf_counter()
    limit = ctx.options.time_limit_s
    fine = _timed(phases, "aggregate", lambda: aggregate(ctx))
    coarse = _timed(phases, "aggregate", lambda: coarsen(fine))
    greedy = _timed(phases, "greedy", lambda: best_greedy(ctx))
    model, v = _timed(phases, "build", lambda: build_model(coarse))
    _timed(phases, "build", lambda: hint_from_plan(model, v, coarse, greedy))
    if ctx.options.export_model_path:
        model.export_to_file(ctx.options.export_model_path)
    admission = _timed(
        phases, "solve", lambda: solve_admission(model, v, coarse, start + ADMISSION_SHARE * limit)
    )
    plan: Plan | None = None
    if admission.found:
        plan = _pack_and_materialize(ctx, fine, coarse, model, v, admission, start + limit, phases)
    if plan is None or admission_key(plan) < admission_key(greedy):
        why = "no CP-SAT solution in time" if plan is None else "CP-SAT admits less than greedy"
        log.warning("falling back to the greedy plan: %s", why)
        greedy = greedy_plan(ctx, greedy.solver.name)
        plan = greedy.model_copy(
            update={
                "solver": SolverReport(
                    name="cpsat",
                    status="FALLBACK",
                    objective=greedy.solver.objective,
                    bound=max(admission.bound, greedy.solver.objective),
                    notes=[why, *admission.notes],
                )
            }
        )
    if ctx.options.check:
        violations = _timed(
            phases, "check", lambda: check(plan, ctx.snapshot, ctx.jobsets_given, ctx.options)
        )
        if violations:
            raise AssertionError("cpsat produced an invalid plan: " + "; ".join(violations[:5]))
    return plan


def _pack_and_materialize(
    ctx: PlacementContext,
    fine: AggregatedProblem,
    coarse: AggregatedProblem,
    model: cp_model.CpModel,
    v: Variables,
    admission: SolveResult,
    deadline: float,
    phases: dict[str, float],
) -> Plan | None:
    """Packing on the fine classes with admissions fixed; if it finds nothing in time, the
    admission solution itself is materialized (valid, just not best-packed)."""
    admitted = {key: admission.values[x.name] for key, x in v.admit.items()}
    report = SolverReport(
        name="cpsat",
        status="OPTIMAL" if admission.optimal else "FEASIBLE",
        objective=admission.objective,
        bound=admission.bound,
        notes=list(admission.notes),
    )
    if fine is coarse:
        start_from = chosen_from_values(coarse, v, admission.values)
    else:
        start_from = _timed(
            phases, "solve", lambda: spread_counts(fine, coarse, v, admission.values)
        )
        size = sum(len(fine.classes_for(jc)) for jc in fine.exclusive)
        if size > PACKING_MODEL_LIMIT:
            note = (
                f"packing: {size} (child-Job class, domain class) pairs exceed "
                f"{PACKING_MODEL_LIMIT}; spread heuristically, not optimized"
            )
            report = report.model_copy(
                update={"status": "FEASIBLE", "notes": [*report.notes, note]}
            )
            return _timed(phases, "materialize", lambda: materialize(ctx, fine, start_from, report))

    def pack() -> tuple[Chosen, SolveResult]:
        if fine is coarse:
            fine_model, fv = model, v
        else:
            fine_model, fv = build_model(fine)
            hint_from_chosen(fine_model, fv, fine, start_from)
        budget = max(1.0, PACKING_SHARE * ctx.options.time_limit_s)
        now = time.perf_counter()
        search_deadline = max(min(deadline, now + budget), now + 0.5)
        packing = solve_packing(fine_model, fv, fine, search_deadline, admitted)
        if admission.optimal:
            packing = canonicalize(fine_model, fv, fine, search_deadline + 0.5, packing)
        if not packing.found:
            return start_from, packing
        return chosen_from_values(fine, fv, packing.values), packing

    chosen, packing = _timed(phases, "solve", pack)
    report = report.model_copy(
        update={
            "status": report.status if packing.optimal else "FEASIBLE",
            "notes": [*report.notes, *packing.notes],
        }
    )
    return _timed(phases, "materialize", lambda: materialize(ctx, fine, chosen, report))


def best_greedy(ctx: PlacementContext) -> Plan:
    """The better all-or-nothing greedy plan, without reasons (it is a hint, rarely shown)."""
    plans = [greedy_plan(ctx, policy, explain=False) for policy in ("best-fit", "largest-first")]
    return max(plans, key=admission_key)


def admission_key(plan: Plan) -> tuple[int, ...]:
    """Lexicographic admission: accelerator units placed per priority tier, highest tier first."""
    per_tier: dict[int, int] = {}
    for o in plan.jobsets:
        per_tier.setdefault(o.priority, 0)
        if o.status == "placed":
            per_tier[o.priority] += o.accelerators
    return tuple(per_tier[p] for p in sorted(per_tier, reverse=True))
