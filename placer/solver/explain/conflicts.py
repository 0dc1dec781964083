"""Which requirements cannot hold together: a minimal conflict set found with CP-SAT assumptions.

When a JobSet is left out because of the interplay of rules (all-or-nothing across its replicated
jobs, required locality, the JobSets the plan admitted first), counting domains by reason does not
say which rules collide. This module builds the planner's model (same aggregation, same fit and
exclusivity families) for the target JobSet and every JobSet the plan placed, and guards each
*requirement* with an assumption literal:

- `replicas:<rjob>`   the target's replicated job gets all its child Jobs (all-or-nothing);
- `locality:<rjob>`   ... all inside one domain of its required topology level;
- `admitted:<key>`    a JobSet the plan placed stays admitted (anywhere it fits).

Facts of the cluster (free capacity, running JobSets' holds, exclusivity) are not guarded. Solving
with every literal assumed true is infeasible when the target cannot join; CP-SAT names a
sufficient subset (`sufficient_assumptions_for_infeasibility`), which deletion then shrinks to a
minimal one: dropping any single requirement of the result makes the rest satisfiable. The same
model answers two remedy questions by optimization: the most child Jobs a replicated job can get
(`max_replicas`) and the fewest named JobSets to drop (`min_drops`); remedies are still checked by
re-planning.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ortools.sat.python import cp_model

from placer.model.cluster import ClusterSnapshot
from placer.model.options import SolveOptions
from placer.model.workload import JobSetRequest
from placer.solver.context import JobClass, PlacementContext
from placer.solver.cpsat import constraints
from placer.solver.cpsat.aggregate import AggregatedProblem, aggregate
from placer.solver.cpsat.variables import Variables, create_variables
from placer.solver.explain.result import Conflict, Requirement

__all__ = ["ConflictInputs", "find_conflict", "max_replicas", "min_drops"]

_MAX_SOLVE_S = 10.0


@dataclass(frozen=True)
class ConflictInputs:
    snapshot: ClusterSnapshot
    target: JobSetRequest
    others: tuple[JobSetRequest, ...]
    """JobSets the plan placed (the target excluded)."""
    options: SolveOptions


@dataclass
class _Model:
    model: cp_model.CpModel
    problem: AggregatedProblem
    v: Variables
    literals: dict[str, cp_model.IntVar] = field(default_factory=dict)
    """requirement id -> its assumption literal, in requirement order."""
    requirements: dict[str, Requirement] = field(default_factory=dict)
    placed: dict[str, cp_model.IntVar] = field(default_factory=dict)
    """target's replicated job -> child Jobs of it placed."""


def _relation(target: JobSetRequest, other: JobSetRequest, queue: list[str]) -> str:
    if other.priority > target.priority:
        return f"higher priority {other.priority} > {target.priority}"
    if other.priority < target.priority:
        return f"lower priority {other.priority} < {target.priority}"
    earlier = queue.index(other.key) < queue.index(target.key)
    return f"same priority {other.priority}, {'earlier' if earlier else 'later'} in the queue"


def _build(inputs: ConflictInputs) -> _Model:
    """The guarded model: facts as hard constraints, each requirement behind its own literal."""
    options = inputs.options.model_copy(update={"queue": "priority", "export_model_path": None})
    ctx = PlacementContext(inputs.snapshot, [inputs.target, *inputs.others], options)
    problem = aggregate(ctx)
    model = cp_model.CpModel()
    v = create_variables(model, problem)
    m = _Model(model, problem, v)
    constraints.add_domain_exclusivity(model, v, problem)
    constraints.add_overlapping_domains(model, v, problem)
    constraints.add_shared_fit(model, v, problem)
    target = inputs.target.key
    for jc in ctx.job_classes:
        if jc.jobset.key == target:
            _target_class(m, jc)
        else:
            model.add(_placed_expr(m, jc) == jc.rjob.replicas * v.admit[jc.jobset.key])
            _locality(m, jc, None)
    queue = [js.key for js in ctx.jobsets]
    for other in sorted(inputs.others, key=lambda j: queue.index(j.key)):
        rid = f"admitted:{other.key}"
        lit = model.new_bool_var(rid)
        model.add(v.admit[other.key] == 1).only_enforce_if(lit)
        m.literals[rid] = lit
        m.requirements[rid] = Requirement(
            id=rid,
            kind="admitted",
            jobset=other.key,
            text=f"{other.key} stays admitted ({_relation(inputs.target, other, queue)})",
        )
    return m


