"""The CP-SAT planner: plans every pending JobSet at once, never worse than the best greedy plan.

Phases, each one function below, timed into `SolverReport.phases`:
  snapshot     facts every solver shares (queue order, domains, who fits where)
  aggregate    fold interchangeable child Jobs and domains into classes
  greedy       best-fit and largest-first plans; the better one hints CP-SAT and is the fallback
  build        variables, then the rules, one constraint family per call
  solve        lexicographic: each priority tier's admitted accelerators, queue order, packing
  materialize  class counts -> concrete domains and nodes, through the same ledger greedy uses
  check        the independent plan checker; a plan that fails it is never returned
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from ortools.sat.python import cp_model

from placer.model.cluster import ClusterSnapshot
from placer.model.options import SolveOptions
from placer.model.plan import JobPlacement, JobSetOutcome, Plan, SolverReport
from placer.model.workload import JobSetRequest
from placer.solver.checker import check
from placer.solver.context import PlacementContext
from placer.solver.cpsat import constraints, objectives
from placer.solver.cpsat.aggregate import AggregatedProblem, aggregate
from placer.solver.cpsat.variables import Variables, create_variables
from placer.solver.greedy import greedy_plan
from placer.solver.ledger import Ledger
from placer.solver.reasons import unschedulable_reason

__all__ = ["CpSatSolver", "build_model", "plan_with_context"]

log = logging.getLogger(__name__)
T = TypeVar("T")


class CpSatSolver:
    name = "cpsat"

    def solve(
        self, snapshot: ClusterSnapshot, jobsets: Sequence[JobSetRequest], options: SolveOptions
    ) -> Plan:
        phases: dict[str, float] = {}
        started = time.perf_counter()
        ctx = _timed(phases, "snapshot", lambda: _snapshot(snapshot, jobsets, options))
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


def _snapshot(
    snapshot: ClusterSnapshot, jobsets: Sequence[JobSetRequest], options: SolveOptions
) -> PlacementContext:
    ctx = PlacementContext(snapshot, jobsets, options)
    _ = ctx.topology, ctx.exclusive_domains, ctx.held_by
    return ctx


@dataclass
class StageResult:
    values: dict[str, int] = field(default_factory=dict)
    """Variable name -> value of the last stage's best solution."""
    optimal: bool = True
    found: bool = False
    objective: float = 0
    bound: float = 0
    notes: list[str] = field(default_factory=list)


