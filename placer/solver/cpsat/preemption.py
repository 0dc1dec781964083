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

from placer.model.plan import Plan, SolverReport
from placer.model.whatif import without_jobsets
from placer.solver.context import PlacementContext
from placer.solver.cpsat.materialize import materialize
from placer.solver.cpsat.problem import AggregatedProblem
from placer.solver.cpsat.solution import Solution
from placer.solver.preempt import attribute_preemptions, find_victims
from placer.solver.preempt.wait import waits_longer_than

__all__ = ["evicting_context", "materialize_evicting"]


def evicting_context(ctx: PlacementContext) -> PlacementContext:
    """The context the model is built on: `ctx` itself when preemption is off or nobody could
    be evicted, else the cluster without every candidate, which `victims` names."""
    if ctx.victims is not None or not ctx.options.preemption.active:
        return ctx
    waits = waits_longer_than(ctx.snapshot, ctx.options)
    victims = find_victims(ctx.snapshot, ctx.jobsets, ctx.options, waits)
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
    return None if plan is None else attribute_preemptions(plan, victims.snapshot, chosen)
