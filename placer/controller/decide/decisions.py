"""What to place this cycle, and the placement that results: pure functions given a solver.

Phases (each one function):

1. `review`: for every managed JobSet, keep its record while every child Job still fits its domain
   (in force), or mark the child Jobs that lost their domain (broken), or queue it for planning
   (never placed). Finished JobSets hold nothing.
2. `solve_targets`: plan all targets together on the snapshot with every in-force record reserved.
   A broken record is first repaired child Job by child Job (siblings stay where they are); a repair
   that does not fit is retried as a whole-JobSet re-placement, with what the first pass placed now
   reserved too. Each plan is checked against the snapshot it was made on and guarded once more
   here: a new record may never overlap a reserved node.
3. `decisions.plan_writes` (writeplan.py) turns the result into writes.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from placer.controller.decide.domains import HOLD_PREFIX, DomainIndex, hold_token, reserve
from placer.controller.decide.survey import ManagedJobSet
from placer.controller.decide.validity import job_problem, own_usage
from placer.model.assignment import Assignment, JobAssignment
from placer.model.cluster import ClusterSnapshot
from placer.model.options import SolveOptions
from placer.model.plan import JobSetOutcome, Plan
from placer.model.workload import JobSetRequest, child_job_name
from placer.solver.check.checker import check
from placer.solver.interface import Solver

__all__ = ["PlannedRound", "Review", "Target", "held_records", "review", "solve_targets"]

log = logging.getLogger(__name__)


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
) -> Review:
    """`admit`: suspended JobSets to plan all the same (Kueue waits for their placement)."""
    in_force: dict[str, Assignment] = {}
    broken: dict[str, dict[str, str]] = {}
    targets: list[Target] = []
    invalid: dict[str, str] = {}
    for ms in managed:
        if ms.finished:
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
        own = own_usage(ms.pods)
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
        if not problems:
            in_force[ms.key] = ms.assignment
            continue
        broken[ms.key] = problems
        keep = {n: j for n, j in ms.assignment.jobs.items() if n in rjobs and n not in problems}
        request, names = _partial(ms.request, set(problems))
        targets.append(Target(ms, request, names, keep) if keep else Target(ms, ms.request))
    return Review(in_force, broken, targets, invalid)


@dataclass
class PlannedRound:
    """The outcome of one cycle's planning."""

    placed: dict[str, Assignment] = field(default_factory=dict)
    """New records to write."""
    unschedulable: dict[str, str] = field(default_factory=dict)
    plans: list[tuple[Plan, ClusterSnapshot, list[JobSetRequest]]] = field(default_factory=list)
    """Every (plan, snapshot it was made on, requests): what tests and metrics look at."""


def _plan_id(jobs: Mapping[str, JobAssignment]) -> str:
    text = json.dumps(
        {k: v.model_dump(mode="json") for k, v in sorted(jobs.items())}, sort_keys=True
    )
    return hashlib.sha1(text.encode()).hexdigest()[:12]


def _merge(target: Target, outcome: JobSetOutcome, *, pinned: bool) -> Assignment | None:
    """The full record for the JobSet: kept child Jobs plus the newly placed ones."""
    if outcome.status != "placed":
        return None
    part = Assignment.from_outcome(outcome, pinned=pinned)
    jobs = dict(target.keep)
    for name, job in part.jobs.items():
        jobs[target.names.get(name, name)] = job
    request = target.managed.request
    expected = {n for _, _, n in request.child_jobs()} if request else set()
    if set(jobs) != expected:
        log.error(
            "%s: plan covers %s, expected %s; not recorded",
            target.key,
            sorted(jobs),
            sorted(expected),
        )
        return None
    jobs = dict(sorted(jobs.items()))
    return Assignment(jobset=target.key, jobs=jobs, pinned=pinned, plan_id=_plan_id(jobs))


def _holders(
    records: Mapping[str, Mapping[str, JobAssignment]],
    index: DomainIndex,
    foreign: Mapping[str, Mapping[str, JobAssignment]],
) -> dict[str, list[str]]:
    """node -> holder tokens, for every recorded child Job (`records`: JobSet key -> jobs) and
    every child Job held by someone this controller does not manage (`foreign`: holder label ->
    jobs; their tokens never equal a managed child Job's)."""
    result: dict[str, list[str]] = {}
    for key, jobs in sorted(records.items()):
        namespace = key.split("/", 1)[0]
        for name, job in sorted(jobs.items()):
            for node in index.job_nodes(job):
                result.setdefault(node, []).append(hold_token(namespace, name))
    for label, jobs in sorted(foreign.items()):
        for name, job in sorted(jobs.items()):
            for node in index.job_nodes(job):
                result.setdefault(node, []).append(f"{HOLD_PREFIX}{label}:{name}")
    return result


