"""All decision variables of the CP-SAT model, created in one place with readable names.

One container serves every question asked of the model (`ModelMode`):
- `admission`: which JobSets run, `admit` is 0/1 (the planner; explain conflicts add `Guards`);
- `copies`:    how many whole copies of each JobSet fit, `admit` is a copy count (capacity);
- `partial`:   how many child Jobs of each JobClass the cluster can take, with no admission at all;
               the caller places the rest elsewhere (cheapest: on node pools it buys).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Generic, Literal, TypeVar

from ortools.sat.python import cp_model

from placer.solver.context import JobClass
from placer.solver.cpsat.problem import AggregatedProblem

__all__ = [
    "FAMILIES",
    "MAX_COPIES",
    "Families",
    "Guards",
    "ModelMode",
    "Variables",
    "copies_upper_bound",
    "create_variables",
    "placement_of",
]

ModelMode = Literal["admission", "copies", "partial"]
T = TypeVar("T")

MAX_COPIES = 10_000
"""Upper bound on copies of one JobSet in `copies` mode (the counting question needs one)."""


@dataclass(frozen=True)
class Guards:
    """Requirements put behind enforcement literals, so CP-SAT can say which ones conflict.

    The target's requirements (all child Jobs of each replicated job placed; all inside one domain
    of its required topology) and the admission of each JobSet in `admitted` each get a literal;
    everything else (free capacity, running JobSets, exclusivity) stays a hard fact.
    """

    target: str
    """JobSet key whose own requirements are guarded."""
    admitted: tuple[str, ...] = ()
    """JobSet keys whose admission is a guarded requirement (`admitted:<key>`)."""


@dataclass(frozen=True)
class Families(Generic[T]):
    """The planner's decision families, each keyed as the model keys it, spelled once: the model's
    variables (`Variables`, `T` an `IntVar`) and a solution's values (`solution.Solution`, `T` an
    int) are both families, so a hint, a stage's answer and a plan's counts cannot disagree on a
    key. The mappings are filled while a model or a solution is made, never replaced."""

    admit: dict[str, T] = field(default_factory=dict)
    """JobSet key -> 1 if the whole JobSet is placed (all-or-nothing); copies in `copies` mode."""
    count: dict[tuple[int, str], T] = field(default_factory=dict)
    """(JobClass, DomainClass) -> how many of its child Jobs take a domain of that class."""
    shared_in_class: dict[tuple[int, str], T] = field(default_factory=dict)
    """(shared JobClass, DomainClass) -> its pods on members of the class left unreserved."""
    shared_in_group: dict[tuple[int, str], T] = field(default_factory=dict)
    """(shared JobClass, NodeGroup) -> its pods on the group's nodes."""
    local: dict[tuple[int, str, str], T] = field(default_factory=dict)
    """(JobClass, level, enclosing domain id) -> 1 if that JobClass keeps all its Jobs there."""
    span: dict[tuple[str, str, str], T] = field(default_factory=dict)
    """(JobSet key, level, enclosing domain id) -> 1 if the JobSet uses any domain inside it."""
    used: dict[tuple[int, str, str], T] = field(default_factory=dict)
    """(shared Kueue JobClass, level, domain id) -> 1 if any of its pods is inside that domain."""
    hosts: dict[tuple[int, str], T] = field(default_factory=dict)
    """(shared Kueue JobClass, NodeGroup) -> nodes of the group holding its pods there."""
    evict: dict[str, T] = field(default_factory=dict)
    """Running JobSet key (a victim candidate) -> 1 if the plan evicts it, whole (preemption)."""


FAMILIES: tuple[str, ...] = tuple(f.name for f in fields(Families))
"""The families' names, in model order: what a solution reads and a hint sets."""


