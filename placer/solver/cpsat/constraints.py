"""The rules of placement, one function per family, each stating its rule in domain words.

`build_model` (builder.py) calls these in order. Each returns nothing: hard rules only (the
objective terms live in objectives.py). A family reads the mode from the variables it finds: copy
counts in `admit` (copies mode), a guarded target's `placed` counts and literals (explain).
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict

from ortools.sat.python import cp_model

from placer.solver.context import JobClass
from placer.solver.cpsat.problem import AggregatedProblem
from placer.solver.cpsat.variables import Variables, placement_of

__all__ = [
    "add_admitted_guards",
    "add_all_or_nothing",
    "add_copy_locality",
    "add_domain_exclusivity",
    "add_domains_used",
    "add_eviction",
    "add_hosts_used",
    "add_impossible",
    "add_locality",
    "add_overlapping_domains",
    "add_podset_groups",
    "add_shared_fit",
    "add_strict_fifo",
]


def add_eviction(model: cp_model.CpModel, v: Variables, problem: AggregatedProblem) -> None:
    """Preemption: a domain a running JobSet holds is used only if that JobSet is evicted, whole
    (one literal per JobSet, so never a part of it); and a JobSet is evicted only if some domain
    it holds is used (an eviction that frees no needed domain is never chosen). A running JobSet
    that is also in the queue (defrag) is moved: evicted exactly when it is placed again."""
    victims = problem.ctx.victims
    if victims is not None and victims.moves:
        for key in victims.running:
            if key in v.admit and key not in v.evict:  # protected, or frees nothing usable
                model.add(v.admit[key] == 0)
    if not v.evict:
        return
    usage: dict[str, list[cp_model.IntVar]] = defaultdict(list)
    for (_, cid), x in (*v.count.items(), *v.shared_in_class.items()):
        usage[cid].append(x)
    freed: dict[str, list[cp_model.IntVar]] = defaultdict(list)
    for c in problem.domain_classes:
        for key in c.evicts:
            for x in usage[c.id]:
                model.add(x == 0).only_enforce_if(~v.evict[key])
            freed[key].extend(usage[c.id])
    for key, lit in v.evict.items():
        model.add(sum(freed[key], cp_model.LinearExpr.constant(0)) >= lit)
        if key in v.admit:  # defrag: a running JobSet in the queue moves, re-placed whole
            model.add(v.admit[key] == lit)


def add_all_or_nothing(model: cp_model.CpModel, v: Variables, problem: AggregatedProblem) -> None:
    """A JobSet runs whole or not at all: every child Job of every replicatedJob gets its place
    (per copy, in copies mode). For a guarded target, "all" is a requirement behind a literal."""
    for jc in (*problem.exclusive, *problem.shared):
        per_job = 1 if jc.exclusive_key else jc.rjob.pods_per_job
        placed = placement_of(v, problem, jc)
        if jc.index in v.placed:
            model.add(placed == per_job * v.placed[jc.index])
            model.add(v.placed[jc.index] == jc.rjob.replicas).only_enforce_if(
                v.replicas_guard[jc.index]
            )
        else:
            model.add(placed == jc.rjob.replicas * per_job * v.admit[jc.jobset.key])


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
    for a, b in problem.overlaps:
        if used[a] and used[b]:
            model.add(sum(used[a]) + sum(used[b]) <= 1)
        for mine, other in ((a, b), (b, a)):
            room = problem.class_by_id(mine).shared_capacity
            for i, x in shared[mine]:
                if used[other]:
                    model.add(x <= room[i] * (1 - sum(used[other])))


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

    taken_in: dict[str, list[cp_model.IntVar]] = defaultdict(list)
    for (_, cid), x in v.count.items():
        taken_in[cid].append(x)
    shared_in: dict[str, list[tuple[int, cp_model.IntVar]]] = defaultdict(list)
    for (i, where), x in (*v.shared_in_class.items(), *v.shared_in_group.items()):
        shared_in[where].append((i, x))
    for c in problem.domain_classes:
        taken = taken_in[c.id]
        left = c.size - sum(taken) if taken else c.size
        shapes = shared_in[c.id]
        for i, x in shapes:
            model.add(x <= left * c.shared_capacity[i])
        if len(shapes) > 1:
            for r, free in c.shared_resources.items():
                terms = [int(scaled_request(i).get(r, 0)) * x for i, x in shapes]
                model.add(sum(terms) <= left * free)
    for g in problem.node_groups:
        shapes = shared_in[g.id]
        if len(shapes) > 1:
            for r, free in g.resources.items():
                terms = [int(scaled_request(i).get(r, 0)) * x for i, x in shapes]
                model.add(sum(terms) <= len(g.nodes) * free)


def add_locality(model: cp_model.CpModel, v: Variables, problem: AggregatedProblem) -> None:
    """Kueue required topology: all child Jobs of the replicatedJob inside one higher domain.

    Preferred topology gets the same indicator variables, but only as an objective term; and every
    JobSet's span indicators are raised by any child Job placed inside that higher domain. For a
    guarded target the required topology is a requirement behind its literal.
    """
    for jc in problem.exclusive:
        if jc.index in v.locality_guard:
            _guarded_exclusive_locality(model, v, problem, jc)
        required = problem.required_level.get(jc.index)
        for level in {required, problem.preferred_level.get(jc.index)}:
            if level is None or (level == required and jc.index in v.locality_guard):
                continue
            choices = {p: x for (i, lv, p), x in v.local.items() if i == jc.index and lv == level}
            for c in problem.classes_for(jc):
                parent = c.parents.get(level)
                if parent is None:
                    model.add(v.count[(jc.index, c.id)] == 0)
                else:
                    model.add(v.count[(jc.index, c.id)] <= jc.rjob.replicas * choices[parent])
            if required == level:
                model.add(sum(choices.values()) == v.admit[jc.jobset.key])
    _add_shared_locality(model, v, problem)
    for jc in problem.exclusive:
        assert jc.exclusive_key is not None
        for level in problem.span_levels.get(jc.exclusive_key, ()):
            for c in problem.classes_for(jc):
                z = v.span.get((jc.jobset.key, level, c.parents.get(level, "")))
                if z is not None:
                    model.add(v.count[(jc.index, c.id)] <= jc.rjob.replicas * z)


def _guarded_exclusive_locality(
    model: cp_model.CpModel, v: Variables, problem: AggregatedProblem, jc: JobClass
) -> None:
    """The target's required topology behind its literal: with it, all its child Jobs in one
    domain of the level (or none placed, when the level does not hold whole domains of its key)."""
    guard = v.locality_guard[jc.index]
    level = jc.rjob.required_topology
    if problem.required_level.get(jc.index) != level:
        if level == jc.exclusive_key and jc.rjob.replicas == 1:
            return
        model.add(placement_of(v, problem, jc) == 0).only_enforce_if(guard)
        return
    choices = {p: x for (i, lv, p), x in v.local.items() if i == jc.index and lv == level}
    for c in problem.classes_for(jc):
        parent = c.parents.get(level) if level else None
        x = v.count[(jc.index, c.id)]
        if parent is None or parent not in choices:
            model.add(x == 0).only_enforce_if(guard)
        else:
            model.add(x <= jc.rjob.replicas * choices[parent]).only_enforce_if(guard)
    model.add(sum(choices.values(), cp_model.LinearExpr.constant(0)) <= 1)


def _add_shared_locality(model: cp_model.CpModel, v: Variables, problem: AggregatedProblem) -> None:
    """Pods without an exclusive key but with a required topology stay in one such domain."""
    for jc in problem.shared:
        level = jc.rjob.required_topology
        if level is None:
            continue
        guard = v.locality_guard.get(jc.index)
        choices = {p: x for (i, lv, p), x in v.local.items() if i == jc.index and lv == level}
        need = jc.rjob.replicas * jc.rjob.pods_per_job
        for (i, where), x in [*v.shared_in_class.items(), *v.shared_in_group.items()]:
            if i != jc.index:
                continue
            parent = problem.parents_of(where).get(level)
            ct = model.add(x == 0) if parent is None else model.add(x <= need * choices[parent])
            if guard is not None:
                ct.only_enforce_if(guard)
        if guard is None:
            model.add(sum(choices.values()) == v.admit[jc.jobset.key])
        else:
            model.add(sum(choices.values(), cp_model.LinearExpr.constant(0)) <= 1)


def add_podset_groups(model: cp_model.CpModel, v: Variables, problem: AggregatedProblem) -> None:
    """A podset group's leader and workers share one domain of their required level (Kueue
    computes one assignment for the pair); where only one of them could go, neither goes."""
    done: set[int] = set()
    for jc in problem.shared:
        group = problem.ctx.podset_group(jc)
        level = jc.rjob.required_topology
        if group is None or level is None or group[0].index in done:
            continue
        workers, leader = group
        done.add(workers.index)
        mine = {p: x for (i, lv, p), x in v.local.items() if i == workers.index and lv == level}
        theirs = {p: x for (i, lv, p), x in v.local.items() if i == leader.index and lv == level}
        for parent in sorted(mine.keys() | theirs.keys()):
            if parent in mine and parent in theirs:
                model.add(mine[parent] == theirs[parent])
            else:
                model.add((mine[parent] if parent in mine else theirs[parent]) == 0)


def add_domains_used(model: cp_model.CpModel, v: Variables, problem: AggregatedProblem) -> None:
    """A shared Kueue replicated job uses a domain of a packing level when any of its pods sits
    inside it, and a domain only inside a used domain of the level above (what the packing
    objective counts, `objectives.domains_used`).

    Stated per domain, its pods there within its room there times the literal, so the linear
    relaxation already knows how many domains the pods need."""
    if not v.used:
        return
    inside: dict[tuple[int, str, str], list[cp_model.IntVar]] = defaultdict(list)
    room: dict[tuple[int, str, str], int] = defaultdict(int)
    nested: set[tuple[tuple[int, str, str], tuple[int, str, str]]] = set()
    for (i, where), x in (*v.shared_in_class.items(), *v.shared_in_group.items()):
        parents = problem.parents_of(where)
        keys = [(i, lv, parents[lv]) for lv in problem.packing_levels.get(i, ()) if lv in parents]
        for key in keys:
            inside[key].append(x)
            room[key] += problem.shared_room(i, where)
        nested.update(itertools.pairwise(keys))
    for key, xs in sorted(inside.items()):
        jc = problem.ctx.job_classes[key[0]]
        need = jc.rjob.replicas * jc.rjob.pods_per_job
        model.add(sum(xs) <= min(need, room[key]) * v.used[key])
    for outer, inner in sorted(nested):
        model.add_implication(v.used[inner], v.used[outer])


def add_hosts_used(model: cp_model.CpModel, v: Variables, problem: AggregatedProblem) -> None:
    """A shared Kueue replicated job's pods in a node group fill whole nodes of it: at least
    pods / (pods per node) of its nodes hold them (what `objectives.hosts_used` counts)."""
    for (i, gid), hosts in v.hosts.items():
        per_node = problem.group_by_id(gid).capacity[i]
        model.add(per_node * hosts >= v.shared_in_group[(i, gid)])


def add_copy_locality(model: cp_model.CpModel, v: Variables, problem: AggregatedProblem) -> None:
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
            m = v.copies_in[(jc.index, level, parent)]
            model.add(sum(counts) == jc.rjob.replicas * m)
            inside.append(m)
        model.add(sum(inside, cp_model.LinearExpr.constant(0)) == v.admit[jc.jobset.key])


def add_strict_fifo(model: cp_model.CpModel, v: Variables, problem: AggregatedProblem) -> None:
    """With `--queue strict-fifo`, a JobSet is admitted only if every earlier one of its tier is."""
    if problem.ctx.options.queue != "strict-fifo":
        return
    jobsets = problem.ctx.jobsets
    for earlier, later in itertools.pairwise(jobsets):
        if earlier.priority == later.priority:
            model.add(v.admit[later.key] <= v.admit[earlier.key])


def add_impossible(model: cp_model.CpModel, v: Variables, problem: AggregatedProblem) -> None:
    """JobSets found unplaceable before solving (or with a child Job no domain fits) stay out.

    A guarded target is left to its requirements: which of them cannot hold is the question."""
    guarded = {problem.ctx.job_classes[i].jobset.key for i in v.placed}
    for key in problem.impossible:
        if key not in guarded:
            model.add(v.admit[key] == 0)
    for jc in problem.exclusive:
        if not problem.classes_for(jc) and jc.jobset.key not in guarded:
            model.add(v.admit[jc.jobset.key] == 0)


def add_admitted_guards(model: cp_model.CpModel, v: Variables, problem: AggregatedProblem) -> None:
    """A JobSet the plan placed stays admitted (anywhere it fits), behind its literal."""
    for key, lit in v.admitted_guard.items():
        model.add(v.admit[key] == 1).only_enforce_if(lit)