def plan_with_context(ctx: PlacementContext, phases: dict[str, float] | None = None) -> Plan:
    phases = phases if phases is not None else {}
    deadline = time.perf_counter() + ctx.options.time_limit_s
    problem = _timed(phases, "aggregate", lambda: aggregate(ctx))
    greedy = _timed(phases, "greedy", lambda: _best_greedy(ctx))
    model, v = _timed(phases, "build", lambda: build_model(problem))
    _timed(phases, "build", lambda: _hint_from_plan(model, v, problem, greedy))
    if ctx.options.export_model_path:
        model.export_to_file(ctx.options.export_model_path)
    result = _timed(phases, "solve", lambda: solve_lexicographic(model, v, problem, deadline))
    plan = _timed(phases, "materialize", lambda: materialize(ctx, problem, v, result))
    if plan is None or _admission_key(plan) < _admission_key(greedy):
        why = "no CP-SAT solution" if plan is None else "CP-SAT plan admits less than greedy"
        log.warning("falling back to the greedy plan: %s", why)
        plan = greedy.model_copy(
            update={
                "solver": SolverReport(
                    name="cpsat",
                    status="FALLBACK",
                    objective=greedy.solver.objective,
                    bound=max(result.bound, greedy.solver.objective),
                    notes=[why],
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


def _best_greedy(ctx: PlacementContext) -> Plan:
    plans = [greedy_plan(ctx, policy) for policy in ("best-fit", "largest-first")]
    return max(plans, key=_admission_key)


def _admission_key(plan: Plan) -> tuple[int, ...]:
    """Lexicographic admission: accelerator units placed per priority tier, highest tier first."""
    per_tier: dict[int, int] = {}
    for o in plan.jobsets:
        per_tier.setdefault(o.priority, 0)
        if o.status == "placed":
            per_tier[o.priority] += o.accelerators
    return tuple(per_tier[p] for p in sorted(per_tier, reverse=True))


def build_model(problem: AggregatedProblem) -> tuple[cp_model.CpModel, Variables]:
    """The model as a list of rules; the objective is set per stage by `solve_lexicographic`."""
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


def _hint_from_plan(
    model: cp_model.CpModel, v: Variables, problem: AggregatedProblem, plan: Plan
) -> None:
    """A complete hint for admissions and domain counts from the greedy plan."""
    class_of = {(d.key, d.path): c.id for c in problem.domain_classes for d in c.members}
    rjob_class = {(jc.jobset.key, jc.rjob.name): jc.index for jc in problem.exclusive}
    counts: dict[tuple[int, str], int] = dict.fromkeys(v.count, 0)
    for o in plan.jobsets:
        if o.key in v.admit:
            model.add_hint(v.admit[o.key], o.status == "placed")
        if o.status != "placed":
            continue
        for j in o.jobs:
            if j.domain is None:
                continue
            cid = class_of.get((j.domain.key, tuple(tuple(p) for p in j.domain.path)))
            jc = rjob_class.get((o.key, j.replicated_job))
            if cid is not None and jc is not None and (jc, cid) in counts:
                counts[(jc, cid)] += 1
    for k, x in v.count.items():
        model.add_hint(x, counts[k])


def _all_vars(v: Variables) -> list[cp_model.IntVar]:
    return [
        *v.admit.values(),
        *v.count.values(),
        *v.shared_in_class.values(),
        *v.shared_in_group.values(),
        *v.local.values(),
        *v.span.values(),
    ]


def _parameters(solver: cp_model.CpSolver, problem: AggregatedProblem, time_left_s: float) -> None:
    """All solver parameters, set in one place. Interleaved search keeps results reproducible."""
    options = problem.ctx.options
    solver.parameters.max_time_in_seconds = max(0.05, time_left_s)
    solver.parameters.num_workers = options.workers or 8
    solver.parameters.interleave_search = True
    solver.parameters.random_seed = options.seed


def solve_lexicographic(
    model: cp_model.CpModel, v: Variables, problem: AggregatedProblem, deadline: float
) -> StageResult:
    stages: list[tuple[str, cp_model.LinearExpr, bool]] = [
        (f"tier {t}", objectives.admitted_units(v, problem, t), True)
        for t in objectives.tiers(problem)
    ]
    stages.append(("queue order", objectives.queue_preference(v, problem), True))
    stages.append(("packing", objectives.packing_cost(v, problem), False))
    result = StageResult()
    variables = _all_vars(v)
    for index, (name, expr, maximize) in enumerate(stages):
        if maximize:
            model.maximize(expr)
        else:
            model.minimize(expr)
        solver = cp_model.CpSolver()
        _parameters(solver, problem, deadline - time.perf_counter())
        status = solver.solve(model)
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            result.notes.append(f"{name}: {solver.status_name(status)}")
            if not result.found:
                return result
            result.optimal = False
            break
        result.found = True
        value = round(solver.objective_value)
        bound = round(solver.best_objective_bound)
        if status != cp_model.OPTIMAL:
            result.optimal = False
            result.notes.append(f"{name}: FEASIBLE, objective {value}, bound {bound}")
        if name.startswith("tier"):
            result.objective += value
            result.bound += bound
        result.values = {x.name: solver.value(x) for x in variables}
        if index + 1 < len(stages):
            model.add(expr >= value if maximize else expr <= value)
            model.clear_hints()
            for x in variables:
                model.add_hint(x, result.values[x.name])
    return result


def _chosen_enclosing(
    ctx: PlacementContext, v: Variables, values: dict[str, int], jc_index: int, level: str | None
) -> tuple[str, ...] | None:
    """Nodes of the `level` domain the solver chose for a shared JobClass that must stay in one."""
    if level is None:
        return None
    for (i, lv, parent), x in v.local.items():
        if i == jc_index and lv == level and values.get(x.name):
            for d in ctx.domains(level):
                if "/".join(val for _, val in d.path) == parent:
                    return d.nodes
    return None


def materialize(
    ctx: PlacementContext, problem: AggregatedProblem, v: Variables, result: StageResult
) -> Plan | None:
    """Concrete domains (members of each class in path order) and nodes for every admitted JobSet.

    Returns None when the relaxed shared-pod capacity does not pack onto real nodes; the caller then
    falls back to greedy.
    """
    if not result.found:
        return None
    values = result.values
    ledger = Ledger(ctx)
    next_member: dict[str, int] = {}
    outcomes: dict[str, JobSetOutcome] = {}
    placements: dict[str, list[JobPlacement]] = {}
    for js in ctx.jobsets:
        if not values.get(v.admit[js.key].name, 0):
            continue
        jobs: list[JobPlacement] = []
        for jc in [c for c in problem.exclusive if c.jobset.key == js.key]:
            job_index = 0
            for c in problem.classes_for(jc):
                for _ in range(values[v.count[(jc.index, c.id)].name]):
                    placed = None
                    while placed is None and next_member.get(c.id, 0) < c.size:
                        domain = c.members[next_member.get(c.id, 0)]
                        next_member[c.id] = next_member.get(c.id, 0) + 1
                        placed = ledger.take_domain(jc, job_index, domain)
                    if placed is None:
                        return None
                    jobs.append(placed)
                    job_index += 1
        placements[js.key] = jobs
    for js in ctx.jobsets:
        if js.key not in placements:
            continue
        for jc in [c for c in problem.shared if c.jobset.key == js.key]:
            within = _chosen_enclosing(ctx, v, values, jc.index, jc.rjob.required_topology)
            for job_index in range(jc.rjob.replicas):
                placed = ledger.place_shared(jc, job_index, within)
                if placed is None:
                    return None
                placements[js.key].append(placed)
    taken = ledger.taken_by()
    for js in ctx.jobsets:
        if js.key in placements:
            order = {name: i for i, (_, _, name) in enumerate(js.child_jobs())}
            jobs = sorted(placements[js.key], key=lambda j: order[j.name])
            outcomes[js.key] = JobSetOutcome(
                namespace=js.namespace,
                name=js.name,
                status="placed",
                priority=js.priority,
                accelerators=js.accelerator_units,
                jobs=jobs,
            )
        else:
            reason = problem.impossible.get(js.key) or unschedulable_reason(ctx, js, taken)
            outcomes[js.key] = JobSetOutcome(
                namespace=js.namespace,
                name=js.name,
                status="unschedulable",
                reason=reason,
                priority=js.priority,
            )
    objective = sum(o.accelerators for o in outcomes.values())
    report = SolverReport(
        name="cpsat",
        status="OPTIMAL" if result.optimal else "FEASIBLE",
        objective=objective,
        bound=max(result.bound, objective),
        gap=(max(result.bound, objective) - objective) / max(result.bound, 1),
        notes=result.notes,
    )
    given = [outcomes[j.key] for j in ctx.jobsets_given]
    return Plan(solver=report, jobsets=given)
