"""Hints: the greedy plan as a starting solution, and admission counts spread onto finer classes.

A complete, feasible hint is what makes CP-SAT never worse than greedy in practice: the first
solution it reports is at least the hint.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

from placer.model.plan import Plan
from placer.solver.cpsat.materialize import Chosen
from placer.solver.cpsat.problem import AggregatedProblem, DomainClass
from placer.solver.cpsat.solution import Solution
from placer.solver.cpsat.variables import Variables

__all__ = ["solution_from_chosen", "solution_from_plan", "spread_counts"]


class _Values:
    """An solution being filled in, family by family (only keys the model has)."""

    def __init__(self, v: Variables) -> None:
        self.v = v
        self.admit: dict[str, int] = {}
        self.count: dict[tuple[int, str], int] = defaultdict(int)
        self.shared_in_class: dict[tuple[int, str], int] = defaultdict(int)
        self.shared_in_group: dict[tuple[int, str], int] = defaultdict(int)
        self.local: dict[tuple[int, str, str], int] = {}
        self.span: dict[tuple[str, str, str], int] = {}
        self.used: dict[tuple[int, str, str], int] = {}

    def mark_parents(self, jobset: str, jc: int, parents: Mapping[str, str]) -> None:
        """The JobSet spans, and the JobClass sits in and uses, each enclosing domain of where
        it went."""
        for level, parent in parents.items():
            if (jobset, level, parent) in self.v.span:
                self.span[(jobset, level, parent)] = 1
            if (jc, level, parent) in self.v.local:
                self.local[(jc, level, parent)] = 1
            if (jc, level, parent) in self.v.used:
                self.used[(jc, level, parent)] = 1

    def solution(self, problem: AggregatedProblem) -> Solution:
        """The values, with each Kueue class's hosts per node group as few as its pods need."""
        hosts = {
            (i, gid): -(
                -self.shared_in_group.get((i, gid), 0) // problem.group_by_id(gid).capacity[i]
            )
            for i, gid in self.v.hosts
        }
        return Solution(
            admit=self.admit,
            count=dict(self.count),
            shared_in_class=dict(self.shared_in_class),
            shared_in_group=dict(self.shared_in_group),
            local=self.local,
            span=self.span,
            used=self.used,
            hosts=hosts,
        )


def solution_from_plan(v: Variables, problem: AggregatedProblem, plan: Plan) -> Solution:
    """Every variable's value in a plan (the greedy one): a complete hint, so CP-SAT starts from a
    solution instead of having to repair a partial one (which at scale it may not do in time)."""
    class_of = {(d.key, d.path): c.id for c in problem.domain_classes for d in c.members}
    room_of = _shared_room_owner(problem)
    rjob_class = {(jc.jobset.key, jc.rjob.name): jc.index for jc in problem.ctx.job_classes}
    values = _Values(v)
    for o in plan.jobsets:
        placed = o.status == "placed"
        if o.key in v.admit:
            values.admit[o.key] = int(placed)
        if not placed:
            continue
        for j in o.jobs:
            jc = rjob_class.get((o.key, j.replicated_job))
            if jc is None:
                continue
            if j.domain is None:
                for pod in j.pods:
                    where = room_of.get(pod.node)
                    if where is None:
                        continue
                    if (jc, where) in v.shared_in_class:
                        values.shared_in_class[(jc, where)] += 1
                    if (jc, where) in v.shared_in_group:
                        values.shared_in_group[(jc, where)] += 1
                    values.mark_parents(o.key, jc, problem.parents_of(where))
                continue
            path = tuple((k, val) for k, val in j.domain.path)
            cid = class_of.get((j.domain.key, path))
            if cid is not None:
                if (jc, cid) in v.count:
                    values.count[(jc, cid)] += 1
                values.mark_parents(o.key, jc, problem.class_by_id(cid).parents)
    return values.solution(problem)


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


def _rank(c: DomainClass, jc_index: int, homes: set[str]) -> tuple[int, int, str]:
    """Classes inside a domain the JobSet already uses first, then the tightest fit."""
    near = any(p in homes for p in c.parents.values())
    return (0 if near else 1, c.stranded.get(jc_index, 0), c.id)


def spread_counts(fine: AggregatedProblem, coarse: AggregatedProblem, solved: Solution) -> Chosen:
    """The coarse solution on the fine classes: each coarse count goes to fine classes of it, the
    JobSet's current enclosing domain first, then the tightest class. A decent packing by itself,
    used as the fine model's hint, or as the answer when that model is too large to solve."""
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
                counts[(jc.index, f)] = counts.get((jc.index, f), 0) + take
                homes.update(fine.class_by_id(f).parents.values())
    return Chosen(admitted=solved.admitted, counts=counts, enclosing={})


def solution_from_chosen(v: Variables, problem: AggregatedProblem, chosen: Chosen) -> Solution:
    """A complete hint from a class-level solution: counts, admissions, spans, shared room."""
    values = _Values(v)
    values.admit.update({key: 1 for key in chosen.admitted})
    used: dict[str, int] = defaultdict(int)
    group_ids = {g.id for g in problem.node_groups}
    for (i, cid), n in chosen.counts.items():
        values.count[(i, cid)] = n
        used[cid] += n
        values.mark_parents(
            problem.ctx.job_classes[i].jobset.key, i, problem.class_by_id(cid).parents
        )
    for jc in problem.shared:
        if jc.jobset.key not in chosen.admitted:
            continue
        pods = jc.rjob.replicas * jc.rjob.pods_per_job
        for i, where in [*v.shared_in_group, *v.shared_in_class]:
            if i != jc.index or pods <= 0:
                continue
            room = problem.shared_room(i, where)
            target = values.shared_in_group
            if where not in group_ids:
                c = problem.class_by_id(where)
                room = min(room, (c.size - used[where]) * c.shared_capacity.get(i, 0))
                target = values.shared_in_class
            take = min(pods, room)
            target[(i, where)] = take
            pods -= take
            if take:
                values.mark_parents(jc.jobset.key, i, problem.parents_of(where))
    return values.solution(problem)
