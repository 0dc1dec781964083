"""Hints: the greedy plan as a starting solution, and admission counts spread onto finer classes.

A complete, feasible hint is what makes CP-SAT never worse than greedy in practice: the first
solution it reports is at least the hint.
"""

from __future__ import annotations

from collections import defaultdict

from ortools.sat.python import cp_model

from placer.model.plan import Plan
from placer.solver.cpsat.aggregate import AggregatedProblem, DomainClass
from placer.solver.cpsat.materialize import Chosen
from placer.solver.cpsat.variables import Variables

__all__ = ["hint_from_chosen", "hint_from_plan", "spread_counts"]


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
    fine: AggregatedProblem, coarse: AggregatedProblem, cv: Variables, values: dict[str, int]
) -> Chosen:
    """The coarse solution on the fine classes: each coarse count goes to fine classes of it, the
    JobSet's current enclosing domain first, then the tightest class. A decent packing by itself,
    used as the fine model's hint, or as the answer when that model is too large to solve."""
    fine_of: dict[str, list[str]] = defaultdict(list)
    coarse_of_domain = {d.path: c.id for c in coarse.domain_classes for d in c.members}
    for c in fine.domain_classes:
        fine_of[coarse_of_domain[c.members[0].path]].append(c.id)
    by_id = {c.id: c for c in fine.domain_classes}
    left = {c.id: c.size for c in fine.domain_classes}
    counts: dict[tuple[int, str], int] = {}
    by_class: dict[int, list[tuple[str, int]]] = defaultdict(list)
    for (i, cid), x in cv.count.items():
        if values[x.name]:
            by_class[i].append((cid, values[x.name]))
    for jc in fine.exclusive:
        homes: set[str] = set()
        for cid, need in by_class[jc.index]:
            candidates = [f for f in fine_of[cid] if jc.index in by_id[f].fits]
            while need > 0:
                f = min((_rank(by_id[f], jc.index, homes), f) for f in candidates if left[f])[1]
                take = min(need, left[f])
                left[f] -= take
                need -= take
                counts[(jc.index, f)] = counts.get((jc.index, f), 0) + take
                homes.update(by_id[f].parents.values())
    admitted = frozenset(key for key, x in cv.admit.items() if values[x.name])
    return Chosen(admitted=admitted, counts=counts, enclosing={})


def hint_from_chosen(
    model: cp_model.CpModel, v: Variables, problem: AggregatedProblem, chosen: Chosen
) -> None:
    """A complete hint from a class-level solution: counts, admissions, spans, shared room."""
    by_id = {c.id: c for c in problem.domain_classes}
    values: dict[str, int] = {v.admit[key].name: 1 for key in chosen.admitted}
    used: dict[str, int] = defaultdict(int)
    for (i, cid), n in chosen.counts.items():
        values[v.count[(i, cid)].name] = n
        used[cid] += n
        _mark_parents(values, v, problem.ctx.job_classes[i].jobset.key, i, by_id[cid].parents)
    for jc in problem.shared:
        if jc.jobset.key not in chosen.admitted:
            continue
        pods = jc.rjob.replicas * jc.rjob.pods_per_job
        for (i, where), x in [*v.shared_in_group.items(), *v.shared_in_class.items()]:
            if i != jc.index or pods <= 0:
                continue
            room = x.proto.domain[-1]
            if where in by_id:
                room = min(
                    room, (by_id[where].size - used[where]) * by_id[where].shared_capacity.get(i, 0)
                )
            take = min(pods, room)
            values[x.name] = take
            pods -= take
    model.clear_hints()  # type: ignore[no-untyped-call]
    for x in _all(v):
        model.add_hint(x, values.get(x.name, 0))
