"""`placer explain`'s engine: plan the queue as `placer plan` would, then say why one JobSet is out.

Phases, each one function below:
  plan        the same solver and options as `placer plan`, on the same snapshot and queue
  locate      where the JobSet went (placed: done; running on the snapshot: say where)
  count       per replicated job, domains or nodes by reason (`placer.solver.reasons`)
  conflict    a minimal set of requirements that cannot hold together (`conflicts.find_conflict`)
  remedies    changes that make it fit, each checked by re-planning (`remedies.find_remedies`)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from placer.model.cluster import ClusterSnapshot
from placer.model.errors import InputError
from placer.model.options import SolveOptions
from placer.model.plan import Plan, SolverReport
from placer.model.topology import HOSTNAME
from placer.model.whatif import running_jobsets
from placer.model.workload import JobSetRequest
from placer.solver.check.checker import check
from placer.solver.context import PlacementContext
from placer.solver.explain.conflicts import ConflictInputs, find_conflict
from placer.solver.explain.remedies import find_remedies
from placer.solver.explain.replanner import Replanner
from placer.solver.explain.result import Explanation, diagnosis_document
from placer.solver.progress import SILENT, ProgressHook
from placer.solver.reasons import diagnose, occupancy_from_plan
from placer.solver.registry import get_solver
from placer.solver.time.never import never_reason
from placer.solver.time.timeaware import planned_on

__all__ = ["ExplainSettings", "explain_jobset", "find_key", "find_target"]


def find_key(keys: Iterable[str], name: str) -> str | None:
    """The key `namespace/name` itself, or the one key whose name is plain `name`."""
    listed = list(keys)
    if name in listed:
        return name
    if "/" not in name:
        matches = [k for k in listed if k.split("/", 1)[-1] == name]
        if len(matches) == 1:
            return matches[0]
    return None


def find_target(jobsets: Sequence[JobSetRequest], name: str) -> JobSetRequest | None:
    """The JobSet called `namespace/name`, or plain `name` when exactly one JobSet has it."""
    key = find_key((js.key for js in jobsets), name)
    return next((js for js in jobsets if js.key == key), None)


@dataclass(frozen=True)
class ExplainSettings:
    """How `explain_jobset` searches: the solver it plans and re-plans with, and whether (and
    with how many re-plans at most) it looks for remedies."""

    solver: str = "cpsat"
    remedies: bool = True
    replan_budget: int = 24


def explain_jobset(
    snapshot: ClusterSnapshot,
    jobsets: Sequence[JobSetRequest],
    name: str,
    options: SolveOptions,
    *,
    settings: ExplainSettings = ExplainSettings(),
    whatif: Sequence[str] = (),
    progress: ProgressHook = SILENT,
) -> Explanation:
    """Why JobSet `name` is (not) placed when `jobsets` are planned onto `snapshot`; `whatif`
    names the changes already made to them (reported as given).

    `progress` hears each phase (plan, count, conflict, remedies) and each re-plan.
    """
    target = find_target(jobsets, name)
    if target is None:
        return _not_pending(snapshot, jobsets, name, options, whatif)
    progress.phase("plan")
    plan = _plan(snapshot, jobsets, options, settings.solver)
    # the solver checked the plan already (a failing plan raises) unless the checker is off
    unchecked = () if options.check else check(plan, snapshot, jobsets, options)
    notes = [f"plan check: {v}" for v in unchecked]
    outcome = plan.outcome(target.key)
    # what the plan states, placed or not; the diagnosis below is added to it when not placed
    stated = Explanation(
        jobset=target.key,
        status=outcome.status,
        priority=target.priority,
        reason=outcome.reason,
        whatif=list(whatif),
        jobs=list(outcome.jobs),
        solver=plan.solver,
        plan=plan,
        expected_start_seconds=outcome.expected_start_seconds,
        reserved_domains=list(outcome.reserved_domains),
        reserved_nodes=list(outcome.reserved_nodes),
        waits_for=list(outcome.waits_for),
        past_max_wait=outcome.past_max_wait,
        notes=notes,
    )
    if outcome.status == "placed":
        return stated
    progress.phase("count")
    never = never_reason(snapshot, jobsets, options, target) or ""
    # counted on what the planner planned on: with time-aware planning, its reservations too
    seen = planned_on(snapshot, plan, jobsets, options) if options.time.active else snapshot
    ctx = PlacementContext(seen, jobsets, options)
    diagnosis = [
        diagnosis_document(d) for d in diagnose(ctx, target, occupancy_from_plan(ctx, plan))
    ]
    others = tuple(
        js for js in jobsets if js.key != target.key and plan.outcome(js.key).status == "placed"
    )
    inputs = ConflictInputs(snapshot=snapshot, target=target, others=others, options=options)
    progress.phase("conflict")
    conflict = find_conflict(inputs)
    if outcome.reason.startswith("strict-fifo"):
        notes.append(
            f"{outcome.reason}; the counts and conflict below are what it meets once that one "
            "is admitted"
        )
    found = []
    if settings.remedies:
        progress.phase("remedies")
        replanner = Replanner(
            snapshot,
            list(jobsets),
            options,
            solver=settings.solver,
            budget=settings.replan_budget,
            progress=progress,
        )
        found = find_remedies(replanner, inputs, diagnosis)
        notes.extend(replanner.notes)
        if not found:
            notes.append(
                "no remedy found among fewer replicas, other topology values, "
                "relaxed locality, preemption and waiting for running JobSets"
            )
    return Explanation.model_validate(
        {
            **dict(stated),
            "replicated_jobs": diagnosis,
            "never": never,
            "conflict": conflict,
            "remedies": found,
            "notes": notes,
        }
    )


def _plan(
    snapshot: ClusterSnapshot,
    jobsets: Sequence[JobSetRequest],
    options: SolveOptions,
    solver: str,
) -> Plan:
    # the same plan `placer plan` makes with these flags, expected starts and reasons included
    solving = get_solver(solver, time_policy=options.time, never_check=True)
    return solving.solve(snapshot, jobsets, options)


def _not_pending(
    snapshot: ClusterSnapshot,
    jobsets: Sequence[JobSetRequest],
    name: str,
    options: SolveOptions,
    whatif: Sequence[str],
) -> Explanation:
    """A JobSet that is not in the queue: running on the snapshot (say where), or a usage error."""
    key = name if "/" in name else f"default/{name}"
    if key not in running_jobsets(snapshot):
        given = len(jobsets)
        raise InputError(
            f"not among the {given} JobSet{'s' if given != 1 else ''} given and not running on "
            "the cluster",
            obj=name,
            field="NAMESPACE/NAME",
            code="unknown-jobset",
        )
    nodes = sorted(n.name for n in snapshot.nodes if key in n.jobsets)
    levels = [lv for lv in (options.levels or snapshot.levels) if lv != HOSTNAME]
    held = sorted(
        {
            f"{lv}={n.labels[lv]}"
            for n in snapshot.nodes
            if key in n.jobsets
            for lv in levels
            if lv in n.labels
        }
    )
    notes = [f"running, not pending: its pods are on {_listed(nodes, 'node')}"]
    if held:
        notes.append(f"it holds {_listed(held, 'domain')}")
    return Explanation(
        jobset=key,
        status="running",
        whatif=list(whatif),
        notes=notes,
        solver=SolverReport(name="none", status="NOT_RUN"),
    )


def _listed(items: Sequence[str], word: str, shown: int = 8) -> str:
    head = ", ".join(items[:shown])
    more = f", +{len(items) - shown} more" if len(items) > shown else ""
    return f"{len(items)} {word}{'s' if len(items) != 1 else ''} ({head}{more})"
