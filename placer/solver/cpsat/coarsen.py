"""A coarser view for admission: domains that differ only in where they sit become one class.

Part of phase "aggregate". Admission (which JobSets run) depends only on which JobClasses a domain
fits and what shared room it offers, not on its enclosing block or how much it would strand, so
the admission stages solve this smaller problem exactly, and packing then refines on the fine one.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable

from placer.solver.cpsat.problem import AggregatedProblem, DomainClass

__all__ = ["coarsen"]


def coarsen(problem: AggregatedProblem) -> AggregatedProblem:
    """Merge classes that differ only in where they sit (parents) and how much they strand.

    Admission depends only on which JobClasses a domain fits and what shared room it offers, so
    the admission stages solve this much smaller problem exactly. Required locality and overlapping
    keys need the parents, so then the problem is returned unchanged.
    """
    if problem.required_level or problem.shared_levels or problem.overlaps:
        return problem
    merged: dict[Hashable, list[DomainClass]] = defaultdict(list)
    for c in problem.domain_classes:
        signature = (
            c.key,
            c.fits,
            tuple(sorted(c.shared_capacity.items())),
            tuple(sorted(c.shared_resources.items())),
            c.evicts,
        )
        merged[signature].append(c)
    if len(merged) == len(problem.domain_classes):
        return problem
    classes: list[DomainClass] = []
    for group in merged.values():
        first = group[0]
        members = tuple(sorted((d for c in group for d in c.members), key=lambda d: d.path))
        classes.append(
            DomainClass(
                id=f"k{len(classes)}",
                key=first.key,
                members=members,
                fits=first.fits,
                stranded={},
                parents={},
                shared_capacity=first.shared_capacity,
                shared_resources=first.shared_resources,
                evicts=first.evicts,
            )
        )
    return AggregatedProblem(
        ctx=problem.ctx,
        exclusive=problem.exclusive,
        shared=problem.shared,
        domain_classes=tuple(classes),
        node_groups=problem.node_groups,
        impossible=problem.impossible,
        resource_scale=problem.resource_scale,
    )
