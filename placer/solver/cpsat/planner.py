"""The CP-SAT planner: plans every pending JobSet at once, never worse than the best greedy plan.

Phases, each one function, timed into `SolverReport.phases` (`placer.solver.phases`):
  snapshot     facts every solver shares (queue order, domains, who fits where); with
               preemption, the victim candidates and the cluster without them (preemption.py)
  aggregate    fold interchangeable child Jobs and domains into classes (and a coarser admission
               view when locality does not constrain admission)
  greedy       best-fit and largest-first plans; the better one hints CP-SAT and is the fallback
  build        the one model builder (builder.py): variables, then the rules, one family per call
  solve        admission per priority tier, then packing (best fit, locality); see solve.py
  materialize  class counts -> concrete domains and nodes, through the ledger greedy uses (with
               preemption: on the cluster without the chosen victims; who preempts whom)
  check        the independent plan checker; a plan that fails it is never returned (run by
               the wrapper `registry.get_solver` puts around every solver, so once per plan)

The time limit (`SolveOptions.time_limit_s`, `--time-limit`) is a wall-clock budget for the whole
`solve` call, counted from its start: snapshot, aggregation, greedy and model building use it up
before any search does. Admission searches until `ADMISSION_SHARE` of it has passed, packing and
the tie-break until all of it has; a stage with no time left is not searched (its note says so).
Materializing and checking the plan found still run after the budget, taking what they take
(typically well under a second).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass

from placer.model.cluster import ClusterSnapshot
from placer.model.errors import PlacerError
from placer.model.options import SolveOptions
from placer.model.plan import Plan, SolverReport, relative_gap
from placer.model.workload import JobSetRequest
from placer.solver.context import PlacementContext
from placer.solver.cpsat.aggregate import aggregate
from placer.solver.cpsat.builder import BuiltModel, build_model
from placer.solver.cpsat.coarsen import coarsen
from placer.solver.cpsat.export import check_export_path
from placer.solver.cpsat.hints import complete, solution_from_plan, spread_counts
from placer.solver.cpsat.preemption import (
    evicting_context,
    greedy_context,
    materialize_evicting,
    stay_put,
)
from placer.solver.cpsat.problem import AggregatedProblem
from placer.solver.cpsat.solution import Solution
from placer.solver.cpsat.solve import (
    NOT_SEARCHED,
    SolveResult,
    StageRunner,
    canonicalize,
    solve_admission,
    solve_packing,
)
from placer.solver.greedy.baselines import greedy_plan
from placer.solver.phases import PhaseTimer

__all__ = [
    "ADMISSION_SHARE",
    "PACKING_SHARE",
    "Budget",
    "CpSatSolver",
    "admission_key",
    "best_greedy",
    "plan_with_context",
]

log = logging.getLogger(__name__)

ADMISSION_SHARE = 0.75
"""Share of the time limit admission may use; packing gets the rest (admission matters more)."""
PACKING_MODEL_LIMIT = 15_000
"""Above this many (child-Job class, domain class) pairs the packing model takes longer to build
and presolve than it can gain; the admission solution is then spread heuristically."""
PACKING_SHARE = 0.2
"""Packing (best fit, locality) searches for at most this share of the time limit (at least 1 s,
never past the budget): at fleet scale it is rarely proven and improves slowly after the first
seconds."""
CANONICAL_S = 0.5
"""The single-worker tie-break may search this long past packing's own deadline (within budget)."""


