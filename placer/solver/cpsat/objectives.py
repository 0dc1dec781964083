"""Objective terms, one function per goal, in the lexicographic order the planner optimizes them.

1. per priority tier, highest first: accelerator units admitted (never trade a higher tier away);
   then, with preemption, the least eviction cost (accelerator-seconds lost and restarted);
2. queue order: among equal admissions, prefer JobSets earlier in the queue;
3. best fit: fewest free accelerators stranded in chosen domains;
4. Kueue packing: shared replicated jobs with a required or preferred topology use the fewest
   domains of each level, coarsest level first (one domain of the preferred level if possible);
5. Kueue BestFit: shared replicated jobs with a required topology in the tightest domain that fits;
6. locality: fewest higher-level domains spanned by exclusive child Jobs (their preferred
   topology counts the same way);
7. Kueue packing inside a domain: those shared replicated jobs on the fewest hosts.
solve.py solves them one after another, fixing each optimum before the next.
"""

from __future__ import annotations

from dataclasses import dataclass

from ortools.sat.python import cp_model

from placer.model.topology import Domain
from placer.solver.cpsat.problem import AggregatedProblem
from placer.solver.cpsat.variables import Variables
from placer.solver.greedy.tas import room_beside_leader

__all__ = [
    "Term",
    "admitted_units",
    "domains_spanned",
    "domains_used",
    "eviction_cost",
    "hosts_used",
    "packing_terms",
    "queue_preference",
    "stranded_accelerators",
    "tiers",
    "tightest_domains",
]


_ZERO = cp_model.LinearExpr.constant(0)


@dataclass(frozen=True)
class Term:
    """One packing goal: what it counts (for notes), its expression, and its largest value (so a
    lexicographic order can weigh it above everything below)."""

    name: str
    expr: cp_model.LinearExprT
    bound: int


def tiers(problem: AggregatedProblem) -> list[int]:
    """Distinct priorities in the queue, highest first."""
    return sorted({js.priority for js in problem.ctx.jobsets}, reverse=True)


def _moved(problem: AggregatedProblem) -> frozenset[str]:
    """Defrag: running JobSets in the queue, whose admission is a move, never a gain."""
    victims = problem.ctx.victims
    return frozenset(victims.candidates) if victims is not None and victims.moves else frozenset()


def admitted_units(v: Variables, problem: AggregatedProblem, tier: int) -> cp_model.LinearExpr:
    """Accelerator units (pods for JobSets without accelerators) admitted in one priority tier."""
    moved = _moved(problem)
    return sum(
        (
            js.accelerator_units * v.admit[js.key]
            for js in problem.ctx.jobsets
            if js.priority == tier and js.key not in moved
        ),
        cp_model.LinearExpr.constant(0),
    )


def eviction_cost(v: Variables, problem: AggregatedProblem) -> cp_model.LinearExpr:
    """Accelerator-seconds the chosen victims lose and spend restarting
    (`VictimCandidate.weight`)."""
    victims = problem.ctx.victims
    if victims is None or not v.evict:
        return cp_model.LinearExpr.constant(0)
    return sum(
        (victims.candidates[k].weight * x for k, x in v.evict.items()),
        cp_model.LinearExpr.constant(0),
    )


def queue_preference(v: Variables, problem: AggregatedProblem) -> cp_model.LinearExpr:
    """Earlier JobSets weigh more, so among equal admissions the head of the queue goes first."""
    jobsets = problem.ctx.jobsets
    moved = _moved(problem)
    return sum(
        (
            (len(jobsets) - i) * v.admit[js.key]
            for i, js in enumerate(jobsets)
            if js.key not in moved
        ),
        cp_model.LinearExpr.constant(0),
    )


def stranded_accelerators(v: Variables, problem: AggregatedProblem) -> Term:
    """Best fit: free accelerators left idle in the domains chosen, so large domains stay whole."""
    terms, bound = [], 0
    for (i, cid), x in v.count.items():
        c = problem.class_by_id(cid)
        if c.stranded.get(i):
            terms.append(c.stranded[i] * x)
            bound += c.stranded[i] * min(problem.ctx.job_classes[i].rjob.replicas, c.size)
    return Term("stranded", sum(terms, _ZERO), bound)


