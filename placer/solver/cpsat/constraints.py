"""The rules of placement, one function per family, each stating its rule in domain words.

`build_model` in planner.py calls these in order. Each returns nothing: hard rules only. The
objective terms live in objectives.py.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict

from ortools.sat.python import cp_model

from placer.solver.cpsat.aggregate import AggregatedProblem
from placer.solver.cpsat.variables import Variables

__all__ = [
    "add_all_or_nothing",
    "add_domain_exclusivity",
    "add_impossible",
    "add_locality",
    "add_overlapping_domains",
    "add_shared_fit",
    "add_strict_fifo",
]


def add_all_or_nothing(model: cp_model.CpModel, v: Variables, problem: AggregatedProblem) -> None:
    """A JobSet runs whole or not at all: every child Job of every replicatedJob gets its place."""
    for jc in problem.exclusive:
        terms = [v.count[(jc.index, c.id)] for c in problem.classes_for(jc)]
        model.add(sum(terms) == jc.rjob.replicas * v.admit[jc.jobset.key])
    for jc in problem.shared:
        pods = [x for (i, _), x in v.shared_in_class.items() if i == jc.index]
        pods += [x for (i, _), x in v.shared_in_group.items() if i == jc.index]
        model.add(sum(pods) == jc.rjob.replicas * jc.rjob.pods_per_job * v.admit[jc.jobset.key])


def add_domain_exclusivity(
    model: cp_model.CpModel, v: Variables, problem: AggregatedProblem
) -> None:
    """Each child Job gets one topology domain to itself: a class has only so many domains."""
    per_class: dict[str, list[cp_model.IntVar]] = defaultdict(list)
    for (_, cid), x in v.count.items():
        per_class[cid].append(x)
    for c in problem.domain_classes:
        if per_class[c.id]:
            model.add(sum(per_class[c.id]) <= c.size)


def add_overlapping_domains(
    model: cp_model.CpModel, v: Variables, problem: AggregatedProblem
) -> None:
    """Domains of different exclusive keys that share a node cannot both be taken, and pods
    without an exclusive key leave a domain alone once an overlapping one is taken."""
    used: dict[str, list[cp_model.IntVar]] = defaultdict(list)
    for (_, cid), x in v.count.items():
        used[cid].append(x)
    shared: dict[str, list[tuple[int, cp_model.IntVar]]] = defaultdict(list)
    for (i, cid), x in v.shared_in_class.items():
        shared[cid].append((i, x))
    room = {c.id: c.shared_capacity for c in problem.domain_classes}
    for a, b in problem.overlaps:
        if used[a] and used[b]:
            model.add(sum(used[a]) + sum(used[b]) <= 1)
        for mine, other in ((a, b), (b, a)):
            for i, x in shared[mine]:
                if used[other]:
                    model.add(x <= room[mine][i] * (1 - sum(used[other])))


def add_shared_fit(model: cp_model.CpModel, v: Variables, problem: AggregatedProblem) -> None:
    """Pods without an exclusive key fit the free room left outside reserved domains.

    Per node group and per domain class: pods of each shape within that shape's capacity, and the
    sum of all shapes' requests within the free resources (a relaxation of per-node packing that
    materialization then checks node by node).
    """
    ctx = problem.ctx
    scale = problem.resource_scale

    def scaled_request(jc_index: int) -> dict[str, int]:
        req = ctx.job_classes[jc_index].rjob.pod.requests
        return {r: math.ceil(q / scale[r]) for r, q in req.items() if r in scale}

    for c in problem.domain_classes:
        taken = [x for (_, cid), x in v.count.items() if cid == c.id]
        left = c.size - sum(taken) if taken else c.size
        shapes = [(i, x) for (i, cid), x in v.shared_in_class.items() if cid == c.id]
        for i, x in shapes:
            model.add(x <= left * c.shared_capacity[i])
        if len(shapes) > 1:
            for r, free in c.shared_resources.items():
                terms = [int(scaled_request(i).get(r, 0)) * x for i, x in shapes]
                model.add(sum(terms) <= left * free)
    for g in problem.node_groups:
        shapes = [(i, x) for (i, gid), x in v.shared_in_group.items() if gid == g.id]
        if len(shapes) > 1:
            for r, free in g.resources.items():
                terms = [int(scaled_request(i).get(r, 0)) * x for i, x in shapes]
                model.add(sum(terms) <= len(g.nodes) * free)


def add_locality(model: cp_model.CpModel, v: Variables, problem: AggregatedProblem) -> None:
    """Kueue required topology: all child Jobs of the replicatedJob inside one higher domain.

    Preferred topology gets the same indicator variables, but only as an objective term; and every
    JobSet's span indicators are raised by any child Job placed inside that higher domain.
    """
    for jc in problem.exclusive:
        for level in {problem.required_level.get(jc.index), problem.preferred_level.get(jc.index)}:
            if level is None:
                continue
            choices = {p: x for (i, lv, p), x in v.local.items() if i == jc.index and lv == level}
            for c in problem.classes_for(jc):
                parent = c.parents.get(level)
                if parent is None:
                    model.add(v.count[(jc.index, c.id)] == 0)
                else:
                    model.add(v.count[(jc.index, c.id)] <= jc.rjob.replicas * choices[parent])
            if problem.required_level.get(jc.index) == level:
                model.add(sum(choices.values()) == v.admit[jc.jobset.key])
    _add_shared_locality(model, v, problem)
    for jc in problem.exclusive:
        assert jc.exclusive_key is not None
        for level in problem.span_levels.get(jc.exclusive_key, []):
            for c in problem.classes_for(jc):
                z = v.span.get((jc.jobset.key, level, c.parents.get(level, "")))
                if z is not None:
                    model.add(v.count[(jc.index, c.id)] <= jc.rjob.replicas * z)


def _add_shared_locality(model: cp_model.CpModel, v: Variables, problem: AggregatedProblem) -> None:
    """Pods without an exclusive key but with a required topology stay in one such domain."""
    parents_of = {c.id: c.parents for c in problem.domain_classes}
    parents_of.update({g.id: g.parents for g in problem.node_groups})
    for jc in problem.shared:
        level = jc.rjob.required_topology
        if level is None:
            continue
        choices = {p: x for (i, lv, p), x in v.local.items() if i == jc.index and lv == level}
        need = jc.rjob.replicas * jc.rjob.pods_per_job
        for (i, where), x in [*v.shared_in_class.items(), *v.shared_in_group.items()]:
            if i != jc.index:
                continue
            parent = parents_of[where].get(level)
            if parent is None:
                model.add(x == 0)
            else:
                model.add(x <= need * choices[parent])
        model.add(sum(choices.values()) == v.admit[jc.jobset.key])


def add_strict_fifo(model: cp_model.CpModel, v: Variables, problem: AggregatedProblem) -> None:
    """With `--queue strict-fifo`, a JobSet is admitted only if every earlier one of its tier is."""
    if problem.ctx.options.queue != "strict-fifo":
        return
    jobsets = problem.ctx.jobsets
    for earlier, later in itertools.pairwise(jobsets):
        if earlier.priority == later.priority:
            model.add(v.admit[later.key] <= v.admit[earlier.key])


def add_impossible(model: cp_model.CpModel, v: Variables, problem: AggregatedProblem) -> None:
    """JobSets found unplaceable before solving (or with a child Job no domain fits) stay out."""
    for key in problem.impossible:
        model.add(v.admit[key] == 0)
    for jc in problem.exclusive:
        if not problem.classes_for(jc):
            model.add(v.admit[jc.jobset.key] == 0)