@dataclass(frozen=True)
class Budget:
    """The time limit as deadlines on the `time.perf_counter` clock, all counted from one start:
    the whole solve's (`end`), admission's, and packing's and the tie-break's, which also depend
    on when packing starts. Derived here only, so every stage reads the same budget."""

    started: float
    limit_s: float

    @property
    def end(self) -> float:
        return self.started + self.limit_s

    @property
    def admission(self) -> float:
        """Admission searches until `ADMISSION_SHARE` of the limit has passed."""
        return self.started + ADMISSION_SHARE * self.limit_s

    def packing(self, now: float) -> float:
        """Packing, starting `now`, searches `PACKING_SHARE` of the limit (at least 1 s), never
        past the end."""
        return min(self.end, now + max(1.0, PACKING_SHARE * self.limit_s))

    def tie_break(self, packing: float) -> float:
        """The tie-break may search `CANONICAL_S` past packing's deadline, never past the end."""
        return min(self.end, packing + CANONICAL_S)


_CPSAT_ERRORS = (OverflowError, TypeError, ValueError, RuntimeError)
"""What OR-Tools raises on a model it cannot represent (coefficients beyond 64 bits, say): named
in the report's notes, and the greedy plan is returned."""


class CpSatSolver:
    name = "cpsat"

    def solve(
        self, snapshot: ClusterSnapshot, jobsets: Sequence[JobSetRequest], options: SolveOptions
    ) -> Plan:
        timer = PhaseTimer()
        started = time.perf_counter()
        if options.export_model_path:
            check_export_path(options.export_model_path)
        with timer("snapshot"):
            ctx = snapshot_phase(snapshot, jobsets, options)
        plan = plan_with_context(ctx, timer, started=started)
        return plan.model_copy(
            update={
                "solver": plan.solver.model_copy(
                    update={"wall_seconds": time.perf_counter() - started, "phases": timer.seconds}
                )
            }
        )


def snapshot_phase(
    snapshot: ClusterSnapshot, jobsets: Sequence[JobSetRequest], options: SolveOptions
) -> PlacementContext:
    ctx = PlacementContext(snapshot, jobsets, options)
    _ = ctx.topology, ctx.exclusive_domains, ctx.held_by
    return ctx


def plan_with_context(
    ctx: PlacementContext, timer: PhaseTimer | None = None, *, started: float | None = None
) -> Plan:
    """Plan with the budget counted from `started` (default: now), phases timed into `timer`."""
    timer = timer or PhaseTimer()
    budget = Budget(time.perf_counter() if started is None else started, ctx.options.time_limit_s)
    runner = StageRunner(ctx.options)
    with timer("greedy"):
        greedy = stay_put(best_greedy(greedy_context(ctx)), ctx)
    with timer("snapshot"):
        model_ctx = evicting_context(ctx, greedy)
    with timer("aggregate"):
        fine = aggregate(model_ctx)
        coarse = coarsen(fine)
    plan: Plan | None = None
    try:
        with timer("build"):
            built = build_model(coarse)
            _hint_greedy(built, greedy)
        with timer("solve"):
            admission = solve_admission(built, runner, budget.admission)
        if admission.found:
            plan = _pack_and_materialize(model_ctx, fine, built, admission, runner, budget, timer)
    except PlacerError:
        raise
    except _CPSAT_ERRORS as e:
        log.debug("CP-SAT raised", exc_info=True)
        note = f"CP-SAT raised {type(e).__name__}: {' '.join(str(e).split())[:200]}"
        admission = SolveResult(optimal=False, notes=(note,), failure="EXCEPTION")
    if plan is None or admission_key(plan) < admission_key(greedy):
        why = _fallback_reason(plan, admission)
        log.warning("falling back to the greedy plan: %s", why)
        greedy = stay_put(
            greedy_plan(greedy_context(ctx), greedy.solver.name, explain=ctx.options.reasons), ctx
        )
        objective = greedy.solver.objective
        plan = greedy.model_copy(
            update={
                "solver": SolverReport(
                    name="cpsat",
                    status="FALLBACK",
                    objective=objective,
                    bound=admission.bound,
                    gap=relative_gap(objective, admission.bound),
                    notes=[why, *admission.notes],
                )
            }
        )
    return plan


def _hint_greedy(built: BuiltModel, greedy: Plan) -> None:
    solution_from_plan(built.variables, built.problem, greedy).hint(built.model, built.variables)


