"""The planner with preemption: the model sees victims' domains as usable at a cost.

With `--preemption lower-priority`, phase "snapshot" finds the victim candidates
(`placer.solver.preempt.find_victims`) and the model is built on the cluster without them
(`evicting_context`): a domain they held opens to a JobSet that may evict every one of them, and
the model pays for each one it evicts (constraints.add_eviction, objectives.eviction_cost).
Phase "materialize" then places pods on the cluster without the victims the model chose only
(`materialize_evicting`), and says in the plan who preempts whom. The greedy hint and fallback
plan on the cluster as it is: greedy never preempts.
"""

from __future__ import annotations

from placer.model.plan import JobSetOutcome, Plan, SolverReport, relative_gap
from placer.model.preemption import NOT_MOVED
from placer.model.whatif import running_jobsets, without_jobsets
from placer.solver.context import PlacementContext
from placer.solver.cpsat.materialize import materialize
from placer.solver.cpsat.problem import AggregatedProblem
from placer.solver.cpsat.solution import Solution
from placer.solver.preempt import Victims, attribute_preemptions, find_victims
from placer.solver.preempt.wait import waits_longer_than

__all__ = ["evicting_context", "greedy_context", "materialize_evicting", "stay_put"]


def evicting_context(ctx: PlacementContext, greedy: Plan | None = None) -> PlacementContext:
    """The context the model is built on: `ctx` itself when preemption is off or nobody could
    be evicted, else the cluster without every candidate, which `victims` names. `greedy` is the
    plan without preemption: only a JobSet it leaves waiting needs room (`find_victims`)."""
    if ctx.victims is not None or not ctx.options.preemption.active:
        return ctx
    waits = waits_longer_than(ctx.snapshot, ctx.options)
    waiting = None if greedy is None else {o.key for o in greedy.jobsets if o.status != "placed"}
    victims = find_victims(ctx.snapshot, ctx.jobsets, ctx.options, waits, waiting)
    if victims is None:
        return ctx
    freed, _, _ = without_jobsets(ctx.snapshot, victims.candidates)
    return PlacementContext(freed, ctx.jobsets_given, ctx.options, victims=victims)


def materialize_evicting(
    ctx: PlacementContext, problem: AggregatedProblem, solution: Solution, report: SolverReport
) -> Plan | None:
    """`materialize` on the cluster without the victims the solution evicts (only those), then
    each placed JobSet's `preempts` and the victims' entries."""
    victims = ctx.victims
    if victims is None or victims.snapshot is None:
        return materialize(ctx, problem, solution, report)
    chosen = victims.only(sorted(solution.evicted))
    freed, _, _ = without_jobsets(victims.snapshot, chosen.candidates)
    settled = PlacementContext(freed, ctx.jobsets_given, ctx.options, victims=chosen)
    plan = materialize(settled, problem, solution, report)
    if plan is None:
        return None
    plan = attribute_preemptions(plan, victims.snapshot, chosen)
    if victims.left_out:
        note = (
            f"preemption: {len(victims.candidates)} cheapest candidates per accelerator offered, "
            f"{victims.left_out} costlier ones not"
        )
        plan = plan.model_copy(
            update={"solver": plan.solver.model_copy(update={"notes": [*plan.solver.notes, note]})}
        )
    if not victims.moves:
        return plan
    moved = {p.key for p in plan.preempted}
    objective = sum(
        o.accelerators for o in plan.jobsets if o.status == "placed" and o.key not in moved
    )
    solver = plan.solver.model_copy(
        update={"objective": objective, "gap": relative_gap(objective, plan.solver.bound)}
    )
    outcomes = [_unmoved(o, victims) for o in plan.jobsets]
    return plan.model_copy(update={"jobsets": outcomes, "solver": solver})


def _unmoved(o: JobSetOutcome, victims: Victims) -> JobSetOutcome:
    if o.status == "placed" or o.key not in victims.running:
        return o
    return o.model_copy(update={"reason": NOT_MOVED})


def greedy_context(ctx: PlacementContext) -> PlacementContext:
    """What greedy plans: `ctx`, except that defrag leaves out the running JobSets in the queue
    (greedy never moves anyone; it would place them a second time)."""
    if ctx.options.preemption.mode != "defrag":
        return ctx
    running = set(running_jobsets(ctx.snapshot))
    pending = [js for js in ctx.jobsets_given if js.key not in running]
    return PlacementContext(ctx.snapshot, pending, ctx.options)


def stay_put(plan: Plan, ctx: PlacementContext) -> Plan:
    """`plan` with an outcome for every JobSet of `ctx` it lacks (defrag: the running ones
    greedy left out, which stay where they run), in the order given."""
    have = {o.key: o for o in plan.jobsets}
    if len(have) == len(ctx.jobsets_given):
        return plan
    outcomes = [
        have.get(js.key)
        or JobSetOutcome(
            namespace=js.namespace,
            name=js.name,
            status="unschedulable",
            reason=NOT_MOVED,
            priority=js.priority,
        )
        for js in ctx.jobsets_given
    ]
    return plan.model_copy(update={"jobsets": outcomes})