def _overlap(record: Assignment, held: Mapping[str, list[str]], index: DomainIndex) -> str:
    """The first reserved node the record would take, or ""."""
    for name, job in sorted(record.jobs.items()):
        mine = hold_token(record.jobset.split("/", 1)[0], name)
        for node in index.job_nodes(job):
            others = [t for t in held.get(node, ()) if t != mine]
            if others:
                return f"{name} on {node} (held by {others[0]})"
    return ""


def _check(
    plan: Plan, snapshot: ClusterSnapshot, requests: list[JobSetRequest], options: SolveOptions
) -> list[str]:
    return list(check(plan, snapshot, requests, options))


def _solve_pass(
    targets: Sequence[Target],
    records: Mapping[str, Mapping[str, JobAssignment]],
    base: ClusterSnapshot,
    index: DomainIndex,
    solver: Solver,
    options: SolveOptions,
    *,
    pinned: bool,
    result: PlannedRound,
    foreign: Mapping[str, Mapping[str, JobAssignment]],
) -> dict[str, tuple[Assignment | None, str]]:
    held = _holders(records, index, foreign)
    snapshot = reserve(base, held)
    requests = [t.request for t in targets]
    plan = solver.solve(snapshot, requests, options)
    result.plans.append((plan, snapshot, requests))
    # CP-SAT runs the checker itself (its "check" phase); check the others here.
    checked = "check" in plan.solver.phases
    violations = _check(plan, snapshot, requests, options) if options.check and not checked else []
    if violations:
        log.error("plan refused by the checker: %s", "; ".join(violations[:5]))
        return {t.key: (None, "plan refused by the checker: " + violations[0]) for t in targets}
    outcomes: dict[str, tuple[Assignment | None, str]] = {}
    by_key: dict[str, JobSetOutcome] = {}
    for o in plan.jobsets:
        by_key.setdefault(o.key, o)  # the first, as `Plan.outcome` finds it
    for target in targets:
        outcome = by_key.get(target.key)
        if outcome is None:
            outcomes[target.key] = (None, "the solver returned no outcome")
            continue
        record = _merge(target, outcome, pinned=pinned)
        if record is not None:
            clash = _overlap(record, held, index)
            if clash:
                log.error("%s: plan overlaps a reserved domain: %s", target.key, clash)
                record, outcome = (
                    None,
                    outcome.model_copy(
                        update={"reason": f"plan overlaps a reserved domain: {clash}"}
                    ),
                )
        outcomes[target.key] = (record, outcome.reason or outcome.status)
    return outcomes


def held_records(rev: Review) -> dict[str, Mapping[str, JobAssignment]]:
    """JobSet key -> recorded child Jobs the planner holds: records in force, and records being
    repaired (their healthy child Jobs, and the broken ones until a new record replaces them)."""
    records: dict[str, Mapping[str, JobAssignment]] = {k: a.jobs for k, a in rev.in_force.items()}
    for t in rev.targets:
        if t.managed.assignment is not None:
            records[t.key] = t.managed.assignment.jobs
    return records


def solve_targets(
    rev: Review,
    targets: Sequence[Target],
    base: ClusterSnapshot,
    index: DomainIndex,
    solver: Solver,
    options: SolveOptions,
    *,
    pinned: bool,
    foreign: Mapping[str, Mapping[str, JobAssignment]] | None = None,
) -> PlannedRound:
    """Plan `targets` (a subset of `rev.targets`) around the records in force and everything
    `foreign` holds (other controllers' placements, see ledgerplan.view_ledger)."""
    foreign = foreign or {}
    result = PlannedRound()
    if not targets:
        return result
    records = held_records(rev)
    # A whole-JobSet target may reuse its own old domains; a partial one keeps them all reserved.
    whole = {t.key for t in targets if not t.partial}
    first = _solve_pass(
        targets,
        {k: v for k, v in records.items() if k not in whole},
        base,
        index,
        solver,
        options,
        pinned=pinned,
        result=result,
        foreign=foreign,
    )
    retry: list[Target] = []
    for t in targets:
        record, reason = first[t.key]
        if record is not None:
            result.placed[t.key] = record
            records[t.key] = record.jobs
        elif t.partial and t.managed.request is not None:
            retry.append(Target(t.managed, t.managed.request))
        else:
            result.unschedulable[t.key] = reason
    if retry:
        retry_keys = {t.key for t in retry}
        second = _solve_pass(
            retry,
            {k: v for k, v in records.items() if k not in retry_keys},
            base,
            index,
            solver,
            options,
            pinned=pinned,
            result=result,
            foreign=foreign,
        )
        for t in retry:
            record, reason = second[t.key]
            if record is not None:
                result.placed[t.key] = record
            else:
                result.unschedulable[t.key] = reason
    return result
