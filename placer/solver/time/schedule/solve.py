"""When every waiting JobSet starts, decided jointly by CP-SAT: `--schedule cpsat`.

The greedy reservation pass (`reservations.reserve`) walks the queue and gives each JobSet the
earliest slot left; it never holds one back so that two others start sooner, nor picks which
narrow ones to start now because they end before a reservation. This pass decides all start
times at once, over classes of domains (`schedule.problem`), and hands the time-aware pass the
same thing the greedy pass does: a `Reservation` (start and domains) per waiting JobSet. Only
what starts now is committed by the round; the rest become reservations, re-planned next round
with these as the kept ones (`schedule.model.add_stability` says when they move).

Phases (one function each):

  hint         the greedy pass over every waiting JobSet in whole seconds: starving ones first,
               oldest first, then the rest with last round's reservations kept first; a
               complete schedule, and the answer when the model has none
  problem      classes of domains and each JobSet's needs over them (`build_problem`)
  build        the model (`schedule.model.build_schedule`), the hint given whole
  export       with `--export-model PATH`, the model as `PATH` with `00-schedule` before the
               extension (it is solved before the planner's stages, numbered from 01)
  solve        one search, `make_solver(options, "schedule")`, stopped at its time cap or
               once it stalls, or at its deterministic budget when asked to be repeatable
               (`solve_schedule`)
  materialize  the solution's classes turned into domains, JobSets taken by start (any free
               domain of the class does: see `schedule.problem`'s docstring)

Overlapping exclusive keys (two keys whose domains share nodes, a node pool inside a block) are
in the model too: a domain containing others is a class of its own, with a rule that what is
held inside it weighs no more than its nodes, and the domains inside are counted per enclosing
domain (`overlap`, `schedule.model.add_shared`); the materialization then takes domains the
calendar finds free, cells included, so no two JobSets ever hold domains sharing a node at once.

Left to the greedy pass (the outcome says why): an objective that could pass 64 bits
(`schedule.model.objective_fits`); overlapping keys whose shared-cell rule would pass
`schedule.model.OVERLAP_TERMS_LIMIT` terms (a model too big to search in a round); a search that
ends without a schedule (stopped before finding one, or holds the model cannot meet); a class
that runs out of free domains in the materialization, which the model rules out.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from ortools.sat.python import cp_model

from placer.model.options import SolveOptions
from placer.solver.cpsat import export_stage, make_solver, solve_schedule
from placer.solver.time.calendar import Calendar, UnitId
from placer.solver.time.reservations import Reservation, reserve
from placer.solver.time.schedule.model import (
    OVERLAP_TERMS_LIMIT,
    Scheduled,
    build_schedule,
    extract,
    objective_fits,
    overlap_terms,
)
from placer.solver.time.schedule.problem import (
    ScheduleProblem,
    ScheduleRequest,
    build_problem,
    unit_release_s,
)
from placer.solver.time.schedule.starving import starving

__all__ = ["HintChanges", "ScheduleOutcome", "ScheduleRequest", "hint_changes", "schedule"]


@dataclass(frozen=True)
class ScheduleOutcome:
    reservations: tuple[Reservation, ...] | None
    """Per waiting JobSet, as `reserve` gives them; None: no answer, plan with the greedy pass."""
    status: str
    """The search's status (OPTIMAL, FEASIBLE), or why there is no answer."""
    note: str


_CHANGES = re.compile(
    r"the search moved (\d+) of (\d+) starts from the greedy hint, (\d+) into or out of now"
)


@dataclass(frozen=True)
class HintChanges:
    """What the search changed of its greedy hint in one round: how many of the `of` JobSets'
    starts it moved, and how many of those moved into or out of now, the only starts a round
    commits. Said in the schedule's note, so a plan, a controller's log or the over-time
    benchmark tells a round the solver decided from one that kept the greedy pass's answer."""

    moved: int
    of: int
    now: int

    def text(self) -> str:
        return (
            f"the search moved {self.moved} of {self.of} starts from the greedy hint, "
            f"{self.now} into or out of now"
        )

    @classmethod
    def parse(cls, note: str) -> HintChanges | None:
        """The changes a schedule note states, or None for a note that states none."""
        found = _CHANGES.search(note)
        return None if found is None else cls(*(int(g) for g in found.groups()))


def hint_changes(problem: ScheduleProblem, solution: Sequence[Scheduled]) -> HintChanges:
    """How the solution's starts differ from the hint's (`ScheduleJob.hint_start_s`)."""
    hinted = {j.key: j.hint_start_s for j in problem.jobs}
    moved = [s for s in solution if s.start_s != hinted[s.key]]
    now = sum(1 for s in moved if 0 in (s.start_s, hinted[s.key]))
    return HintChanges(moved=len(moved), of=len(solution), now=now)


def _whole_seconds(
    request: ScheduleRequest,
) -> tuple[dict[str, float], list[tuple[UnitId, int, int]]]:
    free_at = {n: math.ceil(f) if math.isfinite(f) else f for n, f in request.free_at.items()}
    holds = [(u, math.floor(s), math.ceil(e)) for u, s, e in request.holds]
    return free_at, holds


