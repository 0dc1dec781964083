"""The largest mix of the given shapes that fits together: most accelerators, then most copies.

One CP-SAT solve of the counting model with every shape weighted by its accelerator units (pods
for shapes without accelerators), then the planner places the whole mix and the checker accepts it
(`verified`). Capacity planners read it as "what this cluster can run at once out of this menu".
"""

from __future__ import annotations

from collections.abc import Sequence

from placer.model.cluster import ClusterSnapshot
from placer.model.options import SolveOptions
from placer.model.plan import Plan
from placer.model.workload import JobSetRequest
from placer.solver.capacity.copies import plan_copies
from placer.solver.capacity.counting import count_copies, make_copies
from placer.solver.capacity.result import Mix, MixEntry

__all__ = ["largest_mix"]


def largest_mix(
    snapshot: ClusterSnapshot,
    shapes: Sequence[JobSetRequest],
    options: SolveOptions,
    *,
    solver: str = "cpsat",
    verify_limit: int = 256,
) -> tuple[Mix, Plan | None, list[JobSetRequest]]:
    """The mix, the plan that places it (None if not verified) and the copies planned."""
    bases = [make_copies(s, 1)[0] for s in shapes]
    weights = {b.key: max(b.accelerator_units, 1) for b in bases}
    counted = count_copies(snapshot, bases, options, weights)
    copies: list[JobSetRequest] = []
    for shape, base in zip(shapes, bases, strict=True):
        copies.extend(make_copies(shape, counted.copies[base.key]))
    plan: Plan | None = None
    # an empty mix is checked only when the counting model answered; a timeout is not "nothing"
    verified = not copies and counted.answered
    placed = {b.key: counted.copies[b.key] for b in bases}
    if copies and len(copies) <= verify_limit:
        plan = plan_copies(snapshot, copies, options, solver)
        status = {o.key: o.status for o in plan.jobsets}
        verified = all(s == "placed" for s in status.values())
        if not verified:
            for shape, base in zip(shapes, bases, strict=True):
                mine = make_copies(shape, counted.copies[base.key])
                placed[base.key] = sum(1 for c in mine if status[c.key] == "placed")
    entries = [
        MixEntry(
            jobset=shape.key,
            copies=placed[base.key],
            accelerators=placed[base.key] * shape.accelerator_units,
        )
        for shape, base in zip(shapes, bases, strict=True)
    ]
    mix = Mix(
        entries=entries,
        accelerators=sum(e.accelerators for e in entries),
        status=counted.status,
        verified=verified,
    )
    return mix, plan, copies