def domains_spanned(v: Variables) -> Term:
    """Locality: higher-level domains each JobSet touches, plus preferred-topology choices."""
    return Term(
        "spans", sum((*v.span.values(), *v.local.values()), _ZERO), len(v.span) + len(v.local)
    )


def packing_terms(v: Variables, problem: AggregatedProblem) -> list[Term]:
    """The packing goals in priority order (3 to 7 above)."""
    return [
        stranded_accelerators(v, problem),
        *domains_used(v, problem),
        tightest_domains(v, problem),
        domains_spanned(v),
        hosts_used(v, problem),
    ]


def domains_used(v: Variables, problem: AggregatedProblem) -> list[Term]:
    """Kueue packing for shared replicated jobs with a required or preferred topology: per level,
    coarsest first, the domains of it their pods use, summed over them (fewest blocks, then fewest
    racks). A preferred topology is met exactly when its pods use one domain of its level; when
    they cannot, the fewest domains of it inside the fewest of the level above, as Kueue walks up.
    """
    levels = [lv for lv in problem.ctx.topology.levels if any(lv == k[1] for k in v.used)]
    terms = []
    for level in levels:
        xs = [x for (_, lv, _), x in sorted(v.used.items()) if lv == level]
        terms.append(Term(f"{level} domains", sum(xs, _ZERO), len(xs)))
    return terms


def hosts_used(v: Variables, problem: AggregatedProblem) -> Term:
    """Fewest hosts for shared replicated jobs with a required or preferred topology (Kueue's
    "then fewest hosts"): pods on the roomiest nodes of their domains."""
    bound = sum(len(problem.group_by_id(gid).nodes) for _, gid in v.hosts)
    return Term("Kueue hosts", sum(v.hosts.values(), _ZERO), bound)


def tightest_domains(v: Variables, problem: AggregatedProblem) -> Term:
    """Kueue BestFit for shared replicated jobs with Kueue annotations and a required topology:
    the domain chosen for their pods is the one with the fewest slices (then pods) of their shape
    that still fits, so roomier domains stay whole for later JobSets (a podset group: its
    workers' pods beside their leader, as Kueue counts it).

    Inside the domain, the fewest domains per lower level come from materializing with Kueue's
    own descent (materialize.py); the model does not restate it.
    """
    ctx = problem.ctx
    by_id: dict[str, dict[str, Domain]] = {}
    terms: list[cp_model.LinearExpr] = []
    bound = 0
    room: dict[int, list[tuple[int, cp_model.IntVar]]] = {}
    """JobClass -> (pods of its shape that fit in the domain, the domain's choice literal)"""
    for (i, level, parent), x in sorted(v.local.items(), key=lambda kv: kv[0]):
        jc = ctx.job_classes[i]
        if jc.exclusive_key or not jc.rjob.kueue_topology or level != jc.rjob.required_topology:
            continue
        group = ctx.podset_group(jc)
        if group is not None and i == group[1].index:
            continue  # a podset group is weighed once, by its workers beside their leader
        domains = by_id.setdefault(level, {d.id: d for d in ctx.domains(level)})
        domain = domains.get(parent)
        if domain is not None:
            pods = (
                ctx.domain_capacity(jc, domain)
                if group is None
                else room_beside_leader(ctx, *group, domain.nodes)
            )
            room.setdefault(i, []).append((pods, x))
    for i, choices in room.items():
        size = ctx.job_classes[i].rjob.slice_size or 1
        scale = max(pods for pods, _ in choices) + 1 if size > 1 else 0
        # slices first, as Kueue sorts domains; then pods
        weights = [(pods // size) * scale + pods for pods, _ in choices]
        terms.extend(w * x for w, (_, x) in zip(weights, choices, strict=True))
        bound += max(weights)
    return Term("domain room", sum(terms, _ZERO), bound)