def hint(request: ScheduleRequest, old: Sequence[str]) -> dict[str, Reservation]:
    """The greedy pass over every waiting JobSet in whole seconds: starving JobSets (`old`, as
    `starving` gives them) first, oldest first, each at its earliest slot (their last
    reservations are not kept: the slot is the latest start the schedule allows them, so it must
    be as early as the pass can give it), then the others on what is left, last round's
    reservations kept first, in queue order. Not in the order they were promised, as the greedy
    pass keeps them (`reservations.reserve`'s `kept_starts`): the hint is only where the search
    starts, and a hint that pushes a wide JobSet back is one the objective improves on (the
    controller's test of that case passes under `--schedule cpsat` with either order), while
    that order in the hint cost the TPU targets' cell p95 30.45 h -> 33.68 h, and over six seeds
    the p95 mean on both fleets with more seeds past the 5% rule (RESULTS-backfill, round 26)."""
    free_at, holds = _whole_seconds(request)
    rounded = [replace(c, duration_s=float(math.ceil(c.duration_s))) for c in request.candidates]
    by_key = {c.jobset: c for c in rounded}
    first = reserve(
        request.layout,
        [by_key[k] for k in old],
        free_at=free_at,
        holds=[(u, float(s), float(e)) for u, s, e in holds],
    )
    held = [
        (u, float(r.start_s), float(r.end_s))
        for r in first
        if r.start_s is not None and r.end_s is not None
        for group in r.units.values()
        for u in group
    ]
    rest = reserve(
        request.layout,
        [c for c in rounded if c.jobset not in set(old)],
        free_at=free_at,
        holds=[*((u, float(s), float(e)) for u, s, e in holds), *held],
        kept=request.kept,
    )
    return {r.jobset: r for r in (*first, *rest)}


def schedule(request: ScheduleRequest, options: SolveOptions) -> ScheduleOutcome:
    """Start times and domains of every waiting JobSet, or no answer (see the module doc)."""
    old = starving(request)
    hinted = hint(request, old)
    free_at, holds = _whole_seconds(request)
    release = unit_release_s(request.layout, free_at)
    problem = build_problem(request, hinted, release, holds, starving=old)
    if not problem.jobs:
        return ScheduleOutcome(_complete(request, hinted, {}), "OPTIMAL", "schedule: nothing waits")
    if not objective_fits(problem):
        return ScheduleOutcome(None, "FALLBACK", "schedule: objective past 64 bits, greedy")
    terms = overlap_terms(problem)
    if terms > OVERLAP_TERMS_LIMIT:
        why = f"{terms} overlapping-key terms past {OVERLAP_TERMS_LIMIT}"
        return ScheduleOutcome(None, "FALLBACK", f"schedule: {why}, greedy")
    model, variables = build_schedule(problem)
    written = _export(model, options)
    solver = make_solver(options, "schedule")
    status = solver.status_name(solve_schedule(solver, model, options))
    if status not in ("OPTIMAL", "FEASIBLE"):
        return ScheduleOutcome(None, status, f"schedule: {status}, greedy")
    solution = extract(solver, variables)
    placed = materialize(request, problem, solution)
    if placed is None:
        return ScheduleOutcome(None, "FALLBACK", "schedule: no domains for a class, greedy")
    note = (
        f"schedule: {status}, {len(problem.jobs)} JobSets over {len(problem.classes)} classes, "
        + (f"{len(problem.shared)} overlap rules, " if problem.shared else "")
        + f"objective {solver.objective_value:.0f}, bound {solver.best_objective_bound:.0f}, "
        + hint_changes(problem, solution).text()
        + (f", model written to {written}" if written else "")
    )
    return ScheduleOutcome(_complete(request, hinted, placed), status, note)


def _export(model: cp_model.CpModel, options: SolveOptions) -> str | None:
    """`--export-model`: the schedule's model, objective and hint included, for offline
    reproduction (`cpsat/export.py`); it is searched with `make_solver(options, "schedule")`."""
    if not options.export_model_path:
        return None
    model.name = "schedule"
    return export_stage(model, options.export_model_path, 0, "schedule")


def _complete(
    request: ScheduleRequest, hinted: Mapping[str, Reservation], placed: Mapping[str, Reservation]
) -> tuple[Reservation, ...]:
    """Every candidate's reservation, in queue order: the schedule's, else the hint's (a JobSet
    without an exclusive need starts now; one that never fits has none)."""
    return tuple(
        placed.get(c.jobset) or hinted.get(c.jobset) or Reservation(c.jobset, None, None)
        for c in request.candidates
    )


def materialize(
    request: ScheduleRequest, problem: ScheduleProblem, solution: Sequence[Scheduled]
) -> dict[str, Reservation] | None:
    """Domains for the solution's class counts, JobSets taken in order of start (last round's
    domains first for a JobSet that had them); None if a class runs out, which the capacity
    rule rules out."""
    layout = request.layout
    free_at, holds = _whole_seconds(request)
    calendar = Calendar(layout, free_at)
    for unit, start, end in holds:
        calendar.hold(layout.number[unit], start, end)
    masks = {c.index: _mask(c.units) for c in problem.classes}
    jobs = {j.key: j for j in problem.jobs}
    result: dict[str, Reservation] = {}
    for s in sorted(solution, key=lambda s: (s.start_s, s.key)):
        job = jobs[s.key]
        end = s.start_s + job.duration_s
        before = _mask(layout.number[u] for u in request.kept.get(s.key, ()) if u in layout.number)
        units: dict[str, list[int]] = {}
        for (need, cls), count in sorted(s.counts.items()):
            pool = calendar.free_mask(s.start_s, end, masks[cls])
            chosen = calendar.by_preference(pool & before, end, count)
            if len(chosen) < count:
                chosen += calendar.by_preference(pool & ~before, end, count - len(chosen))
            if len(chosen) < count:
                return None
            for u in chosen:
                calendar.hold(u, s.start_s, end)
            units.setdefault(need, []).extend(chosen)
        named = {n: tuple(layout.ids[u] for u in sorted(us)) for n, us in units.items()}
        result[s.key] = Reservation(s.key, float(s.start_s), float(end), named)
    return result


def _mask(numbers: Iterable[int]) -> int:
    mask = 0
    for u in numbers:
        mask |= 1 << u
    return mask
