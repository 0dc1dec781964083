"""The plan phase: what the solver is given, one call for every due target, and what it placed.

Pure given a solver:

1. `planning_inputs`: one frozen `PlanningInputs` for the round: the snapshot with the ledger's
   reservations (honored by every solver) and, with time-aware planning on, running JobSets'
   timing and each hold's expected end (reserving.running_timing); the options with the planning
   instant; the records and foreign holds to plan around, and the managed JobSets' recorded
   pods that size them. Without reservations or time-aware planning, the observed snapshot and
   options as they are: such a cycle does no extra work.
2. `solve_targets`: plan all targets together with every held record reserved (heldnodes.py:
   exclusive domains whole, records of pods without an exclusive key their pods' room). A broken
   record is first repaired child Job by child Job (siblings stay where they are); a repair that
   does not fit is retried as a whole-JobSet re-placement, with what the first pass placed now
   reserved too. Each plan is checked against the snapshot it was made on (by the prepared
   solver) and guarded once more here: a new record may never take a node another hold takes
   whole, nor an exclusive child Job one any other hold covers (`heldnodes.overlap`).
   With `--preemption`, the victims preempting.eligibility found are offered to the solver to
   evict instead of held (their recorded pods not bound yet counted as their own usage, their
   exclusive domains closed to pods without an exclusive key in their name: heldnodes.py); the
   plan's evictions travel in `PlannedRound.evictions`.
   A placement whose record its JobSet cannot carry (records/recordsize.py) is refused here and
   the round planned again without that JobSet: refused only at the commit, it would be planned
   first in every cycle and hold domains a JobSet behind it could take.

The commit phase (ledgerplan.ledger_change) and the write phase (writeplan.plan_writes) take the
`PlannedRound` from here.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from placer.controller.decide.observe.domains import DomainIndex, JobsByHolder, holds
from placer.controller.decide.observed import Reviewed
from placer.controller.decide.plan.heldnodes import (
    RecordedPods,
    held_from_now,
    held_nodes,
    held_snapshot,
    overlap,
    recorded_pods,
    shapes_without_a_key,
    victims_unbound,
    victims_whole,
)
from placer.controller.decide.plan.reserving import running_timing, snapshot_reservations
from placer.controller.decide.preempting import Victim, chosen_evictions, evictable_snapshot
from placer.controller.decide.records.ledger import LedgerEntry
from placer.controller.decide.records.recordsize import no_room_for_a_record, record_too_large
from placer.controller.decide.review.review import Target, held_records
from placer.model.assignment import Assignment, JobAssignment
from placer.model.cluster import NODE_RESERVATION_KEY, ClusterSnapshot
from placer.model.options import SolveOptions
from placer.model.plan import DomainRef, JobSetOutcome, Plan
from placer.model.workload import JobSetRequest
from placer.solver.interface import Solver
from placer.solver.registry import InvalidPlanError

__all__ = [
    "PlanRecord",
    "PlannedRound",
    "PlanningInputs",
    "planning_inputs",
    "solve_targets",
]

log = logging.getLogger(__name__)

PlanRecord = tuple[Plan, ClusterSnapshot, list[JobSetRequest]]
"""One solver call: the plan, the snapshot it was made on, the requests it was given."""


@dataclass(frozen=True)
class PlanningInputs:
    """Everything one round's planning reads, fixed before the first solver call."""

    snapshot: ClusterSnapshot
    """The planner's snapshot, with reservations and (time-aware planning) running timing."""
    index: DomainIndex
    """The observed snapshot's domains (holds and overlaps are looked up in it)."""
    options: SolveOptions
    """The cycle's options; with time-aware planning, at the round's planning instant."""
    records: JobsByHolder
    """JobSet key -> its recorded child Jobs held while planning (review.held_records)."""
    foreign: JobsByHolder = field(default_factory=dict)
    """Holder label -> child Jobs held by placements this controller does not manage."""
    pinned: bool = False
    """New records also pin each pod to the node the plan gave it."""
    victims: Mapping[str, Victim] = field(default_factory=dict)
    """`--preemption`: running JobSets the solver may evict (preempting.eligibility)."""
    no_preempt: frozenset[str] = frozenset()
    """Pending JobSets that never preempt (Kueue manages them)."""
    pods: RecordedPods = field(default_factory=RecordedPods)
    """The managed JobSets' pods without an exclusive key: what their holds take of a node
    (heldnodes.py). Empty: every hold takes its nodes whole."""


