"""The CP-SAT model of the schedule over time: a flat list of rules over one variable container.

`build_schedule(problem)` reads as the rules it adds, in order, each returning its objective
terms (as `cpsat/builder.py` does for the snapshot model):

  needs          each replicated job gets all its child Jobs, one domain each, from its classes
  topology       with a required topology, all of them inside one enclosing domain
  capacity       per class, at every instant, the JobSets running there plus the domains still
                 busy fit its size (a cumulative: each JobSet all-or-nothing for its expected
                 duration, from its start)
  shared         with overlapping keys, per domain containing others (a block over pools),
                 at every instant the domains held inside it weigh no more than its nodes (a
                 cumulative, as capacity); where keys cross, per set of shared nodes one JobSet
                 holds one of the domains taking them
  starving       a JobSet waiting past a share of `--max-wait` starts no later than its slot in
                 the greedy pass, which reserves starving JobSets first, oldest first
  stability      a JobSet keeps last round's reservation (start and classes) unless moving it
                 gains more than `STABLE_S` of its own weighted wait
  waits          weighted waits: `TIER_RATIO` per priority tier, times the JobSet's bounded-
                 slowdown weight (shorter runs weigh more per second waited) plus its age, each
                 second at the age it will be waited at (`wait_cost`: convex in the start)
  max_wait       seconds past `--max-wait`, weighed above every other term, the longest
                 overshoot above them all

The greedy pass's schedule is given as a complete hint (`add_hint`); `extract` reads a solution.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ortools.sat.python import cp_model

from placer.solver.time.schedule.problem import ScheduleProblem
from placer.solver.time.schedule.wait_cost import (
    TIER_RATIO,
    peak_weight,
    pieces,
    wait_cost,
    wait_weight,
)

__all__ = [
    "OBJECTIVE_LIMIT",
    "OVERLAP_TERMS_LIMIT",
    "STABLE_S",
    "ScheduleVariables",
    "Scheduled",
    "build_schedule",
    "extract",
    "objective_fits",
    "overdue_weight",
    "overlap_terms",
]

OBJECTIVE_LIMIT = 2**62
"""CP-SAT's objective is a 64-bit integer: a model whose worst case passes this is not built."""
OVERLAP_TERMS_LIMIT = 4000
"""With overlapping keys, the most (JobSet, class) pairs the overlap rules may weigh
(`overlap_terms`); past it the greedy pass decides (the outcome says so). Each domain containing
others splits the classes inside it, so a JobSet that could take any pool has a class per block
to choose from. Measured with blocks of 16 pools, 30% of the JobSets per block (2 workers, the 1 s
cap): 340 units and 100 JobSets (2,000 pairs) and 200 JobSets (4,000) were searched in 1.2 s and
1.3 s; 510 units and 200 JobSets (6,000) ended without a schedule, after 1.3 s. The queue's
length weighs too: 300 JobSets over 10 blocks of 32 pools (3,000) ended without one (without
blocks, 300 JobSets over one class of pools took 0.7 s to 0.9 s)."""
STABLE_S = 3600
"""The stability rule: last round's reservation moves only if the new schedule gains more than
an hour of that JobSet's own weighted wait by moving it."""


def overdue_weight(problem: ScheduleProblem) -> int:
    """What a second past `--max-wait` weighs: more than a second of any JobSet's wait, at the
    most its wait can cost within the horizon (`wait_cost.peak_weight`)."""
    horizon = problem.starts[-1]
    return max(peak_weight(j, horizon) for j in problem.jobs) * TIER_RATIO


def objective_fits(problem: ScheduleProblem) -> bool:
    """Whether the objective's largest value stays within `OBJECTIVE_LIMIT`: every term at its
    bound (the last start on offer plus the longest wait so far)."""
    if not problem.jobs:
        return True
    late = problem.starts[-1] + max(j.waited_s for j in problem.jobs)
    top = overdue_weight(problem)
    n = len(problem.jobs)
    peaks = sum(peak_weight(j, problem.starts[-1]) for j in problem.jobs)
    worst = late * (top * (2 * n + 1) + peaks + n * top)
    return worst < OBJECTIVE_LIMIT


