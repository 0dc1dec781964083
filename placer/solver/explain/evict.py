"""The preemption and defrag remedies: whose eviction, or whose move, starts a JobSet now.

Asked of the CP-SAT planner itself with `--preemption lower-priority` (whatever the user's flag),
so the answer obeys every protection rule (`placer.solver.preempt`) and weighs victims by their
eviction cost, as `placer plan --preemption lower-priority` would: "evicting X (3.1 chip-hours
lost) starts it now". The defrag remedy asks `placer defrag`'s question when running JobSets
are given among the JobSets (their manifests say how to move them): "moving Y to pool-7 starts it
now". One re-plan each, counted against the remedy search's budget.
"""

from __future__ import annotations

from placer.model.plan import JobSetOutcome, Plan, eviction_text
from placer.model.preemption import PreemptionMode, PreemptionPolicy
from placer.solver.explain.replanner import Replanner
from placer.solver.explain.result import Remedy
from placer.solver.registry import get_solver

__all__ = ["eviction_remedy", "move_remedy"]


def _replan(rp: Replanner, key: str, mode: PreemptionMode) -> tuple[Plan, JobSetOutcome] | None:
    """One re-plan with CP-SAT under preemption `mode` (the user's restart cost kept): the plan
    and JobSet `key`'s outcome when that places it by evicting or moving someone; None when it
    does not, or the budget is spent."""
    policy = PreemptionPolicy(mode=mode, restart_cost_s=rp.options.preemption.restart_cost_s)
    options = rp.options.model_copy(
        update={"export_model_path": None, "preemption": policy, "reasons": False}
    )
    if not rp.spend():
        return None
    # with time-aware planning the eviction is judged as `placer plan` would (evictions first,
    # then reservations: placer.solver.time.evicting); defrag moves are judged now only
    timed = options.time if mode == "lower-priority" else None
    plan = get_solver("cpsat", time_policy=timed).solve(rp.snapshot, rp.jobsets, options)
    outcome = plan.outcome(key)
    if outcome.status != "placed" or not outcome.preempts:
        return None
    return plan, outcome


def eviction_remedy(rp: Replanner, key: str) -> Remedy | None:
    """The victims the planner with preemption picks for JobSet `key`, when that places it;
    None when nothing it may evict frees enough, or the re-plan budget is spent."""
    found = _replan(rp, key, "lower-priority")
    if found is None:
        return None
    plan, outcome = found
    victims = [p for p in plan.preempted if p.key in outcome.preempts]
    return Remedy(
        kind="preempt",
        text=f"{eviction_text(victims)} starts it now",
        change={"remove_running": list(outcome.preempts)},
        verified=True,
        jobs=list(outcome.jobs),
    )


def move_remedy(rp: Replanner, key: str) -> Remedy | None:
    """The fewest, cheapest moves of given running JobSets that place JobSet `key`, when that
    places it (as `placer defrag` would); None otherwise or when no given JobSet runs."""
    running = {k for n in rp.snapshot.nodes for k in n.jobsets}
    if rp.options.time.active or not any(js.key in running for js in rp.jobsets):
        return None
    found = _replan(rp, key, "defrag")
    if found is None:
        return None
    plan, outcome = found
    parts = []
    for moved in outcome.preempts:
        to = sorted({j.domain.value for j in plan.outcome(moved).jobs if j.domain is not None})
        parts.append(f"{moved} to {','.join(to) or 'other nodes'}")
    return Remedy(
        kind="move",
        text=f"moving {' and '.join(parts)} starts it now",
        change={"move_running": list(outcome.preempts)},
        verified=True,
        jobs=list(outcome.jobs),
    )