def planning_inputs(reviewed: Reviewed, *, pinned: bool) -> PlanningInputs:
    """The round's `PlanningInputs` (see the module docstring)."""
    observed, view, options = reviewed.observed, reviewed.ledger, reviewed.options
    records = held_records(reviewed.review)
    snapshot, policy = observed.snapshot, options.time
    if view.reserved or policy.active:
        update: dict[str, object] = {
            "reservations": snapshot_reservations(view.reserved.values(), reviewed.wall_s)
        }
        if policy.active:
            taken = holds(records, view.foreign)
            update["running"] = running_timing(observed.state, snapshot, taken, observed.pods)
            instant = datetime.fromtimestamp(reviewed.wall_s, UTC)
            options = options.model_copy(
                update={"time": policy.model_copy(update={"now": instant})}
            )
        snapshot = snapshot.model_copy(update=update)
    eligible = reviewed.eligibility
    return PlanningInputs(
        snapshot=snapshot,
        index=observed.index,
        options=options,
        records=records,
        foreign=view.foreign,
        pinned=pinned,
        victims=eligible.victims if eligible is not None else {},
        no_preempt=eligible.no_preempt if eligible is not None else frozenset(),
        pods=recorded_pods(observed.managed),
    )


@dataclass(frozen=True)
class PlannedRound:
    """The outcome of one round's planning (and, once committed, of its commit)."""

    placed: Mapping[str, Assignment] = field(default_factory=dict)
    """New records to write (after the commit phase: only those the ledger took)."""
    unschedulable: Mapping[str, str] = field(default_factory=dict)
    plans: tuple[PlanRecord, ...] = ()
    """Every (plan, snapshot it was made on, requests): what tests and metrics look at."""
    reserved: Mapping[str, LedgerEntry] = field(default_factory=dict)
    """Reservations this round committed new or on other domains (entry key -> entry): one
    `Reserved` event each. Set by the commit phase."""
    behind: Mapping[str, JobSetOutcome] = field(default_factory=dict)
    """JobSets whose Kueue Workload waits for quota -> when each could start were its quota
    reserved now, behind this round (kueue.eta.estimate_behind); nothing is reserved for them."""
    evictions: Mapping[str, LedgerEntry] = field(default_factory=dict)
    """`--preemption`: victim key -> its eviction entry, for victims evicted to make room for a
    JobSet placed here (preempting.py). After the commit phase: only those the ledger took, with
    their time."""

    def refusing(self, refused: Mapping[str, str]) -> PlannedRound:
        """This round with the placements the ledger's final check refused made unschedulable."""
        if not refused:
            return self
        return replace(
            self,
            placed={k: a for k, a in self.placed.items() if k not in refused},
            unschedulable={
                **self.unschedulable,
                **{k: f"not committed: {why}" for k, why in refused.items()},
            },
        )


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


