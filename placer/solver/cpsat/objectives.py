"""Objective terms, one function per goal, in the lexicographic order the planner optimizes them.

1. per priority tier, highest first: accelerator units admitted (never trade a higher tier away);
2. queue order: among equal admissions, prefer JobSets earlier in the queue;
3. best fit: fewest free accelerators stranded in chosen domains;
4. locality: fewest higher-level domains spanned (preferred topology counts the same way).
solve.py solves them one after another, fixing each optimum before the next.
"""

from __future__ import annotations

from ortools.sat.python import cp_model

from placer.solver.cpsat.problem import AggregatedProblem
from placer.solver.cpsat.variables import Variables

__all__ = [
    "admitted_units",
    "domains_spanned",
    "queue_preference",
    "stranded_accelerators",
    "tiers",
]


def tiers(problem: AggregatedProblem) -> list[int]:
    """Distinct priorities in the queue, highest first."""
    return sorted({js.priority for js in problem.ctx.jobsets}, reverse=True)


def admitted_units(v: Variables, problem: AggregatedProblem, tier: int) -> cp_model.LinearExpr:
    """Accelerator units (pods for JobSets without accelerators) admitted in one priority tier."""
    return sum(
        (
            js.accelerator_units * v.admit[js.key]
            for js in problem.ctx.jobsets
            if js.priority == tier
        ),
        cp_model.LinearExpr.constant(0),
    )


def queue_preference(v: Variables, problem: AggregatedProblem) -> cp_model.LinearExpr:
    """Earlier JobSets weigh more, so among equal admissions the head of the queue goes first."""
    jobsets = problem.ctx.jobsets
    return sum(
        ((len(jobsets) - i) * v.admit[js.key] for i, js in enumerate(jobsets)),
        cp_model.LinearExpr.constant(0),
    )


def stranded_accelerators(v: Variables, problem: AggregatedProblem) -> cp_model.LinearExpr:
    """Best fit: free accelerators left idle in the domains chosen, so large domains stay whole."""
    return sum(
        (
            problem.class_by_id(cid).stranded[i] * x
            for (i, cid), x in v.count.items()
            if problem.class_by_id(cid).stranded.get(i)
        ),
        cp_model.LinearExpr.constant(0),
    )


def domains_spanned(v: Variables) -> cp_model.LinearExpr:
    """Locality: higher-level domains each JobSet touches, plus preferred-topology choices."""
    return sum((*v.span.values(), *v.local.values()), cp_model.LinearExpr.constant(0))