@dataclass(frozen=True)
class Variables(Families[cp_model.IntVar]):
    """Every decision variable of one model: the planner's families, and those only the
    counting (`copies`) and explaining (`Guards`) questions ask for."""

    copies_in: dict[tuple[int, str, str], cp_model.IntVar] = field(default_factory=dict)
    """`copies` mode: (JobClass, level, enclosing domain id) -> whole copies of it in there."""
    placed: dict[int, cp_model.IntVar] = field(default_factory=dict)
    """Guarded target's JobClass -> child Jobs of it placed (all-or-nothing is a requirement)."""
    replicas_guard: dict[int, cp_model.IntVar] = field(default_factory=dict)
    """Guarded target's JobClass -> literal: all its child Jobs are placed."""
    locality_guard: dict[int, cp_model.IntVar] = field(default_factory=dict)
    """Guarded target's JobClass -> literal: its child Jobs share one required-topology domain."""
    admitted_guard: dict[str, cp_model.IntVar] = field(default_factory=dict)
    """JobSet key -> literal: it stays admitted."""

    def literals(self, problem: AggregatedProblem) -> dict[str, cp_model.IntVar]:
        """Requirement id -> its literal, in requirement order: the target's replicated jobs
        (`replicas:<rjob>`, then `locality:<rjob>`), then `admitted:<key>` in queue order."""
        result: dict[str, cp_model.IntVar] = {}
        for jc in problem.ctx.job_classes:
            if jc.index in self.replicas_guard:
                result[f"replicas:{jc.rjob.name}"] = self.replicas_guard[jc.index]
            if jc.index in self.locality_guard:
                result[f"locality:{jc.rjob.name}"] = self.locality_guard[jc.index]
        for key, lit in self.admitted_guard.items():
            result[f"admitted:{key}"] = lit
        return result