def _solve_pass(
    targets: Sequence[Target], records: JobsByHolder, inputs: PlanningInputs, solver: Solver
) -> tuple[dict[str, tuple[Assignment | None, str]], dict[str, LedgerEntry], PlanRecord | None]:
    """One solver call for `targets` around `records` and the foreign holds: JobSet key ->
    (its new record, or None and why), the evictions it makes (victim -> entry), and the call
    itself (None: its plan failed the check).

    `solver` comes prepared (`placer.solver.registry`: the controller's always is), so every plan
    is checked against the snapshot it was made on; a plan the checker rejects leaves every
    target unschedulable with the first violation as the reason, rather than stopping the cycle.
    With `--preemption`, the eligible victims among `records` are not held but offered to the
    solver to evict (preempting.evictable_snapshot); a new record may overlap only the victims
    its plan evicts."""
    index, options = inputs.index, inputs.options
    victims = (
        {k: v for k, v in inputs.victims.items() if k in records}
        if options.preemption.active
        else {}
    )
    kept = {k: v for k, v in records.items() if k not in victims}
    held = held_nodes(kept, inputs.foreign, index, inputs.pods)
    snapshot = held_snapshot(inputs.snapshot, held)
    shared = shapes_without_a_key(t.request for t in targets)
    if shared:
        snapshot = held_from_now(snapshot, held.whole, options, shared)
    if options.preemption.active:
        snapshot = evictable_snapshot(snapshot, index, victims, records)
        offered = {k: records[k] for k in victims}
        snapshot = victims_unbound(snapshot, offered, inputs.pods)
        if shared:
            snapshot = held_from_now(snapshot, victims_whole(offered, index), options, shared)
    requests = [
        t.request.model_copy(update={"never_preempts": True})
        if t.key in inputs.no_preempt
        else t.request
        for t in targets
    ]
    try:
        plan = solver.solve(snapshot, requests, options)
    except InvalidPlanError as e:  # the solver is prepared (registry): it checks every plan
        log.error("plan refused by the checker: %s", "; ".join(e.violations[:5]))
        refused = "plan refused by the checker: " + e.violations[0]
        return {t.key: (None, refused) for t in targets}, {}, None
    call = (plan, snapshot, requests)
    evicted = {p.key for p in plan.preempted if p.key in victims}
    if victims:
        # a record may take only what its plan evicts: every other victim is held again
        held = held_nodes(
            {k: v for k, v in records.items() if k not in evicted},
            inputs.foreign,
            index,
            inputs.pods,
        )
    outcomes: dict[str, tuple[Assignment | None, str]] = {}
    by_key: dict[str, JobSetOutcome] = {}
    for o in plan.jobsets:
        by_key.setdefault(o.key, o)  # the first, as `Plan.outcome` finds it
    for target in targets:
        outcome = by_key.get(target.key)
        if outcome is None:
            outcomes[target.key] = (None, "the solver returned no outcome")
            continue
        record = _merge(target, outcome, pinned=inputs.pinned)
        reason = outcome.reason or outcome.status
        if record is not None and (clash := overlap(record, held, index)):
            log.error("%s: plan overlaps a reserved domain: %s", target.key, clash)
            record, reason = None, f"plan overlaps a reserved domain: {clash}"
        outcomes[target.key] = (record, reason)
    placed = [k for k, (record, _) in outcomes.items() if record is not None]
    evictions = chosen_evictions(plan, victims, placed) if evicted else {}
    return outcomes, evictions, call


def _reserved_nodes(inputs: PlanningInputs, jobset: str) -> set[str]:
    """Nodes of every domain (and every node) the snapshot reserves for a JobSet other than
    `jobset`."""
    nodes: set[str] = set()
    for r in inputs.snapshot.reservations:
        if r.jobset == jobset or not r.path:
            continue
        if r.key == NODE_RESERVATION_KEY:
            nodes.add(r.path[-1][1])  # a node held alone: named, not labeled
            continue
        ref = DomainRef(key=r.key, value=r.path[-1][1], path=list(r.path))
        nodes.update(inputs.index.members(ref))
    return nodes