def _placed_expr(m: _Model, jc: JobClass) -> cp_model.LinearExprT:
    """Child Jobs of `jc` placed: domains counted, or shared pods / pods per child Job."""
    if jc.exclusive_key:
        return sum(
            (m.v.count[(jc.index, c.id)] for c in m.problem.classes_for(jc)),
            cp_model.LinearExpr.constant(0),
        )
    pods = [
        x
        for (i, _), x in (*m.v.shared_in_class.items(), *m.v.shared_in_group.items())
        if i == jc.index
    ]
    return sum(pods, cp_model.LinearExpr.constant(0))


def _target_class(m: _Model, jc: JobClass) -> None:
    rjob = jc.rjob
    n = m.model.new_int_var(0, rjob.replicas, f"placed[{jc.name}]")
    m.placed[rjob.name] = n
    per_job = 1 if jc.exclusive_key else rjob.pods_per_job
    m.model.add(_placed_expr(m, jc) == per_job * n)
    rid = f"replicas:{rjob.name}"
    lit = m.model.new_bool_var(rid)
    m.model.add(n == rjob.replicas).only_enforce_if(lit)
    m.literals[rid] = lit
    where = (
        f"each on its own domain of {jc.exclusive_key}"
        if jc.exclusive_key
        else f"{rjob.pods_per_job} pods each, sharing nodes"
    )
    m.requirements[rid] = Requirement(
        id=rid,
        kind="replicas",
        jobset=jc.jobset.key,
        replicated_job=rjob.name,
        text=f"{jc.jobset.key} {rjob.name}: all {rjob.replicas} child Jobs placed ({where})",
    )
    level = rjob.required_topology
    if level:
        lid = f"locality:{rjob.name}"
        guard = m.model.new_bool_var(lid)
        m.literals[lid] = guard
        m.requirements[lid] = Requirement(
            id=lid,
            kind="locality",
            jobset=jc.jobset.key,
            replicated_job=rjob.name,
            text=f"{jc.jobset.key} {rjob.name}: every child Job inside one domain of {level} "
            "(required topology)",
        )
        _locality(m, jc, guard)


def _locality(m: _Model, jc: JobClass, guard: cp_model.IntVar | None) -> None:
    """Required topology for `jc`: as the planner states it, or behind `guard` for the target."""
    level = jc.rjob.required_topology
    if not level:
        return
    model, v, problem = m.model, m.v, m.problem
    choices = {p: x for (i, lv, p), x in v.local.items() if i == jc.index and lv == level}
    conditional: list[cp_model.Constraint] = []
    if jc.exclusive_key:
        if problem.required_level.get(jc.index) != level:
            if level == jc.exclusive_key and jc.rjob.replicas == 1:
                return
            # the level does not hold whole domains of the key: the child Jobs cannot share one
            conditional.append(model.add(_placed_expr(m, jc) == 0))
        else:
            for c in problem.classes_for(jc):
                parent = c.parents.get(level)
                x = v.count[(jc.index, c.id)]
                if parent is None or parent not in choices:
                    conditional.append(model.add(x == 0))
                else:
                    conditional.append(model.add(x <= jc.rjob.replicas * choices[parent]))
    else:
        parents_of = {c.id: c.parents for c in problem.domain_classes}
        parents_of.update({g.id: g.parents for g in problem.node_groups})
        need = jc.rjob.replicas * jc.rjob.pods_per_job
        for (i, where), x in [*v.shared_in_class.items(), *v.shared_in_group.items()]:
            if i != jc.index:
                continue
            parent = parents_of[where].get(level)
            if parent is None or parent not in choices:
                conditional.append(model.add(x == 0))
            else:
                conditional.append(model.add(x <= need * choices[parent]))
    if guard is None:
        model.add(sum(choices.values(), cp_model.LinearExpr.constant(0)) == v.admit[jc.jobset.key])
        return
    for ct in conditional:
        ct.only_enforce_if(guard)
    model.add(sum(choices.values(), cp_model.LinearExpr.constant(0)) <= 1)


def _solver(options: SolveOptions) -> cp_model.CpSolver:
    """One worker: assumption cores and their minimization are then reproducible."""
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = min(options.time_limit_s, _MAX_SOLVE_S)
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = options.seed
    return solver


