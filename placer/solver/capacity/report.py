"""`placer capacity`'s engine: copies per shape, the largest mix, free and stranded accelerators.

Phases:
  copies    per shape, how many more whole copies fit now, and what stops one more (`copies`)
  mix       the largest mix of all shapes together, by accelerators (`mix`)
  stranded  free accelerators per domain type, and those no shape can use (`stranded`)
"""

from __future__ import annotations

from collections.abc import Sequence

from placer.model.cluster import ClusterSnapshot
from placer.model.errors import InputError
from placer.model.options import SolveOptions
from placer.model.workload import JobSetRequest
from placer.solver.capacity.copies import copies_of
from placer.solver.capacity.mix import largest_mix
from placer.solver.capacity.result import CapacityReport
from placer.solver.capacity.stranded import domain_type_usage
from placer.solver.progress import SILENT, ProgressHook

__all__ = ["capacity_report"]


def capacity_report(
    snapshot: ClusterSnapshot,
    shapes: Sequence[JobSetRequest],
    options: SolveOptions,
    *,
    solver: str = "cpsat",
    whatif: Sequence[str] = (),
    progress: ProgressHook = SILENT,
) -> CapacityReport:
    """The whole report; `progress` hears each phase and each shape counted."""
    if not shapes:
        raise InputError("give at least one JobSet shape", field="JOBSETS", code="usage")
    notes: list[str] = []
    per_shape = []
    progress.phase("copies")
    for done, shape in enumerate(shapes):
        progress.step(done, len(shapes), shape.key)
        result, _ = copies_of(snapshot, shape, options, solver=solver)
        if not result.verified and result.copies == 0:
            notes.append(f"{shape.key}: {result.limit}")  # the counting model timed out
        elif not result.verified:
            notes.append(f"{shape.key}: {result.copies} copies counted, too many to re-plan")
        per_shape.append(result)
    progress.phase("mix")
    mix, plan, copies = largest_mix(snapshot, shapes, options, solver=solver)
    if mix.status not in ("OPTIMAL", "FEASIBLE"):
        notes.append(
            f"largest mix: the counting model found no answer within the time limit "
            f"({mix.status}); raise --time-limit"
        )
    elif not mix.verified:
        notes.append(
            "largest mix: the planner placed fewer copies than counted (or too many to re-plan); "
            "the mix shows what it placed"
        )
    progress.phase("stranded")
    rows = domain_type_usage(snapshot, shapes, options, mix_plan=plan, mix_jobsets=copies)
    return CapacityReport(
        whatif=list(whatif),
        shapes=per_shape,
        mix=mix,
        domain_types=rows,
        notes=notes,
        mix_plan=plan,
    )
