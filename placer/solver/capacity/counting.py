"""How many whole copies of each shape fit at once: the planner's model with copy counts.

`copies` (one shape at a time) and `mix` (all shapes together, by accelerators) both ask this model.
It is the planner's model (`build_model` in copies mode: same aggregation, same fit, exclusivity,
overlap and shared-pod families) with one change: a JobSet's admission is an integer, the number
of copies, instead of a yes/no. All-or-nothing then says every replicated job
gets `replicas x copies` child Jobs, and required locality is stated per enclosing domain: the
child Jobs of one replicated job inside a domain of the level come in whole copies.

Required locality of child Jobs without an exclusive key is not modeled here; callers verify the
counts by planning the copies with the real planner, which does model it, and step down if needed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ortools.sat.python import cp_model

from placer.model.cluster import ClusterSnapshot
from placer.model.errors import InputError
from placer.model.options import SolveOptions
from placer.model.workload import JobSetRequest
from placer.solver.context import PlacementContext
from placer.solver.cpsat import aggregate, build_model, copies_upper_bound, make_solver

__all__ = ["CountResult", "count_copies", "make_copies"]


@dataclass(frozen=True)
class CountResult:
    copies: dict[str, int]
    """Shape key -> copies that fit together."""
    status: str
    """OPTIMAL, FEASIBLE, or what CP-SAT said when it found nothing."""

    @property
    def answered(self) -> bool:
        """Whether the counts are a solution; otherwise they are zeros standing for "unknown"."""
        return self.status in ("OPTIMAL", "FEASIBLE")


def make_copies(shape: JobSetRequest, count: int, *, start: int = 0) -> list[JobSetRequest]:
    """`count` copies of `shape` named `<name>-copy-<j>`, so they never share a running JobSet's
    name (and its held domains) nor each other's."""
    return [
        shape.model_copy(update={"name": f"{shape.name}-copy-{j}", "uid": "", "order": j})
        for j in range(start, start + count)
    ]


def count_copies(
    snapshot: ClusterSnapshot,
    shapes: Sequence[JobSetRequest],
    options: SolveOptions,
    weights: Mapping[str, int],
) -> CountResult:
    """Maximize sum(weights[key] * copies[key]) over the shapes (keys must be distinct)."""
    ctx = PlacementContext(snapshot, shapes, options)
    built = build_model(aggregate(ctx), "copies")
    model, v = built.model, built.variables
    # ties: more copies, then copies of shapes given earlier
    n = len(ctx.jobsets_given)
    order = {js.key: i for i, js in enumerate(ctx.jobsets_given)}
    ties = sum(((n - order[k]) * x for k, x in v.admit.items()), cp_model.LinearExpr.constant(0))
    big = n * sum(copies_upper_bound(built.problem, k) for k in v.admit) + 1
    model.maximize(
        sum((weights[k] * big * x for k, x in v.admit.items()), cp_model.LinearExpr.constant(0))
        + ties
    )
    solver = make_solver(options, "count")
    status = solver.solve(model)
    if status == cp_model.MODEL_INVALID:
        # not "nothing fits": CP-SAT refused the question (a flag or quantity out of its range)
        raise InputError(
            f"CP-SAT rejected the counting model (MODEL_INVALID: {solver.solution_info()})",
            code="model-invalid",
        )
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return CountResult({k: 0 for k in v.admit}, solver.status_name(status))
    copies = {k: int(solver.value(x)) for k, x in v.admit.items()}
    return CountResult(copies, solver.status_name(status))