def copies_upper_bound(problem: AggregatedProblem, key: str) -> int:
    """Copies of one JobSet that could fit if nothing else were placed: a bound for the variable."""
    bound = MAX_COPIES
    for jc in problem.exclusive:
        if jc.jobset.key == key:
            domains = sum(c.size for c in problem.classes_for(jc))
            bound = min(bound, domains // jc.rjob.replicas)
    for jc in problem.shared:
        if jc.jobset.key == key:
            pods = sum(c.size * c.shared_capacity.get(jc.index, 0) for c in problem.domain_classes)
            pods += sum(len(g.nodes) * g.capacity.get(jc.index, 0) for g in problem.node_groups)
            bound = min(bound, pods // (jc.rjob.replicas * jc.rjob.pods_per_job))
    return max(bound, 0)


def placement_of(v: Variables, problem: AggregatedProblem, jc: JobClass) -> cp_model.LinearExpr:
    """Child Jobs of `jc` placed (domains counted), or for a shared JobClass its pods placed."""
    zero = cp_model.LinearExpr.constant(0)
    if jc.exclusive_key:
        return sum((v.count[(jc.index, c.id)] for c in problem.classes_for(jc)), zero)
    pods = [x for (i, _), x in v.shared_in_class.items() if i == jc.index]
    pods += [x for (i, _), x in v.shared_in_group.items() if i == jc.index]
    return sum(pods, zero)


def create_variables(
    model: cp_model.CpModel,
    problem: AggregatedProblem,
    mode: ModelMode = "admission",
    guards: Guards | None = None,
) -> Variables:
    v = Variables()
    _admission(model, problem, mode, v)
    _placement(model, problem, mode, v)
    if mode == "admission":
        _evictions(model, problem, v)
        _locality(model, problem, v)
        _spans(model, problem, v)
        _used(model, problem, v)
    elif mode == "copies":
        _copies_in(model, problem, v)
    if guards is not None:
        _guards(model, problem, guards, v)
    return v


def _admission(
    model: cp_model.CpModel, problem: AggregatedProblem, mode: ModelMode, v: Variables
) -> None:
    for js in problem.ctx.jobsets:
        if mode == "admission":
            v.admit[js.key] = model.new_bool_var(f"admit[{js.key}]")
        elif mode == "copies":
            ub = copies_upper_bound(problem, js.key)
            v.admit[js.key] = model.new_int_var(0, ub, f"copies[{js.key}]")


def _evictions(model: cp_model.CpModel, problem: AggregatedProblem, v: Variables) -> None:
    """One literal per victim candidate holding a domain of the problem."""
    for key in sorted({k for c in problem.domain_classes for k in c.evicts}):
        v.evict[key] = model.new_bool_var(f"evict[{key}]")


def _placement(
    model: cp_model.CpModel, problem: AggregatedProblem, mode: ModelMode, v: Variables
) -> None:
    """Counts per class and shared pods per class or group; in `copies` mode bounded by the
    class alone (many copies), otherwise also by one JobSet's demand."""
    copies = mode == "copies"
    for jc in problem.exclusive:
        for c in problem.classes_for(jc):
            ub = c.size if copies else min(jc.rjob.replicas, c.size)
            v.count[(jc.index, c.id)] = model.new_int_var(0, ub, f"count[{jc.name},{c.id}]")
    victims = problem.ctx.victims
    for jc in problem.shared:
        need = jc.rjob.replicas * jc.rjob.pods_per_job
        for c in problem.domain_classes:
            # a class's domains share their reservations (`aggregate.domain_classes`), and a
            # victim's domains open only to a JobSet that may evict it, as for exclusive child
            # Jobs (`PlacementContext.domain_open_to`; materialization keeps to it node by node)
            closed = problem.ctx.reserved_against(c.members[0], jc.jobset) or (
                victims is not None
                and not all(victims.can_evict(jc.jobset.key, k) for k in c.evicts)
            )
            if c.shared_capacity.get(jc.index) and not closed:
                room = problem.shared_room(jc.index, c.id)
                v.shared_in_class[(jc.index, c.id)] = model.new_int_var(
                    0, room if copies else min(need, room), f"shared[{jc.name},{c.id}]"
                )
        for g in problem.node_groups:
            if g.capacity.get(jc.index):
                room = problem.shared_room(jc.index, g.id)
                v.shared_in_group[(jc.index, g.id)] = model.new_int_var(
                    0, room if copies else min(need, room), f"shared[{jc.name},{g.id}]"
                )


def _locality(model: cp_model.CpModel, problem: AggregatedProblem, v: Variables) -> None:
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
        wheres = [cid for (i, cid) in v.shared_in_class if i == jc.index]
        wheres += [gid for (i, gid) in v.shared_in_group if i == jc.index]
        parents = {problem.parents_of(w)[level] for w in wheres if level in problem.parents_of(w)}
        for parent in sorted(parents):
            v.local[(jc.index, level, parent)] = model.new_bool_var(
                f"local[{jc.name},{level},{parent}]"
            )


def _spans(model: cp_model.CpModel, problem: AggregatedProblem, v: Variables) -> None:
    ctx = problem.ctx
    for js in ctx.jobsets:
        classes = [jc for jc in ctx.classes_of(js) if jc.exclusive_key]
        if sum(jc.rjob.replicas for jc in classes) < 2:
            continue
        for jc in classes:
            assert jc.exclusive_key is not None
            for level in problem.span_levels.get(jc.exclusive_key, ()):
                for c in problem.classes_for(jc):
                    if level in c.parents and (js.key, level, c.parents[level]) not in v.span:
                        v.span[(js.key, level, c.parents[level])] = model.new_bool_var(
                            f"span[{js.key},{level},{c.parents[level]}]"
                        )


def _used(model: cp_model.CpModel, problem: AggregatedProblem, v: Variables) -> None:
    """For shared Kueue JobClasses: one literal per domain of a packing level where the class has
    room, and a node count per node group where it has room."""
    wheres: dict[int, list[str]] = {i: [] for i in problem.packing_levels}
    for i, where in (*v.shared_in_class, *v.shared_in_group):
        if i in wheres:
            wheres[i].append(where)
    for i, levels in problem.packing_levels.items():
        name = problem.ctx.job_classes[i].name
        for level in levels:
            parents = {p for w in wheres[i] if (p := problem.parents_of(w).get(level)) is not None}
            for parent in sorted(parents):
                v.used[(i, level, parent)] = model.new_bool_var(f"used[{name},{level},{parent}]")
        for g in problem.node_groups:
            if (i, g.id) in v.shared_in_group:
                v.hosts[(i, g.id)] = model.new_int_var(0, len(g.nodes), f"hosts[{name},{g.id}]")


def _copies_in(model: cp_model.CpModel, problem: AggregatedProblem, v: Variables) -> None:
    for jc in problem.exclusive:
        level = problem.required_level.get(jc.index)
        if level is None:
            continue
        parents = {c.parents[level] for c in problem.classes_for(jc) if level in c.parents}
        for parent in sorted(parents):
            v.copies_in[(jc.index, level, parent)] = model.new_int_var(
                0, MAX_COPIES, f"copies_in[{jc.name},{level},{parent}]"
            )


def _guards(
    model: cp_model.CpModel, problem: AggregatedProblem, guards: Guards, v: Variables
) -> None:
    ctx = problem.ctx
    for jc in ctx.job_classes:
        if jc.jobset.key != guards.target:
            continue
        rjob = jc.rjob
        v.placed[jc.index] = model.new_int_var(0, rjob.replicas, f"placed[{jc.name}]")
        v.replicas_guard[jc.index] = model.new_bool_var(f"replicas:{rjob.name}")
        if rjob.required_topology:
            v.locality_guard[jc.index] = model.new_bool_var(f"locality:{rjob.name}")
    queue = [js.key for js in ctx.jobsets]
    for key in sorted(guards.admitted, key=queue.index):
        v.admitted_guard[key] = model.new_bool_var(f"admitted:{key}")
