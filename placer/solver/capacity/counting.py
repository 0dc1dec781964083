"""How many whole copies of each shape fit at once: the planner's model with copy counts.

`copies` (one shape at a time) and `mix` (all shapes together, by accelerators) both ask this model.
It is the planner's aggregated model (`aggregate`, same fit, exclusivity, overlap and shared-pod
families from `placer.solver.cpsat.constraints`) with one change: a JobSet's admission is an
integer, the number of copies, instead of a yes/no. All-or-nothing then says every replicated job
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
from placer.model.options import SolveOptions
from placer.model.workload import JobSetRequest
from placer.solver.context import PlacementContext
from placer.solver.cpsat import constraints
from placer.solver.cpsat.aggregate import AggregatedProblem, aggregate
from placer.solver.cpsat.variables import Variables

__all__ = ["CountResult", "count_copies", "make_copies"]

_MAX_COPIES = 10_000


@dataclass(frozen=True)
class CountResult:
    copies: dict[str, int]
    """Shape key -> copies that fit together."""
    status: str
    """OPTIMAL, FEASIBLE, or what CP-SAT said when it found nothing."""


def make_copies(shape: JobSetRequest, count: int, *, start: int = 0) -> list[JobSetRequest]:
    """`count` copies of `shape` named `<name>-copy-<j>`, so they never share a running JobSet's
    name (and its held domains) nor each other's."""
    return [
        shape.model_copy(update={"name": f"{shape.name}-copy-{j}", "uid": "", "order": j})
        for j in range(start, start + count)
    ]


def _upper_bound(problem: AggregatedProblem, key: str) -> int:
    """Copies of one shape that could fit if nothing else were placed: a bound for the variable."""
    bound = _MAX_COPIES
    for jc in problem.exclusive:
        if jc.jobset.key == key:
            domains = sum(c.size for c in problem.classes_for(jc))
            bound = min(bound, domains // jc.rjob.replicas)
    for jc in problem.shared:
        if jc.jobset.key == key:
            pods = sum(c.size * c.shared_capacity.get(jc.index, 0) for c in problem.domain_classes)
            pods += sum(len(g.nodes) * g.capacity.get(jc.index, 0) for g in problem.node_groups)
            bound = min(bound, pods // (jc.rjob.replicas * jc.rjob.pods_per_job))
    return max(bound, 0)


def _variables(model: cp_model.CpModel, problem: AggregatedProblem) -> Variables:
    """The planner's containers, with `admit` holding copy counts."""
    v = Variables()
    for js in problem.ctx.jobsets:
        v.admit[js.key] = model.new_int_var(0, _upper_bound(problem, js.key), f"copies[{js.key}]")
    for jc in problem.exclusive:
        for c in problem.classes_for(jc):
            v.count[(jc.index, c.id)] = model.new_int_var(0, c.size, f"count[{jc.name},{c.id}]")
    for jc in problem.shared:
        for c in problem.domain_classes:
            if c.shared_capacity.get(jc.index):
                v.shared_in_class[(jc.index, c.id)] = model.new_int_var(
                    0, c.size * c.shared_capacity[jc.index], f"shared[{jc.name},{c.id}]"
                )
        for g in problem.node_groups:
            if g.capacity.get(jc.index):
                v.shared_in_group[(jc.index, g.id)] = model.new_int_var(
                    0, len(g.nodes) * g.capacity[jc.index], f"shared[{jc.name},{g.id}]"
                )
    return v


def _add_copy_locality(model: cp_model.CpModel, v: Variables, problem: AggregatedProblem) -> None:
    """Required topology with copies: per enclosing domain, whole copies of the replicated job."""
    for jc in problem.exclusive:
        level = problem.required_level.get(jc.index)
        if level is None:
            continue
        per_parent: dict[str, list[cp_model.IntVar]] = {}
        for c in problem.classes_for(jc):
            parent = c.parents.get(level)
            if parent is None:
                model.add(v.count[(jc.index, c.id)] == 0)
            else:
                per_parent.setdefault(parent, []).append(v.count[(jc.index, c.id)])
        inside: list[cp_model.IntVar] = []
        for parent, counts in sorted(per_parent.items()):
            m = model.new_int_var(0, _MAX_COPIES, f"copies_in[{jc.name},{level},{parent}]")
            model.add(sum(counts) == jc.rjob.replicas * m)
            inside.append(m)
        model.add(sum(inside, cp_model.LinearExpr.constant(0)) == v.admit[jc.jobset.key])


def count_copies(
    snapshot: ClusterSnapshot,
    shapes: Sequence[JobSetRequest],
    options: SolveOptions,
    weights: Mapping[str, int],
    *,
    fixed: Mapping[str, int] | None = None,
) -> CountResult:
    """Maximize sum(weights[key] * copies[key]) over the shapes (keys must be distinct).

    `fixed` pins some shapes' copy counts (e.g. to ask for a mix without one shape).
    """
    ctx = PlacementContext(snapshot, shapes, options)
    problem = aggregate(ctx)
    model = cp_model.CpModel()
    v = _variables(model, problem)
    constraints.add_all_or_nothing(model, v, problem)
    constraints.add_domain_exclusivity(model, v, problem)
    constraints.add_overlapping_domains(model, v, problem)
    constraints.add_shared_fit(model, v, problem)
    _add_copy_locality(model, v, problem)
    constraints.add_impossible(model, v, problem)
    for key, value in (fixed or {}).items():
        model.add(v.admit[key] == value)
    # ties: more copies, then copies of shapes given earlier
    n = len(ctx.jobsets_given)
    order = {js.key: i for i, js in enumerate(ctx.jobsets_given)}
    ties = sum(((n - order[k]) * x for k, x in v.admit.items()), cp_model.LinearExpr.constant(0))
    big = n * sum(_upper_bound(problem, k) for k in v.admit) + 1
    model.maximize(
        sum((weights[k] * big * x for k, x in v.admit.items()), cp_model.LinearExpr.constant(0))
        + ties
    )
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = options.time_limit_s
    solver.parameters.num_workers = options.workers or 8
    solver.parameters.random_seed = options.seed
    solver.parameters.interleave_search = True
    status = solver.solve(model)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return CountResult({k: 0 for k in v.admit}, solver.status_name(status))
    copies = {k: int(solver.value(x)) for k, x in v.admit.items()}
    return CountResult(copies, solver.status_name(status))
