"""Hints: the greedy plan as a starting solution, and admission counts spread onto finer classes.

A complete, feasible hint is what makes CP-SAT never worse than greedy in practice: the first
solution it reports is at least the hint.
"""

from __future__ import annotations

from collections import defaultdict

from ortools.sat.python import cp_model

from placer.model.plan import Plan
from placer.solver.cpsat.aggregate import AggregatedProblem, DomainClass
from placer.solver.cpsat.variables import Variables

__all__ = ["hint_from_plan", "spread_counts"]


def hint_from_plan(
    model: cp_model.CpModel, v: Variables, problem: AggregatedProblem, plan: Plan
) -> None:
    """Every variable's value in a plan (the greedy one): a complete hint, so CP-SAT starts from a
    solution instead of having to repair a partial one (which at scale it may not do in time)."""
    class_of = {(d.key, d.path): c.id for c in problem.domain_classes for d in c.members}
    parents_of = {c.id: c.parents for c in problem.domain_classes}
    parents_of.update({g.id: g.parents for g in problem.node_groups})
    room_of = _shared_room_owner(problem)
    rjob_class = {(jc.jobset.key, jc.rjob.name): jc.index for jc in problem.ctx.job_classes}
    values: dict[str, int] = {}

    def bump(x: cp_model.IntVar | None, by: int = 1) -> None:
        if x is not None:
            values[x.name] = values.get(x.name, 0) + by

    for o in plan.jobsets:
        placed = o.status == "placed"
        if o.key in v.admit:
            values[v.admit[o.key].name] = int(placed)
        if not placed:
            continue
        for j in o.jobs:
            jc = rjob_class.get((o.key, j.replicated_job))
            if jc is None:
                continue
            if j.domain is None:
                for pod in j.pods:
                    where = room_of.get(pod.node)
                    bump(v.shared_in_class.get((jc, where or "")))
                    bump(v.shared_in_group.get((jc, where or "")))
                    _mark_parents(values, v, o.key, jc, parents_of.get(where or "", {}))
                continue
            path = tuple((k, val) for k, val in j.domain.path)
            cid = class_of.get((j.domain.key, path))
            if cid is not None:
                bump(v.count.get((jc, cid)))
                _mark_parents(values, v, o.key, jc, parents_of[cid])
    for x in _all(v):
        model.add_hint(x, values.get(x.name, 0))


def _shared_room_owner(problem: AggregatedProblem) -> dict[str, str]:
    """Node -> the class or group whose shared room the model counts it in."""
    owner: dict[str, str] = {}
    for g in problem.node_groups:
        for n in g.nodes:
            owner[n] = g.id
    for c in problem.domain_classes:
        for d in c.members:
            for n in d.nodes:
                owner.setdefault(n, c.id)
    return owner


def _mark_parents(
    values: dict[str, int], v: Variables, jobset: str, jc: int, parents: dict[str, str]
) -> None:
    for level, parent in parents.items():
        for x in (v.span.get((jobset, level, parent)), v.local.get((jc, level, parent))):
            if x is not None:
                values[x.name] = 1


def _all(v: Variables) -> list[cp_model.IntVar]:
    return [
        *v.admit.values(),
        *v.count.values(),
        *v.shared_in_class.values(),
        *v.shared_in_group.values(),
        *v.local.values(),
        *v.span.values(),
    ]


def _rank(c: DomainClass, jc_index: int, homes: set[str]) -> tuple[int, int, str]:
    """Classes inside a domain the JobSet already uses first, then the tightest fit."""
    near = any(p in homes for p in c.parents.values())
    return (0 if near else 1, c.stranded.get(jc_index, 0), c.id)


def spread_counts(
    model: cp_model.CpModel,
    fine: AggregatedProblem,
    fv: Variables,
    coarse: AggregatedProblem,
    cv: Variables,
    values: dict[str, int],
) -> None:
    """Hint the fine model with the coarse solution: each coarse count goes to fine classes of it,
    the JobSet's current enclosing domain first, then the tightest class, so the hint is already a
    decent packing."""
    fine_of: dict[str, list[str]] = defaultdict(list)
    coarse_of_domain = {d.path: c.id for c in coarse.domain_classes for d in c.members}
    for c in fine.domain_classes:
        fine_of[coarse_of_domain[c.members[0].path]].append(c.id)
    by_id = {c.id: c for c in fine.domain_classes}
    left = {c.id: c.size for c in fine.domain_classes}
    hint: dict[str, int] = {}
    for key, x in cv.admit.items():
        hint[fv.admit[key].name] = values[x.name]
    for jc in fine.exclusive:
        homes: set[str] = set()
        for (i, cid), x in cv.count.items():
            if i != jc.index:
                continue
            need = values[x.name]
            candidates = [f for f in fine_of[cid] if (jc.index, f) in fv.count]
            while need > 0:
                ranked = sorted(
                    (_rank(by_id[f], jc.index, homes), f) for f in candidates if left[f] > 0
                )
                f = ranked[0][1]
                take = min(need, left[f])
                left[f] -= take
                need -= take
                name = fv.count[(jc.index, f)].name
                hint[name] = hint.get(name, 0) + take
                homes.update(by_id[f].parents.values())
    model.clear_hints()  # type: ignore[no-untyped-call]
    for (_, _), x in fv.count.items():
        model.add_hint(x, hint.get(x.name, 0))
    for x in fv.admit.values():
        model.add_hint(x, hint[x.name])