@dataclass
class ScheduleVariables:
    """Every decision variable of the schedule model."""

    start: dict[str, cp_model.IntVar] = field(default_factory=dict)
    """JobSet -> its start, seconds after now (0: starts now)."""
    run: dict[str, cp_model.IntervalVar] = field(default_factory=dict)
    """JobSet -> its run, [start, start + expected duration)."""
    take: dict[tuple[str, str, int], cp_model.IntVar] = field(default_factory=dict)
    """(JobSet, replicated job, class) -> its child Jobs on domains of that class."""
    group: dict[tuple[str, str, int], cp_model.IntVar] = field(default_factory=dict)
    """(JobSet, replicated job, enclosing domain number) -> all its child Jobs are inside it."""
    wait_cost: dict[str, cp_model.IntVar] = field(default_factory=dict)
    """JobSet whose weight still ages within the horizon -> what its wait costs (`add_waits`)."""
    overdue: dict[str, cp_model.IntVar] = field(default_factory=dict)
    """JobSet -> seconds its wait would run past `--max-wait`."""
    moved: dict[str, cp_model.IntVar] = field(default_factory=dict)
    """JobSet with last round's reservation -> it no longer keeps it."""
    worst_overdue: cp_model.IntVar | None = None
    """The longest wait past `--max-wait` of any JobSet, seconds."""


@dataclass(frozen=True)
class Scheduled:
    """One JobSet in a solution: its start and child Jobs per (replicated job, class)."""

    key: str
    start_s: int
    counts: Mapping[tuple[str, int], int]


def _variables(model: cp_model.CpModel, problem: ScheduleProblem) -> ScheduleVariables:
    v = ScheduleVariables()
    starts = cp_model.Domain.from_values(list(problem.starts))
    sizes = {c.index: len(c.units) for c in problem.classes}
    for j in problem.jobs:
        v.start[j.key] = model.new_int_var_from_domain(starts, f"start[{j.key}]")
        v.run[j.key] = model.new_fixed_size_interval_var(
            v.start[j.key], j.duration_s, f"run[{j.key}]"
        )
        for n in j.needs:
            for c in n.classes:
                top = min(n.count, sizes[c])
                v.take[(j.key, n.name, c)] = model.new_int_var(
                    0, top, f"take[{j.key},{n.name},{c}]"
                )
            for g, _ in enumerate(n.groups):
                v.group[(j.key, n.name, g)] = model.new_bool_var(f"group[{j.key},{n.name},{g}]")
        if problem.max_wait_s is not None:
            v.overdue[j.key] = model.new_int_var(
                0, problem.starts[-1] + j.waited_s, f"over[{j.key}]"
            )
    return v


def add_needs(
    model: cp_model.CpModel, v: ScheduleVariables, problem: ScheduleProblem
) -> list[cp_model.LinearExprT]:
    """Each replicated job gets all its child Jobs, one domain each, from the classes it fits."""
    for j in problem.jobs:
        for n in j.needs:
            model.add(sum(v.take[(j.key, n.name, c)] for c in n.classes) == n.count)
    return []


def add_topology(
    model: cp_model.CpModel, v: ScheduleVariables, problem: ScheduleProblem
) -> list[cp_model.LinearExprT]:
    """A replicated job with a required topology takes all its domains inside one domain of
    that level."""
    for j in problem.jobs:
        for n in j.needs:
            if not n.groups:
                continue
            model.add_exactly_one(v.group[(j.key, n.name, g)] for g in range(len(n.groups)))
            for c in n.classes:
                inside = [v.group[(j.key, n.name, g)] for g, cs in enumerate(n.groups) if c in cs]
                model.add(v.take[(j.key, n.name, c)] <= n.count * sum(inside))
    return []


def add_capacity(
    model: cp_model.CpModel, v: ScheduleVariables, problem: ScheduleProblem
) -> list[cp_model.LinearExprT]:
    """At every instant, a class's domains taken by running JobSets and by the JobSets the
    schedule runs then number at most its size."""
    for cls in problem.classes:
        intervals: list[cp_model.IntervalVar] = []
        demands: list[cp_model.LinearExprT] = []
        for start, end, count in cls.busy:
            name = f"busy[{cls.index},{start},{end}]"
            intervals.append(model.new_fixed_size_interval_var(start, end - start, name))
            demands.append(count)
        for j in problem.jobs:
            takes = [v.take[(j.key, n.name, cls.index)] for n in j.needs if cls.index in n.classes]
            if takes:
                intervals.append(v.run[j.key])
                name = f"demand[{j.key},{cls.index}]"
                demands.append(_demand(model, takes, len(cls.units), name))
        if intervals:
            model.add_cumulative(intervals, demands, len(cls.units))
    return []