def _check(m: _Model, ids: Sequence[str], options: SolveOptions) -> tuple[str, list[str]]:
    """("infeasible", core ids) | ("feasible", []) | ("unknown", []) under the given assumptions."""
    m.model.clear_assumptions()
    m.model.add_assumptions([m.literals[i] for i in ids])
    solver = _solver(options)
    status = solver.solve(m.model)
    if status == cp_model.INFEASIBLE:
        by_index = {m.literals[i].index: i for i in ids}
        core = [by_index[k] for k in solver.sufficient_assumptions_for_infeasibility()]
        return "infeasible", [i for i in ids if i in core] or list(ids)
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return "feasible", []
    return "unknown", []


def _deletion_order(m: _Model, target: JobSetRequest) -> list[str]:
    """Which requirement to try dropping first: others' admissions, lowest priority first, then
    the target's locality, then its replica counts; what survives is what the conflict needs."""
    admitted = [r for r in m.requirements.values() if r.kind == "admitted"]
    prio = {js.key: js.priority for js in m.problem.ctx.jobsets}
    admitted.sort(key=lambda r: (prio[r.jobset], r.id))
    rest = [r for r in m.requirements.values() if r.kind == "locality"]
    rest += [r for r in m.requirements.values() if r.kind == "replicas"]
    return [r.id for r in (*admitted, *rest)]


def find_conflict(inputs: ConflictInputs) -> Conflict:
    """A minimal set of requirements that cannot all hold, or why there is none."""
    m = _build(inputs)
    ids = list(m.literals)
    status, core = _check(m, ids, inputs.options)
    if status == "feasible":
        return Conflict(
            status="no-conflict",
            text=f"a plan exists that admits {inputs.target.key} beside every JobSet the plan "
            "placed; the solver's choice left it out (queue order, or a greedy solver)",
        )
    if status == "unknown":
        return Conflict(status="unknown", text="the solver ran out of time before deciding")
    minimal = True
    current = list(core)
    for rid in _deletion_order(m, inputs.target):
        if rid not in current:
            continue
        trial = [i for i in current if i != rid]
        status, smaller = _check(m, trial, inputs.options)
        if status == "infeasible":
            current = smaller
        elif status == "unknown":
            minimal = False
    order = {rid: k for k, rid in enumerate(m.literals)}
    chosen = [m.requirements[i] for i in sorted(current, key=order.__getitem__)]
    if all(r.jobset == inputs.target.key for r in chosen):
        text = "cannot hold even on the cluster as it stands, with no other pending JobSet"
    else:
        text = "cannot all hold at once; dropping any one of them lets the rest hold"
    return Conflict(status="conflict", requirements=chosen, minimal=minimal, text=text)


def max_replicas(inputs: ConflictInputs, rjob: str) -> int | None:
    """Most child Jobs replicated job `rjob` of the target can get while every other requirement
    holds; None if the question has no answer in time (or the rest fails even at zero)."""
    m = _build(inputs)
    if rjob not in m.placed:
        return None
    keep = [i for i in m.literals if i != f"replicas:{rjob}"]
    m.model.add_assumptions([m.literals[i] for i in keep])
    m.model.maximize(m.placed[rjob])
    solver = _solver(inputs.options)
    status = solver.solve(m.model)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    return int(solver.value(m.placed[rjob]))


def min_drops(inputs: ConflictInputs, candidates: Sequence[str]) -> list[str] | None:
    """Fewest of the `candidates` (JobSet keys the plan placed) to leave out so that the target
    gets everything it asks; fewer accelerators break ties. None when dropping all does not help."""
    m = _build(inputs)
    droppable = {f"admitted:{k}" for k in candidates}
    keep = [i for i in m.literals if i not in droppable]
    m.model.add_assumptions([m.literals[i] for i in keep])
    units = {js.key: js.accelerator_units for js in inputs.others}
    big = sum(units.values()) + 1
    dropped = {k: 1 - m.v.admit[k] for k in candidates if f"admitted:{k}" in m.literals}
    m.model.minimize(
        sum(
            ((big + units[k]) * x for k, x in dropped.items()),
            cp_model.LinearExpr.constant(0),
        )
    )
    solver = _solver(inputs.options)
    status = solver.solve(m.model)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    return sorted(k for k in dropped if not solver.value(m.v.admit[k]))