def _restore(
    targets: Sequence[Target],
    records: dict[str, Mapping[str, JobAssignment]],
    inputs: PlanningInputs,
) -> tuple[list[Target], dict[str, Assignment]]:
    """Restore targets (review.Target.restore) recorded as they are, in queue order, when no
    other hold or reservation touches their nodes; the rest, and those that clash, to solve
    (a clashing one as a whole JobSet, holding nothing). `records` is updated in place."""
    rest: list[Target] = []
    placed: dict[str, Assignment] = {}
    for t in targets:
        if not t.restore or t.managed.assignment is None:
            rest.append(t)
            continue
        old = t.managed.assignment
        jobs = dict(sorted(t.keep.items()))
        record = Assignment(jobset=t.key, jobs=jobs, pinned=old.pinned, plan_id=_plan_id(jobs))
        others = {k: v for k, v in records.items() if k != t.key}
        held = held_nodes(others, inputs.foreign, inputs.index, inputs.pods)
        taken = {n for j in jobs.values() for n in inputs.index.job_nodes(j)}
        if overlap(record, held, inputs.index, strict=True) or taken & _reserved_nodes(
            inputs, t.key
        ):
            records.pop(t.key, None)
            rest.append(Target(replace(t.managed, assignment=None), t.request))
            continue
        placed[t.key] = record
        records[t.key] = record.jobs
    return rest, placed


def solve_targets(
    targets: Sequence[Target], inputs: PlanningInputs, solver: Solver
) -> PlannedRound:
    """Plan `targets` (the review's due targets) around the held records and everything
    `inputs.foreign` holds (other controllers' placements, see ledgerplan.view_ledger).

    A JobSet whose new record would not fit on it is unschedulable with the reason, and the
    others are planned again without it (each pass drops at least one, so this ends; it is rare:
    the JobSet's other annotations must fill nearly 256 KiB). One that could carry no record at
    all is left out before the first pass."""
    by_key = {t.key: t for t in targets}
    unwritable = {
        t.key: why for t in targets if (why := no_room_for_a_record(t.managed.obj, t.key))
    }
    while True:
        planned = _solve_round([t for t in targets if t.key not in unwritable], inputs, solver)
        more = {
            key: why
            for key, record in planned.placed.items()
            if (why := record_too_large(by_key[key].managed.obj, record))
        }
        if not more:
            break
        for key, why in more.items():
            log.warning("%s: not placed: %s", key, why)
        unwritable.update(more)
    if not unwritable:
        return planned
    return replace(planned, unschedulable={**planned.unschedulable, **unwritable})


def _solve_round(targets: Sequence[Target], inputs: PlanningInputs, solver: Solver) -> PlannedRound:
    """One planning of `targets` (solve_targets), every placement as the solver made it."""
    if not targets:
        return PlannedRound()
    records = dict(inputs.records)
    placed: dict[str, Assignment] = {}
    targets, placed = _restore(targets, records, inputs)
    if not targets:
        return PlannedRound(placed=placed)
    # A whole-JobSet target may reuse its own old domains; a partial one keeps them all reserved.
    whole = {t.key for t in targets if not t.partial}
    first, evictions, call = _solve_pass(
        targets, {k: v for k, v in records.items() if k not in whole}, inputs, solver
    )
    for victim in evictions:
        records.pop(victim, None)  # evicted: it holds nothing, and is not evicted twice
    calls = [c for c in (call,) if c is not None]
    unschedulable: dict[str, str] = {}
    retry: list[Target] = []
    for t in targets:
        record, reason = first[t.key]
        if record is not None:
            placed[t.key] = record
            records[t.key] = record.jobs
        elif t.partial and t.managed.request is not None:
            retry.append(Target(t.managed, t.managed.request))
        else:
            unschedulable[t.key] = reason
    evictions = dict(evictions)
    if retry:
        retry_keys = {t.key for t in retry}
        second, more, call = _solve_pass(
            retry, {k: v for k, v in records.items() if k not in retry_keys}, inputs, solver
        )
        evictions.update(more)
        if call is not None:
            calls.append(call)
        for t in retry:
            record, reason = second[t.key]
            if record is not None:
                placed[t.key] = record
            else:
                unschedulable[t.key] = reason
    return PlannedRound(
        placed=placed, unschedulable=unschedulable, plans=tuple(calls), evictions=evictions
    )