def _fallback_reason(plan: Plan | None, admission: SolveResult) -> str:
    """Why the greedy plan is returned, naming what CP-SAT said."""
    if plan is not None:
        return "CP-SAT admits less than greedy"
    if admission.found:
        return "the CP-SAT solution did not pack onto nodes"
    if admission.failure == "MODEL_INVALID":
        return "CP-SAT rejected the model or its parameters (MODEL_INVALID)"
    if admission.failure == "EXCEPTION":
        return "CP-SAT raised an exception building or solving the model"
    if admission.failure in ("UNKNOWN", NOT_SEARCHED):
        return "no CP-SAT solution within the time limit"
    return f"CP-SAT found no solution ({admission.failure})"


def _pack_and_materialize(
    ctx: PlacementContext,
    fine: AggregatedProblem,
    built: BuiltModel,
    admission: SolveResult,
    runner: StageRunner,
    budget: Budget,
    timer: PhaseTimer,
) -> Plan | None:
    """Packing on the fine classes with admissions fixed; if it finds nothing in time, the
    admission solution itself is materialized (valid, just not best-packed)."""
    solved = admission.solution
    assert solved is not None
    coarse = built.problem
    report = SolverReport(
        name="cpsat",
        status="OPTIMAL" if admission.optimal else "FEASIBLE",
        objective=admission.objective,
        bound=admission.bound,
        notes=list(admission.notes),
    )
    start_from = solved
    if fine is not coarse:
        with timer("solve"):
            start_from = spread_counts(fine, coarse, solved)
        size = sum(len(fine.classes_for(jc)) for jc in fine.exclusive)
        if size > PACKING_MODEL_LIMIT:
            note = (
                f"packing: {size} (child-Job class, domain class) pairs exceed "
                f"{PACKING_MODEL_LIMIT}; spread heuristically, not optimized"
            )
            report = report.model_copy(
                update={"status": "FEASIBLE", "notes": [*report.notes, note]}
            )
            with timer("materialize"):
                return materialize_evicting(ctx, fine, start_from, report)

    def pack() -> tuple[Solution, SolveResult]:
        if fine is coarse:
            fine_built = built
        else:
            fine_built = build_model(fine)
            complete(fine_built.variables, fine, start_from).hint(
                fine_built.model, fine_built.variables
            )
        packing_deadline = budget.packing(time.perf_counter())
        packing = solve_packing(
            fine_built, runner, packing_deadline, solved.admitted, solved.evicted
        )
        if admission.optimal:
            packing = canonicalize(fine_built, runner, budget.tie_break(packing_deadline), packing)
        found = start_from if packing.solution is None else packing.solution
        return found, packing

    with timer("solve"):
        chosen, packing = pack()
    report = report.model_copy(
        update={
            "status": report.status if packing.optimal else "FEASIBLE",
            "notes": [*report.notes, *packing.notes],
        }
    )
    with timer("materialize"):
        return materialize_evicting(ctx, fine, chosen, report)


def best_greedy(ctx: PlacementContext) -> Plan:
    """The better all-or-nothing greedy plan, without reasons (it is a hint, rarely shown)."""
    plans = [greedy_plan(ctx, policy, explain=False) for policy in ("best-fit", "largest-first")]
    return max(plans, key=admission_key)


def admission_key(plan: Plan) -> tuple[int, ...]:
    """Lexicographic admission: accelerator units placed per priority tier, highest tier first
    (a running JobSet a defrag plan moves is no admission)."""
    per_tier: dict[int, int] = {}
    moved = {p.key for p in plan.preempted}
    for o in plan.jobsets:
        per_tier.setdefault(o.priority, 0)
        if o.status == "placed" and o.key not in moved:
            per_tier[o.priority] += o.accelerators
    return tuple(per_tier[p] for p in sorted(per_tier, reverse=True))
