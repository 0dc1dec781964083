"""Hints: the greedy plan as a starting solution, and admission counts spread onto finer classes.

A complete, feasible hint is what makes CP-SAT never worse than greedy in practice: the first
solution it reports is at least the hint. Every function here returns a `Solution`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

from placer.model.plan import Plan
from placer.solver.cpsat.problem import AggregatedProblem, DomainClass
from placer.solver.cpsat.solution import Solution
from placer.solver.cpsat.variables import Variables

__all__ = ["complete", "solution_from_plan", "spread_counts"]


def _add(values: dict[tuple[int, str], int], key: tuple[int, str], n: int) -> None:
    values[key] = values.get(key, 0) + n


def _mark_parents(
    s: Solution, v: Variables, jobset: str, jc: int, parents: Mapping[str, str]
) -> None:
    """The JobSet spans, and the JobClass sits in and uses, each enclosing domain of where it
    went (only keys the model has)."""
    for level, parent in parents.items():
        if (jobset, level, parent) in v.span:
            s.span[(jobset, level, parent)] = 1
        if (jc, level, parent) in v.local:
            s.local[(jc, level, parent)] = 1
        if (jc, level, parent) in v.used:
            s.used[(jc, level, parent)] = 1


def _with_hosts(s: Solution, v: Variables, problem: AggregatedProblem) -> Solution:
    """`s` with each Kueue class's hosts per node group as few as its pods there need."""
    for i, gid in v.hosts:
        pods = s.shared_in_group.get((i, gid), 0)
        s.hosts[(i, gid)] = -(-pods // problem.group_by_id(gid).capacity[i])
    return s


def solution_from_plan(v: Variables, problem: AggregatedProblem, plan: Plan) -> Solution:
    """Every variable's value in a plan (the greedy one): a complete hint, so CP-SAT starts from a
    solution instead of having to repair a partial one (which at scale it may not do in time)."""
    class_of = {(d.key, d.path): c.id for c in problem.domain_classes for d in c.members}
    rjob_class = {(jc.jobset.key, jc.rjob.name): jc.index for jc in problem.ctx.job_classes}
    s = Solution()
    for o in plan.jobsets:
        placed = o.status == "placed"
        if o.key in v.admit:
            s.admit[o.key] = int(placed)
        if not placed:
            continue
        for j in o.jobs:
            jc = rjob_class.get((o.key, j.replicated_job))
            if jc is None:
                continue
            if j.domain is None:
                for pod in j.pods:
                    where = problem.room_owner.get(pod.node)
                    if where is None:
                        continue
                    if (jc, where) in v.shared_in_class:
                        _add(s.shared_in_class, (jc, where), 1)
                    if (jc, where) in v.shared_in_group:
                        _add(s.shared_in_group, (jc, where), 1)
                    _mark_parents(s, v, o.key, jc, problem.parents_of(where))
                continue
            path = tuple((k, val) for k, val in j.domain.path)
            cid = class_of.get((j.domain.key, path))
            if cid is not None:
                if (jc, cid) in v.count:
                    _add(s.count, (jc, cid), 1)
                _mark_parents(s, v, o.key, jc, problem.class_by_id(cid).parents)
    return _with_hosts(s, v, problem)


def _rank(c: DomainClass, jc_index: int, homes: set[str]) -> tuple[int, int, str]:
    """Classes inside a domain the JobSet already uses first, then the tightest fit."""
    near = any(p in homes for p in c.parents.values())
    return (0 if near else 1, c.stranded.get(jc_index, 0), c.id)


def spread_counts(fine: AggregatedProblem, coarse: AggregatedProblem, solved: Solution) -> Solution:
    """The coarse solution on the fine classes: each coarse count goes to fine classes of it, the
    JobSet's current enclosing domain first, then the tightest class. A decent packing by itself
    (admissions and counts only), used to hint the fine model (`complete`), or as the answer
    when that model is too large to solve."""
    fine_of: dict[str, list[str]] = defaultdict(list)
    coarse_of_domain = {d.path: c.id for c in coarse.domain_classes for d in c.members}
    for c in fine.domain_classes:
        fine_of[coarse_of_domain[c.members[0].path]].append(c.id)
    left = {c.id: c.size for c in fine.domain_classes}
    counts: dict[tuple[int, str], int] = {}
    by_class: dict[int, list[tuple[str, int]]] = defaultdict(list)
    for (i, cid), n in solved.count.items():
        if n:
            by_class[i].append((cid, n))
    for jc in fine.exclusive:
        homes: set[str] = set()
        for cid, need in by_class[jc.index]:
            candidates = [f for f in fine_of[cid] if jc.index in fine.class_by_id(f).fits]
            while need > 0:
                f = min(
                    (_rank(fine.class_by_id(f), jc.index, homes), f) for f in candidates if left[f]
                )[1]
                take = min(need, left[f])
                left[f] -= take
                need -= take
                _add(counts, (jc.index, f), take)
                homes.update(fine.class_by_id(f).parents.values())
    return Solution(admit=dict(solved.admit), count=counts, evict=dict(solved.evict))


def complete(v: Variables, problem: AggregatedProblem, partial: Solution) -> Solution:
    """A complete hint from a solution's admissions and counts: spans and locality of where the
    counts went, and the admitted JobSets' shared pods wherever there is room."""
    s = Solution()
    s.admit.update({key: 1 for key in partial.admitted})
    s.evict.update({key: 1 for key in partial.evicted})
    used: dict[str, int] = defaultdict(int)
    group_ids = {g.id for g in problem.node_groups}
    for (i, cid), n in partial.count.items():
        if not n:
            continue
        s.count[(i, cid)] = n
        used[cid] += n
        _mark_parents(
            s, v, problem.ctx.job_classes[i].jobset.key, i, problem.class_by_id(cid).parents
        )
    for jc in problem.shared:
        if jc.jobset.key not in s.admit:
            continue
        pods = jc.rjob.replicas * jc.rjob.pods_per_job
        for i, where in [*v.shared_in_group, *v.shared_in_class]:
            if i != jc.index or pods <= 0:
                continue
            room = problem.shared_room(i, where)
            target = s.shared_in_group
            if where not in group_ids:
                c = problem.class_by_id(where)
                if not partial.evicted.issuperset(c.evicts):
                    continue
                room = min(room, (c.size - used[where]) * c.shared_capacity.get(i, 0))
                target = s.shared_in_class
            take = min(pods, room)
            target[(i, where)] = take
            pods -= take
            if take:
                _mark_parents(s, v, jc.jobset.key, i, problem.parents_of(where))
    return _with_hosts(s, v, problem)
