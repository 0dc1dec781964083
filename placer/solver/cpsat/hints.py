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
    """Admissions and domain counts of a plan (the greedy one), as a hint."""
    class_of = {(d.key, d.path): c.id for c in problem.domain_classes for d in c.members}
    rjob_class = {(jc.jobset.key, jc.rjob.name): jc.index for jc in problem.exclusive}
    counts: dict[tuple[int, str], int] = dict.fromkeys(v.count, 0)
    for o in plan.jobsets:
        if o.key in v.admit:
            model.add_hint(v.admit[o.key], o.status == "placed")
        if o.status != "placed":
            continue
        for j in o.jobs:
            if j.domain is None:
                continue
            path = tuple((k, val) for k, val in j.domain.path)
            cid = class_of.get((j.domain.key, path))
            jc = rjob_class.get((o.key, j.replicated_job))
            if cid is not None and jc is not None and (jc, cid) in counts:
                counts[(jc, cid)] += 1
    for k, x in v.count.items():
        model.add_hint(x, counts[k])


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
