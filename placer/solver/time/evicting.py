"""Time-aware planning with preemption: who is evicted is decided first, then when the rest start.

The reservation pass dates every domain by when its running JobSet is expected to end; a victim
ends now instead. Deciding both in one pass would mean a release timeline that changes with every
eviction considered, so the round is split in the order the decisions depend on each other:

  evict     the inner planner plans the queue now with preemption on, on the cluster as it is,
            with only other controllers' reservations in the way (this queue's reservations are
            what this round recomputes: a low-priority JobSet's reservation must not steer a
            preemptor onto costlier victims);
  plan      nobody evicted: the ordinary time-aware round, preemption off. Otherwise the
            time-aware round runs, preemption off, on the cluster without those victims, so the
            reservations and backfill see their domains free now;
  keep      a victim stays evicted only if some JobSet that may evict it (`Victims.can_evict`)
            starts now on its nodes, and nobody who may not does; else the round runs again
            without that victim (the set only shrinks, so this ends), and an eviction nobody
            uses never happens;
  say       the plan names who preempts whom, with the cost, as the planner's own plan does; the
            checker judges it on the cluster before any eviction.

The cost: one more solve per round when preemption is on and someone could be evicted, and one
more per victim dropped (rare: the preemptor that chose a victim is among the first in the queue
order once its domains are free).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from placer.model.cluster import ClusterSnapshot
from placer.model.options import SolveOptions
from placer.model.plan import Plan
from placer.model.preemption import PreemptionPolicy
from placer.model.whatif import without_jobsets
from placer.model.workload import JobSetRequest
from placer.solver.preempt import Victims, attribute_preemptions, find_victims
from placer.solver.preempt.attribute import nodes_by_label, nodes_used
from placer.solver.preempt.wait import waits_longer_than

__all__ = ["plan_evicting_first"]

PlanRound = Callable[[ClusterSnapshot, Sequence[JobSetRequest], SolveOptions], Plan]
"""One time-aware round (`TimeAwareSolver.solve`) or the inner planner's solve."""


def plan_evicting_first(
    snapshot: ClusterSnapshot,
    jobsets: Sequence[JobSetRequest],
    options: SolveOptions,
    *,
    evict: PlanRound,
    plan_round: PlanRound,
) -> Plan:
    """The round with preemption: `evict` is the inner planner (preemption on, no time), and
    `plan_round` the time-aware round, called with preemption off."""
    quiet = options.model_copy(update={"preemption": PreemptionPolicy(mode="none")})
    queued = {js.key for js in jobsets}
    now_only = snapshot.model_copy(
        update={"reservations": tuple(r for r in snapshot.reservations if r.jobset not in queued)}
    )
    # every candidate, uncapped: the planner offers its own (capped) set, and whichever of
    # those it evicts must be named here
    waits = waits_longer_than(now_only, options)
    victims = find_victims(now_only, jobsets, options, waits, most=0)
    if victims is None:
        return plan_round(snapshot, jobsets, quiet)
    started = time.perf_counter()
    # only whom it evicts is read: its reasons would be dropped (`SolveOptions.reasons`)
    unexplained = options.model_copy(update={"reasons": False})
    chosen = {p.key for p in evict(now_only, jobsets, unexplained).preempted}
    evict_s = time.perf_counter() - started
    while chosen:
        freed, _, _ = without_jobsets(snapshot, chosen)
        plan = plan_round(freed, jobsets, quiet)
        kept = _used_rightly(plan, snapshot, victims.only(sorted(chosen)))
        if kept == chosen:
            said = attribute_preemptions(plan, snapshot, victims.only(sorted(chosen)))
            report = said.solver.model_copy(
                update={
                    "phases": {"evict": evict_s, **said.solver.phases},
                    "wall_seconds": time.perf_counter() - started,
                    "notes": [*said.solver.notes, _note(said)],
                }
            )
            return said.model_copy(update={"solver": report})
        chosen = kept
    return plan_round(snapshot, jobsets, quiet)


def _used_rightly(plan: Plan, snapshot: ClusterSnapshot, victims: Victims) -> set[str]:
    """The victims some placed JobSet that may evict them uses, and nobody else uses."""
    by_label = nodes_by_label(snapshot, plan)
    users: dict[str, set[str]] = {}
    for o in plan.jobsets:
        if o.status != "placed":
            continue
        for n in nodes_used(o, by_label):
            for v in victims.on_node.get(n, ()):
                users.setdefault(v, set()).add(o.key)
    return {
        v for v, who in users.items() if who and all(victims.can_evict(user, v) for user in who)
    }


def _note(plan: Plan) -> str:
    names = ", ".join(p.key for p in plan.preempted)
    return f"preemption decided before reservations: evicting {names}; reserved on the rest"
