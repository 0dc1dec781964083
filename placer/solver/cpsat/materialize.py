"""Phase "materialize": class counts become concrete domains and nodes, through the greedy ledger.

Members of a class are interchangeable, so each class hands out its domains in path order; child
Job indices follow that order, so consecutive child Jobs sit next to each other. Pods go to nodes
through the same `Ledger` the greedy baselines use; the pods of a shared replicated job with Kueue
topology annotations are packed as Kueue TAS would inside the domain the model chose (fewest
domains per level, slices kept whole; `placer.solver.tas`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from placer.model.plan import JobPlacement, JobSetOutcome, Plan, SolverReport, relative_gap
from placer.model.workload import JobSetRequest
from placer.solver.context import PlacementContext
from placer.solver.cpsat.problem import AggregatedProblem
from placer.solver.cpsat.solution import Assignment
from placer.solver.ledger import Ledger
from placer.solver.reasons import Classifier, ReasonTally, jobset_reason, occupancy_of
from placer.solver.tas import TasTree, place_with_kueue

__all__ = ["Chosen", "chosen_from", "materialize"]


@dataclass(frozen=True)
class Chosen:
    """A solution in class terms, whatever produced it: what materialization needs."""

    admitted: frozenset[str]
    counts: Mapping[tuple[int, str], int]
    """(JobClass, DomainClass) -> child Jobs placed in domains of that class."""
    enclosing: Mapping[int, str] = field(default_factory=dict)
    """Shared JobClass with a required topology -> id of the domain chosen for its pods."""


def chosen_from(problem: AggregatedProblem, solved: Assignment) -> Chosen:
    """What to materialize from a solution of the model."""
    enclosing = {
        i: parent
        for (i, level, parent), x in solved.local.items()
        if x
        and problem.ctx.job_classes[i].rjob.required_topology == level
        and not problem.ctx.job_classes[i].exclusive_key
    }
    return Chosen(
        admitted=solved.admitted,
        counts={k: n for k, n in solved.count.items() if n},
        enclosing=enclosing,
    )


def _enclosing_nodes(
    ctx: PlacementContext, level: str | None, parent: str | None
) -> tuple[str, ...] | None:
    """Nodes of the `level` domain the solver chose for a shared JobClass that must stay in one."""
    if level is None or parent is None:
        return None
    for d in ctx.domains(level):
        if "/".join(val for _, val in d.path) == parent:
            return d.nodes
    return None


def _exclusive_jobs(
    ledger: Ledger,
    problem: AggregatedProblem,
    chosen: Chosen,
    jobset: JobSetRequest,
    next_member: dict[str, int],
) -> list[JobPlacement] | None:
    jobs: list[JobPlacement] = []
    for jc in [c for c in problem.ctx.classes_of(jobset) if c.exclusive_key]:
        job_index = 0
        for c in problem.classes_for(jc):
            for _ in range(chosen.counts.get((jc.index, c.id), 0)):
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
    ctx: PlacementContext, problem: AggregatedProblem, chosen: Chosen, report: SolverReport
) -> Plan | None:
    """The plan for a solution; None when the relaxed shared-pod room does not pack onto real
    nodes (the caller then falls back to greedy)."""
    ledger = Ledger(ctx)
    tree: TasTree | None = None
    next_member: dict[str, int] = {}
    placements: dict[str, list[JobPlacement]] = {}
    for js in ctx.jobsets:
        if js.key in chosen.admitted:
            jobs = _exclusive_jobs(ledger, problem, chosen, js, next_member)
            if jobs is None:
                return None
            placements[js.key] = jobs
    for js in ctx.jobsets:
        if js.key not in placements:
            continue
        for jc in [c for c in ctx.classes_of(js) if not c.exclusive_key]:
            within = _enclosing_nodes(
                ctx, jc.rjob.required_topology, chosen.enclosing.get(jc.index)
            )
            if jc.rjob.kueue_topology:
                if tree is None:
                    tree = TasTree(ctx.topology.levels, ctx.snapshot.nodes)
                kueue = place_with_kueue(ledger, tree, jc, within)
                if kueue is None and within is not None:
                    # the model's room is summed per class of nodes: when the chosen domain's
                    # pods do not pack onto its real nodes, Kueue's own choice among all does
                    kueue = place_with_kueue(ledger, tree, jc)
                if kueue is None:
                    return None
                placements[js.key].extend(kueue)
                continue
            for job_index in range(jc.rjob.replicas):
                placed = ledger.place_shared(jc, job_index, within)
                if placed is None:
                    return None
                placements[js.key].append(placed)
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
    classifier = Classifier(ctx, occupancy_of(ctx, outcomes.values()))
    listings: dict[tuple[ReasonTally, ...], str] = {}
    for js in ctx.jobsets:
        if js.key not in placements:
            reason = problem.impossible.get(js.key) or jobset_reason(
                classifier.diagnose(js), listings=listings
            )
            outcomes[js.key] = JobSetOutcome(
                namespace=js.namespace,
                name=js.name,
                status="unschedulable",
                reason=reason,
                priority=js.priority,
            )
    objective = sum(o.accelerators for o in outcomes.values() if o.status == "placed")
    final = report.model_copy(
        update={"objective": objective, "gap": relative_gap(objective, report.bound)}
    )
    return Plan(solver=final, jobsets=[outcomes[j.key] for j in ctx.jobsets_given])