def _demand(
    model: cp_model.CpModel, terms: Sequence[cp_model.LinearExprT], top: int, name: str
) -> cp_model.LinearExprT:
    """One JobSet's demand in a cumulative, which CP-SAT takes affine only (one variable): a
    JobSet taking from one class through two replicated jobs gets a variable for the sum, at
    most `top` (more never fits). Without it such a model was MODEL_INVALID, and the greedy
    pass decided."""
    if len(terms) == 1:
        return terms[0]
    total = model.new_int_var(0, top, name)
    model.add(total == sum(terms))
    return total


def overlap_terms(problem: ScheduleProblem) -> int:
    """The size of the overlapping keys' rules (`add_shared`): per rule, the (JobSet, class)
    pairs it weighs; the schedule falls back past `OVERLAP_TERMS_LIMIT`."""
    if not problem.shared:
        return 0
    taking: dict[int, int] = {}
    for j in problem.jobs:
        for c in {c for n in j.needs for c in n.classes}:
            taking[c] = taking.get(c, 0) + 1
    return sum(taking.get(c, 0) for rule in problem.shared for c, _ in rule.weights)


def add_shared(
    model: cp_model.CpModel, v: ScheduleVariables, problem: ScheduleProblem
) -> list[cp_model.LinearExprT]:
    """Overlapping keys: per rule (`SharedNodes`), at every instant the domains JobSets hold
    among its classes, each weighing its class's weight, weigh at most its cells: a block is
    never held with a pool inside it, by two JobSets or by one. A JobSet's own demand fits
    even for a run of zero seconds, which a cumulative lets through: one term fits by its
    class's bounds (a nest's domain weighs its cells; the domains of a class inside it share no
    node, so together weigh no more), a sum of several is a variable bounded by the cells
    (`_demand`)."""
    for rule in problem.shared:
        weight = dict(rule.weights)
        intervals: list[cp_model.IntervalVar] = []
        demands: list[cp_model.LinearExprT] = []
        for j in problem.jobs:
            terms = [
                weight[c] * v.take[(j.key, n.name, c)]
                for n in j.needs
                for c in n.classes
                if c in weight
            ]
            if not terms:
                continue
            intervals.append(v.run[j.key])
            name = f"shared[{j.key},{rule.weights[0][0]}]"
            demands.append(_demand(model, terms, rule.cells, name))
        if intervals:
            model.add_cumulative(intervals, demands, rule.cells)
    return []


def add_starving(
    model: cp_model.CpModel, v: ScheduleVariables, problem: ScheduleProblem
) -> list[cp_model.LinearExprT]:
    """A starving JobSet (`starving.starving`) starts no later than the greedy pass
    starts it, so the schedule's longest waits are never the greedy pass's plus the weighted
    waits' trades. The hint meets it: the bound is the hint's own start."""
    for j in problem.jobs:
        if j.latest_start_s is not None:
            model.add(v.start[j.key] <= j.latest_start_s)
    return []


def add_not_before(
    model: cp_model.CpModel, v: ScheduleVariables, problem: ScheduleProblem
) -> list[cp_model.LinearExprT]:
    """A JobSet whose pods without an exclusive key have no room before some time starts no
    earlier (`ScheduleJob.earliest_start_s`); its hint does not either."""
    for j in problem.jobs:
        if j.earliest_start_s > 0:
            model.add(v.start[j.key] >= j.earliest_start_s)
    return []


def add_stability(
    model: cp_model.CpModel, v: ScheduleVariables, problem: ScheduleProblem
) -> list[cp_model.LinearExprT]:
    """A JobSet keeps last round's reservation (its start and classes, which the hint carries)
    unless the schedule gains more than `STABLE_S` of its weighted wait by moving it."""
    terms: list[cp_model.LinearExprT] = []
    for j in problem.jobs:
        if not j.kept:
            continue
        moved = v.moved[j.key] = model.new_bool_var(f"moved[{j.key}]")
        model.add(v.start[j.key] == j.hint_start_s).only_enforce_if(moved.Not())
        hinted = {(n, c): k for n, c, k in j.hint_counts}
        for (key, need, c), var in v.take.items():
            if key == j.key:
                model.add(var == hinted.get((need, c), 0)).only_enforce_if(moved.Not())
        terms.append(STABLE_S * wait_weight(j) * moved)
    return terms


