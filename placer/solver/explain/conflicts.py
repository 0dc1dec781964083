"""Which requirements cannot hold together: a minimal conflict set found with CP-SAT assumptions.

When a JobSet is left out because of the interplay of rules (all-or-nothing across its replicated
jobs, required locality, the JobSets the plan admitted first), counting domains by reason does not
say which rules collide. This module builds the planner's model (`build_model` with `Guards`: same
aggregation, same families) for the target JobSet and every JobSet the plan placed, with each
*requirement* behind an assumption literal:

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
from dataclasses import dataclass

from ortools.sat.python import cp_model

from placer.model.cluster import ClusterSnapshot
from placer.model.options import SolveOptions
from placer.model.workload import JobSetRequest
from placer.solver.context import PlacementContext
from placer.solver.cpsat import BuiltModel, Guards, aggregate, build_model, make_solver
from placer.solver.explain.result import Conflict, Requirement

__all__ = ["ConflictInputs", "find_conflict", "max_replicas", "min_drops"]


@dataclass(frozen=True)
class ConflictInputs:
    snapshot: ClusterSnapshot
    target: JobSetRequest
    others: tuple[JobSetRequest, ...]
    """JobSets the plan placed (the target excluded)."""
    options: SolveOptions


@dataclass(frozen=True)
class _GuardedModel:
    built: BuiltModel
    literals: dict[str, cp_model.IntVar]
    """requirement id -> its assumption literal, in requirement order."""
    requirements: dict[str, Requirement]

    @property
    def model(self) -> cp_model.CpModel:
        return self.built.model


def _relation(target: JobSetRequest, other: JobSetRequest, queue: list[str]) -> str:
    if other.priority > target.priority:
        return f"higher priority {other.priority} > {target.priority}"
    if other.priority < target.priority:
        return f"lower priority {other.priority} < {target.priority}"
    earlier = queue.index(other.key) < queue.index(target.key)
    return f"same priority {other.priority}, {'earlier' if earlier else 'later'} in the queue"


def _build(inputs: ConflictInputs) -> _GuardedModel:
    """The guarded model: facts as hard constraints, each requirement behind its own literal."""
    options = inputs.options.model_copy(update={"queue": "priority", "export_model_path": None})
    ctx = PlacementContext(inputs.snapshot, [inputs.target, *inputs.others], options)
    guards = Guards(target=inputs.target.key, admitted=tuple(o.key for o in inputs.others))
    built = build_model(aggregate(ctx), "admission", guards)
    literals = built.literals()
    queue = [js.key for js in ctx.jobsets]
    others = {o.key: o for o in inputs.others}
    requirements: dict[str, Requirement] = {}
    for jc in ctx.job_classes:
        if jc.jobset.key != inputs.target.key:
            continue
        rjob = jc.rjob
        where = (
            f"each on its own domain of {jc.exclusive_key}"
            if jc.exclusive_key
            else f"{rjob.pods_per_job} pods each, sharing nodes"
        )
        requirements[f"replicas:{rjob.name}"] = Requirement(
            id=f"replicas:{rjob.name}",
            kind="replicas",
            jobset=jc.jobset.key,
            replicated_job=rjob.name,
            text=f"{jc.jobset.key} {rjob.name}: all {rjob.replicas} child Jobs placed ({where})",
        )
        if rjob.required_topology:
            requirements[f"locality:{rjob.name}"] = Requirement(
                id=f"locality:{rjob.name}",
                kind="locality",
                jobset=jc.jobset.key,
                replicated_job=rjob.name,
                text=f"{jc.jobset.key} {rjob.name}: every child Job inside one domain of "
                f"{rjob.required_topology} (required topology)",
            )
    for rid in literals:
        if rid.startswith("admitted:"):
            other = others[rid.removeprefix("admitted:")]
            requirements[rid] = Requirement(
                id=rid,
                kind="admitted",
                jobset=other.key,
                text=f"{other.key} stays admitted ({_relation(inputs.target, other, queue)})",
            )
    ordered = {rid: requirements[rid] for rid in literals}
    return _GuardedModel(built, literals, ordered)


def _placed_of(m: _GuardedModel, rjob: str) -> cp_model.IntVar | None:
    """The target's count of child Jobs placed for replicated job `rjob`."""
    v = m.built.variables
    for jc in m.built.problem.ctx.job_classes:
        if jc.index in v.placed and jc.rjob.name == rjob:
            return v.placed[jc.index]
    return None


def _check(m: _GuardedModel, ids: Sequence[str], options: SolveOptions) -> tuple[str, list[str]]:
    """Under the given assumptions: ("infeasible", core ids) | ("feasible", []) |
    ("unknown", [what CP-SAT said]) when it decided nothing (out of time, or MODEL_INVALID)."""
    m.model.clear_assumptions()
    m.model.add_assumptions([m.literals[i] for i in ids])
    solver = make_solver(options, "conflict")
    status = solver.solve(m.model)
    if status == cp_model.INFEASIBLE:
        by_index = {m.literals[i].index: i for i in ids}
        core = [by_index[k] for k in solver.sufficient_assumptions_for_infeasibility()]
        return "infeasible", [i for i in ids if i in core] or list(ids)
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return "feasible", []
    if status == cp_model.MODEL_INVALID:
        return "unknown", [f"CP-SAT rejected the model (MODEL_INVALID: {solver.solution_info()})"]
    return "unknown", ["the solver ran out of time before deciding"]


def _deletion_order(m: _GuardedModel, target: JobSetRequest) -> list[str]:
    """Which requirement to try dropping first: others' admissions, lowest priority first, then
    the target's locality, then its replica counts; what survives is what the conflict needs."""
    admitted = [r for r in m.requirements.values() if r.kind == "admitted"]
    prio = {js.key: js.priority for js in m.built.problem.ctx.jobsets}
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
        return Conflict(status="unknown", text=core[0])
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
    placed = _placed_of(m, rjob)
    if placed is None:
        return None
    keep = [i for i in m.literals if i != f"replicas:{rjob}"]
    m.model.add_assumptions([m.literals[i] for i in keep])
    m.model.maximize(placed)
    solver = make_solver(inputs.options, "conflict")
    status = solver.solve(m.model)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    return int(solver.value(placed))


def min_drops(inputs: ConflictInputs, candidates: Sequence[str]) -> list[str] | None:
    """Fewest of the `candidates` (JobSet keys the plan placed) to leave out so that the target
    gets everything it asks; fewer accelerators break ties. None when dropping all does not help."""
    m = _build(inputs)
    droppable = {f"admitted:{k}" for k in candidates}
    keep = [i for i in m.literals if i not in droppable]
    m.model.add_assumptions([m.literals[i] for i in keep])
    units = {js.key: js.accelerator_units for js in inputs.others}
    big = sum(units.values()) + 1
    admit = m.built.variables.admit
    dropped = {k: 1 - admit[k] for k in candidates if f"admitted:{k}" in m.literals}
    m.model.minimize(
        sum(
            ((big + units[k]) * x for k, x in dropped.items()),
            cp_model.LinearExpr.constant(0),
        )
    )
    solver = make_solver(inputs.options, "conflict")
    status = solver.solve(m.model)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    return sorted(k for k in dropped if not solver.value(admit[k]))
