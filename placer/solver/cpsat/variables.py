"""All decision variables of the CP-SAT model, created in one place with readable names."""

from __future__ import annotations

from dataclasses import dataclass, field

from ortools.sat.python import cp_model

from placer.solver.cpsat.aggregate import AggregatedProblem

__all__ = ["Variables", "create_variables"]


@dataclass
class Variables:
    admit: dict[str, cp_model.IntVar] = field(default_factory=dict)
    """JobSet key -> 1 if the whole JobSet is placed (all-or-nothing)."""
    count: dict[tuple[int, str], cp_model.IntVar] = field(default_factory=dict)
    """(JobClass, DomainClass) -> how many of its child Jobs take a domain of that class."""
    shared_in_class: dict[tuple[int, str], cp_model.IntVar] = field(default_factory=dict)
    """(shared JobClass, DomainClass) -> its pods on members of the class left unreserved."""
    shared_in_group: dict[tuple[int, str], cp_model.IntVar] = field(default_factory=dict)
    """(shared JobClass, NodeGroup) -> its pods on the group's nodes."""
    local: dict[tuple[int, str, str], cp_model.IntVar] = field(default_factory=dict)
    """(JobClass, level, enclosing domain id) -> 1 if that JobClass keeps all its Jobs there."""
    span: dict[tuple[str, str, str], cp_model.IntVar] = field(default_factory=dict)
    """(JobSet key, level, enclosing domain id) -> 1 if the JobSet uses any domain inside it."""


def create_variables(model: cp_model.CpModel, problem: AggregatedProblem) -> Variables:
    v = Variables()
    ctx = problem.ctx
    for js in ctx.jobsets:
        v.admit[js.key] = model.new_bool_var(f"admit[{js.key}]")
    for jc in problem.exclusive:
        for c in problem.classes_for(jc):
            ub = min(jc.rjob.replicas, c.size)
            v.count[(jc.index, c.id)] = model.new_int_var(0, ub, f"count[{jc.name},{c.id}]")
    for jc in problem.shared:
        need = jc.rjob.replicas * jc.rjob.pods_per_job
        for c in problem.domain_classes:
            if c.shared_capacity.get(jc.index):
                v.shared_in_class[(jc.index, c.id)] = model.new_int_var(
                    0, min(need, c.size * c.shared_capacity[jc.index]), f"shared[{jc.name},{c.id}]"
                )
        for g in problem.node_groups:
            if g.capacity.get(jc.index):
                v.shared_in_group[(jc.index, g.id)] = model.new_int_var(
                    0, min(need, len(g.nodes) * g.capacity[jc.index]), f"shared[{jc.name},{g.id}]"
                )
    for jc in problem.exclusive:
        for level in {problem.required_level.get(jc.index), problem.preferred_level.get(jc.index)}:
            if level is None:
                continue
            for parent in sorted(
                {c.parents[level] for c in problem.classes_for(jc) if level in c.parents}
            ):
                v.local[(jc.index, level, parent)] = model.new_bool_var(
                    f"local[{jc.name},{level},{parent}]"
                )
    for jc in problem.shared:
        level = jc.rjob.required_topology
        if level is None:
            continue
        parents = {
            c.parents[level]
            for (i, cid) in v.shared_in_class
            if i == jc.index
            for c in problem.domain_classes
            if c.id == cid and level in c.parents
        }
        parents |= {
            g.parents[level]
            for (i, gid) in v.shared_in_group
            if i == jc.index
            for g in problem.node_groups
            if g.id == gid and level in g.parents
        }
        for parent in sorted(parents):
            v.local[(jc.index, level, parent)] = model.new_bool_var(
                f"local[{jc.name},{level},{parent}]"
            )
    for js in ctx.jobsets:
        classes = [jc for jc in ctx.classes_of(js) if jc.exclusive_key]
        if sum(jc.rjob.replicas for jc in classes) < 2:
            continue
        for jc in classes:
            assert jc.exclusive_key is not None
            for level in problem.span_levels.get(jc.exclusive_key, []):
                for c in problem.classes_for(jc):
                    if level in c.parents and (js.key, level, c.parents[level]) not in v.span:
                        v.span[(js.key, level, c.parents[level])] = model.new_bool_var(
                            f"span[{js.key},{level},{c.parents[level]}]"
                        )
    return v