def add_waits(
    model: cp_model.CpModel, v: ScheduleVariables, problem: ScheduleProblem
) -> list[cp_model.LinearExprT]:
    """Each second a JobSet waits costs its weight at the age it will have waited it
    (`wait_cost`): a convex curve of its start, taken as the largest of its pieces' lines,
    which is exact at every start. A JobSet whose weight no longer ages has one piece."""
    horizon = problem.starts[-1]
    terms: list[cp_model.LinearExprT] = []
    for j in problem.jobs:
        curve = pieces(j, horizon)
        start = v.start[j.key]
        if len(curve) == 1:
            terms.append(curve[0].weight * start)
            continue
        cost = v.wait_cost[j.key] = model.new_int_var(
            0, wait_cost(j, horizon), f"wait_cost[{j.key}]"
        )
        for p in curve:
            model.add(cost >= p.cost + p.weight * (start - p.from_s))
        terms.append(cost)
    return terms


def add_max_wait(
    model: cp_model.CpModel, v: ScheduleVariables, problem: ScheduleProblem
) -> list[cp_model.LinearExprT]:
    """A JobSet's wait past `--max-wait` (since creation) costs more than any other wait, and
    the longest such overshoot more than all of them together: the schedule first makes the
    longest wait past the maximum as short as it can (the queue's oldest JobSet is never left
    to slip because shorter ones weigh more), then the others, then weighs waits."""
    if problem.max_wait_s is None or not problem.jobs:
        return []
    top = overdue_weight(problem)
    worst = v.worst_overdue = model.new_int_var(
        0, max(problem.starts[-1] + j.waited_s for j in problem.jobs), "worst_over"
    )
    terms: list[cp_model.LinearExprT] = []
    for j in problem.jobs:
        over = v.overdue[j.key]
        model.add(over >= v.start[j.key] + j.waited_s - problem.max_wait_s)
        model.add(worst >= over)
        terms.append(top * over)
    terms.append(top * (len(problem.jobs) + 1) * worst)
    return terms


def add_hint(model: cp_model.CpModel, v: ScheduleVariables, problem: ScheduleProblem) -> None:
    """The greedy pass's schedule (last round's reservations first) as a complete hint."""
    for j in problem.jobs:
        model.add_hint(v.start[j.key], j.hint_start_s)
        hinted = {(n, c): k for n, c, k in j.hint_counts}
        for n in j.needs:
            used = {c for (name, c) in hinted if name == n.name}
            for c in n.classes:
                model.add_hint(v.take[(j.key, n.name, c)], hinted.get((n.name, c), 0))
            for g, cs in enumerate(n.groups):
                model.add_hint(v.group[(j.key, n.name, g)], bool(used) and used <= set(cs))
        if j.key in v.wait_cost:
            model.add_hint(v.wait_cost[j.key], wait_cost(j, j.hint_start_s))
        if j.key in v.overdue:
            late = j.hint_start_s + j.waited_s - (problem.max_wait_s or 0)
            model.add_hint(v.overdue[j.key], max(0, late))
        if j.key in v.moved:
            model.add_hint(v.moved[j.key], False)
    if v.worst_overdue is not None and problem.max_wait_s is not None:
        overshoots = [j.hint_start_s + j.waited_s - problem.max_wait_s for j in problem.jobs]
        model.add_hint(v.worst_overdue, max(0, *overshoots))


def build_schedule(problem: ScheduleProblem) -> tuple[cp_model.CpModel, ScheduleVariables]:
    """The model: variables, then one rule per call, the objective set once, the hint."""
    model = cp_model.CpModel()
    v = _variables(model, problem)
    terms: list[cp_model.LinearExprT] = []
    terms += add_needs(model, v, problem)
    terms += add_topology(model, v, problem)
    terms += add_capacity(model, v, problem)
    terms += add_shared(model, v, problem)
    terms += add_starving(model, v, problem)
    terms += add_not_before(model, v, problem)
    terms += add_stability(model, v, problem)
    terms += add_waits(model, v, problem)
    terms += add_max_wait(model, v, problem)
    model.minimize(sum(terms))
    add_hint(model, v, problem)
    return model, v


def extract(solver: cp_model.CpSolver, v: ScheduleVariables) -> list[Scheduled]:
    """Each JobSet's start and child Jobs per class in the solver's solution."""
    counts: dict[str, dict[tuple[str, int], int]] = {k: {} for k in v.start}
    for (key, need, c), var in v.take.items():
        k = solver.value(var)
        if k:
            counts[key][(need, c)] = int(k)
    return [Scheduled(key, int(solver.value(s)), counts[key]) for key, s in v.start.items()]
