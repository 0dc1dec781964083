"""The review phase: which records still hold, which broke, what is left to plan. Pure.

For every managed JobSet, `review` keeps its record while every child Job still fits its domain (in
force), or marks the child Jobs that lost their domain (broken: only those are re-planned, their
siblings stay), or queues it for planning (never placed). Finished JobSets hold nothing; a manifest
that does not parse is reported, and its record (if any) kept. `held_records` is what planning
must plan around. The plan phase (planning.py) takes it from here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from placer.controller.decide.observe.domains import DomainIndex, JobsByHolder
from placer.controller.decide.observe.survey import ManagedJobSet, PodEntry
from placer.controller.decide.observe.validity import job_problem, own_usage
from placer.model.assignment import Assignment, JobAssignment
from placer.model.options import SolveOptions
from placer.model.workload import JobSetRequest, child_job_name

__all__ = ["Review", "Target", "held_records", "review"]


@dataclass(frozen=True)
class Target:
    """One thing to plan: a whole JobSet, or only its child Jobs that lost their domain."""

    managed: ManagedJobSet
    request: JobSetRequest
    """What the solver sees: the JobSet, or a copy holding only the child Jobs to re-place."""
    names: Mapping[str, str] = field(default_factory=dict)
    """Child Job name in `request` -> real child Job name (partial targets renumber indices)."""
    keep: Mapping[str, JobAssignment] = field(default_factory=dict)
    """Child Jobs that stay where the record has them."""
    restore: bool = False
    """Every child Job goes back where an earlier record had them (Kueue re-admitted the
    JobSet and its old domains are free): nothing to solve, the record is committed again once
    planning finds it clear of every hold and reservation (planning.solve_targets)."""

    @property
    def key(self) -> str:
        return self.managed.key

    @property
    def partial(self) -> bool:
        return bool(self.keep)


@dataclass(frozen=True)
class Review:
    in_force: dict[str, Assignment]
    """Records kept as they are (valid, or not checkable because the manifest does not parse)."""
    broken: dict[str, dict[str, str]]
    """JobSet -> child Job -> why its domain no longer holds it."""
    targets: list[Target]
    invalid: dict[str, str]
    """JobSet -> why its manifest cannot be planned."""


def _partial(request: JobSetRequest, jobs: set[str]) -> tuple[JobSetRequest, dict[str, str]]:
    """A request holding only `jobs`, renumbered from 0 per replicatedJob, and the name map."""
    rjobs, names = [], {}
    for rj in request.replicated_jobs:
        idxs = [i for i in range(rj.replicas) if child_job_name(request.name, rj.name, i) in jobs]
        if not idxs:
            continue
        rjobs.append(rj.model_copy(update={"replicas": len(idxs)}))
        for k, i in enumerate(idxs):
            names[child_job_name(request.name, rj.name, k)] = child_job_name(
                request.name, rj.name, i
            )
    return request.model_copy(update={"replicated_jobs": tuple(rjobs)}), names


def review(
    managed: Sequence[ManagedJobSet],
    index: DomainIndex,
    options: SolveOptions,
    *,
    admit: frozenset[str] = frozenset(),
    lent: Mapping[str, Sequence[PodEntry]] | None = None,
) -> Review:
    """`admit`: suspended JobSets to plan all the same (Kueue waits for their placement); one
    that still has the record of an earlier admission gets those domains back when every one is
    free (a `restore` target), else is planned anew. `lent`: a JobSet placed by preemption ->
    the pods of its victims still on its domains (preempting.py); the room they take is counted
    as its own, so its record holds while they terminate. A JobSet being evicted is neither
    held nor planned."""
    lent = lent or {}
    in_force: dict[str, Assignment] = {}
    broken: dict[str, dict[str, str]] = {}
    targets: list[Target] = []
    invalid: dict[str, str] = {}
    for ms in managed:
        if ms.finished or ms.evicting:
            continue
        if ms.request is None:
            invalid[ms.key] = ms.error
            if ms.assignment is not None:
                in_force[ms.key] = ms.assignment
            continue
        if ms.assignment is None:
            if not ms.suspended or ms.key in admit:
                targets.append(Target(ms, ms.request))
            continue
        own = own_usage([*ms.pods, *lent.get(ms.key, ())])
        problems: dict[str, str] = {}
        rjobs = {name: rj for rj, _, name in ms.request.child_jobs()}
        for name, rj in rjobs.items():
            job = ms.assignment.jobs.get(name)
            why = (
                "not in the placement record"
                if job is None
                else job_problem(
                    job,
                    rj,
                    index,
                    own,
                    extended_resource_toleration=options.extended_resource_toleration,
                )
            )
            if why:
                problems[name] = why
        if ms.key in admit and not ms.committed:
            # Kueue re-admitted it: the record is its last admission's, released on eviction.
            # Every old domain still free: back there; else planned anew, holding nothing.
            if problems:
                targets.append(Target(replace(ms, assignment=None), ms.request))
            else:
                kept = {n: j for n, j in ms.assignment.jobs.items() if n in rjobs}
                targets.append(Target(ms, ms.request, keep=kept, restore=True))
            continue
        if not problems:
            in_force[ms.key] = ms.assignment
            continue
        broken[ms.key] = problems
        keep = {n: j for n, j in ms.assignment.jobs.items() if n in rjobs and n not in problems}
        request, names = _partial(ms.request, set(problems))
        targets.append(Target(ms, request, names, keep) if keep else Target(ms, ms.request))
    return Review(in_force, broken, targets, invalid)


def held_records(rev: Review) -> JobsByHolder:
    """JobSet key -> recorded child Jobs the planner holds: records in force, and records being
    repaired (their healthy child Jobs, and the broken ones until a new record replaces them)."""
    records: dict[str, Mapping[str, JobAssignment]] = {k: a.jobs for k, a in rev.in_force.items()}
    for t in rev.targets:
        if t.managed.assignment is not None:
            records[t.key] = t.managed.assignment.jobs
    return records
