"""Phase "materialize": class counts become concrete domains and nodes, through the greedy ledger.

Members of a class are interchangeable, so each class hands out its domains in path order; child
Job indices follow that order, so consecutive child Jobs sit next to each other. Pods go to nodes
through the same `Ledger` the greedy baselines use.
"""

from __future__ import annotations

from placer.model.plan import JobPlacement, JobSetOutcome, Plan, SolverReport
from placer.solver.context import PlacementContext
from placer.solver.cpsat.aggregate import AggregatedProblem
from placer.solver.cpsat.variables import Variables
from placer.solver.ledger import Ledger
from placer.solver.reasons import unschedulable_reason

__all__ = ["materialize"]


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


def _exclusive_jobs(
    ledger: Ledger,
    problem: AggregatedProblem,
    v: Variables,
    values: dict[str, int],
    key: str,
    next_member: dict[str, int],
) -> list[JobPlacement] | None:
    jobs: list[JobPlacement] = []
    for jc in [c for c in problem.exclusive if c.jobset.key == key]:
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
    return jobs


def materialize(
    ctx: PlacementContext,
    problem: AggregatedProblem,
    v: Variables,
    values: dict[str, int],
    report: SolverReport,
) -> Plan | None:
    """The plan for a solution; None when the relaxed shared-pod room does not pack onto real
    nodes (the caller then falls back to greedy)."""
    ledger = Ledger(ctx)
    next_member: dict[str, int] = {}
    placements: dict[str, list[JobPlacement]] = {}
    for js in ctx.jobsets:
        if values.get(v.admit[js.key].name, 0):
            jobs = _exclusive_jobs(ledger, problem, v, values, js.key, next_member)
            if jobs is None:
                return None
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
    taken, shared = ledger.taken_by(), ledger.shared_by()
    outcomes: dict[str, JobSetOutcome] = {}
    for js in ctx.jobsets:
        if js.key in placements:
            order = {name: i for i, (_, _, name) in enumerate(js.child_jobs())}
            outcomes[js.key] = JobSetOutcome(
                namespace=js.namespace,
                name=js.name,
                status="placed",
                priority=js.priority,
                accelerators=js.accelerator_units,
                jobs=sorted(placements[js.key], key=lambda j: order[j.name]),
            )
        else:
            reason = problem.impossible.get(js.key) or unschedulable_reason(
                ctx, js, taken, shared=shared
            )
            outcomes[js.key] = JobSetOutcome(
                namespace=js.namespace,
                name=js.name,
                status="unschedulable",
                reason=reason,
                priority=js.priority,
            )
    objective = sum(o.accelerators for o in outcomes.values() if o.status == "placed")
    bound = max(report.bound, objective)
    final = report.model_copy(
        update={"objective": objective, "bound": bound, "gap": (bound - objective) / max(bound, 1)}
    )
    return Plan(solver=final, jobsets=[outcomes[j.key] for j in ctx.jobsets_given])
