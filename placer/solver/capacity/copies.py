"""How many more copies of one JobSet shape fit now, and what stops one more.

A copy is a whole JobSet (all-or-nothing, each exclusive child Job on a domain to itself) placed on
the snapshot's free capacity; running JobSets keep their nodes and domains, and the other JobSets
given are shapes, not placed first. The count comes from the counting model (`counting`), then the
planner places that many copies and the independent checker accepts the plan, so the number shown
is one a real plan achieves. The limiting factor is the diagnosis of one more copy beside them
(`placer.solver.reasons`, the classifier the planners and `placer explain` use), with "taken"
worded as taken by the copies.
"""

from __future__ import annotations

from collections.abc import Sequence

from placer.model.cluster import ClusterSnapshot
from placer.model.options import SolveOptions
from placer.model.plan import Plan
from placer.model.workload import JobSetRequest
from placer.solver.capacity.counting import count_copies, make_copies
from placer.solver.capacity.result import ShapeCopies
from placer.solver.context import PlacementContext
from placer.solver.reasons import Occupancy, diagnose, occupancy_from_plan, reason_lines
from placer.solver.registry import get_solver

__all__ = ["copies_of", "plan_copies"]


def plan_copies(
    snapshot: ClusterSnapshot,
    copies: Sequence[JobSetRequest],
    options: SolveOptions,
    solver: str = "cpsat",
) -> Plan:
    """Plan the copies with the named solver; a plan the checker rejects is an error (a bug:
    `InvalidPlanError`, raised by the solver `get_solver` assembles)."""
    options = options.model_copy(update={"export_model_path": None})
    return get_solver(solver).solve(snapshot, copies, options)


def copies_of(
    snapshot: ClusterSnapshot,
    shape: JobSetRequest,
    options: SolveOptions,
    *,
    solver: str = "cpsat",
    verify_limit: int = 128,
) -> tuple[ShapeCopies, Plan | None]:
    """Copies of `shape` that fit now, checked by planning them (up to `verify_limit` copies)."""
    base = make_copies(shape, 1)[0]
    count = count_copies(snapshot, [base], options, {base.key: 1})
    counted = count.copies[base.key]
    plan: Plan | None = None
    verified = False
    placed = counted
    if not count.answered:
        # no answer in the time limit is not "none fit": say so rather than show a checked 0
        lines = [
            f"the counting model found no answer within the time limit ({count.status}); "
            "raise --time-limit"
        ]
        result = ShapeCopies(
            jobset=shape.key,
            accelerators_per_copy=shape.accelerator_units,
            copies=0,
            limit=lines[0],
            limit_lines=lines,
            verified=False,
        )
        return result, None
    if 0 < counted <= verify_limit:
        plan = plan_copies(snapshot, make_copies(shape, counted), options, solver)
        placed = sum(1 for o in plan.jobsets if o.status == "placed")
        verified = True
    elif counted == 0:
        verified = True
    extra = make_copies(shape, 1, start=placed)[0]
    queue = [*(make_copies(shape, placed) if plan is not None else []), extra]
    ctx = PlacementContext(snapshot, queue, options)
    occ = occupancy_from_plan(ctx, plan) if plan is not None else Occupancy()
    if plan is None and counted > 0:
        # counted, not planned: no plan says which domains the copies take, so a diagnosis of
        # one more copy on the free cluster would wrongly say it fits
        lines = [
            f"copy {counted + 1} does not fit by the counting model; the {counted} copies were "
            f"counted, not planned (more than {verify_limit}), so what stops one more is not named"
        ]
    else:
        lines = reason_lines(diagnose(ctx, extra, occ), taken_by_copies=placed)
    result = ShapeCopies(
        jobset=shape.key,
        accelerators_per_copy=shape.accelerator_units,
        copies=placed,
        limit="; ".join(lines),
        limit_lines=lines,
        verified=verified,
    )
    return result, plan
