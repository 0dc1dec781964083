"""Greedy baselines: what upstream JobSet and Kueue TAS would do, and a strong greedy to beat.

- `first-fit` emulates JobSet's own exclusive placement: child Jobs one by one in queue order, each
  to the first available domain (path order) that fits it, with no all-or-nothing: a JobSet can end
  `partial`, holding the domains it got.
- `best-fit` emulates Kueue TAS BestFit: JobSets one by one in queue order, all-or-nothing, each
  child Job to the tightest domain that fits (fewest free accelerators, then least capacity, then
  path); a shared replicated job with Kueue topology annotations gets exactly Kueue's assignment
  (`placer.solver.greedy.tas`: tightest domain, fewest domains per level below, slices respected).
- `largest-first` is best-fit over JobSets sorted by accelerator demand, largest first, within each
  priority tier (tiers stay highest first: giving up a higher tier for a lower one is never better).

All three build their plans through the `PlacementLedger` and honor `strict-fifo` and Kueue required
locality (all child Jobs of a replicated job, and of its podset group, inside one domain of the
level; best-fit and largest-first place a group's leader and workers as Kueue does, as one).
Best-fit and largest-first try each enclosing domain, tightest first; first-fit, like upstream,
lets the first child Job choose and the others follow. Preferred locality is tried as required
first, then dropped (best-fit and largest-first; first-fit ignores it). Exclusivity is full in
all three (upstream's webhook only keeps apart JobSets of the same priority): the plans must be
valid.
The CP-SAT planner calls `greedy_plan` on its own context for its hint and fallback.

Algorithm overview (`_Greedy.run`):
  order       JobSets in the policy's order
  place       per JobSet: exclusive replicated jobs first, then the shared ones
  commit      all-or-nothing (rollback) for best-fit and largest-first; first-fit keeps what it got
  explain     reasons for the JobSets left out, against the finished plan (`placer.solver.reasons`)
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from placer.model.cluster import ClusterSnapshot
from placer.model.errors import InputError
from placer.model.options import NOT_EXPLAINED, SolveOptions
from placer.model.plan import (
    JobPlacement,
    JobSetOutcome,
    OutcomeStatus,
    Plan,
    SolverReport,
    relative_gap,
)
from placer.model.topology import Domain, DomainPath
from placer.model.workload import JobSetRequest
from placer.solver.context import JobClass, PlacementContext
from placer.solver.greedy.tas import TasTree, place_with_kueue
from placer.solver.ledger import PlacementLedger
from placer.solver.reasons import Classifier, ReasonTally, jobset_reason, occupancy_of

__all__ = ["POLICIES", "BestFitSolver", "FirstFitSolver", "LargestFirstSolver", "greedy_plan"]

POLICIES = ("first-fit", "best-fit", "largest-first")

_ListKey = tuple[int, int, str, DomainPath | None, str | None]
"""(shape number, pods per job, exclusive key, enclosing path, own JobSet): a candidate list."""


def greedy_plan(ctx: PlacementContext, policy: str, *, explain: bool = True) -> Plan:
    """Plan every JobSet of `ctx` with one greedy policy.

    `explain=False` says `NOT_EXPLAINED` for every JobSet left out: the CP-SAT planner only needs
    the placements for its hint (and `SolveOptions.reasons` off, only to compare plans), and
    building reasons for hundreds of unplaced JobSets costs more than the greedy pass itself.
    The report's `objective` is the accelerator units of the JobSets placed whole; `bound` is the
    trivial upper bound, every unit requested (a heuristic proves nothing better).
    """
    if policy not in POLICIES:
        raise ValueError(f"unknown greedy policy {policy!r}")
    started = time.perf_counter()
    outcomes = _Greedy(ctx, policy, explain=explain).run()
    wall = time.perf_counter() - started
    objective = sum(o.accelerators for o in outcomes.values() if o.status == "placed")
    bound = sum(js.accelerator_units for js in ctx.jobsets)
    report = SolverReport(
        name=policy,
        status="HEURISTIC",
        objective=objective,
        bound=bound,
        gap=relative_gap(objective, bound),
        wall_seconds=wall,
        phases={"greedy": wall},
    )
    return Plan(solver=report, jobsets=[outcomes[js.key] for js in ctx.jobsets_given])


class _GreedySolver:
    name = ""
    repeatable = True
    """The same input gives the same plan (`TimeAwareSolver` relies on it for trial solves)."""

    def solve(
        self, snapshot: ClusterSnapshot, jobsets: Sequence[JobSetRequest], options: SolveOptions
    ) -> Plan:
        if options.export_model_path and options.time.schedule != "cpsat":
            raise InputError(
                f"the {self.name} solver builds no CP-SAT model to write; use --solver cpsat "
                "or --schedule cpsat",
                field="--export-model",
                code="usage",
            )
        ctx = PlacementContext(snapshot, jobsets, options)
        return greedy_plan(ctx, self.name, explain=options.reasons)


class FirstFitSolver(_GreedySolver):
    """Upstream JobSet: child Job by child Job, first free domain, partial JobSets possible."""

    name = "first-fit"


class BestFitSolver(_GreedySolver):
    """Kueue TAS BestFit: JobSet by JobSet in queue order, all-or-nothing, tightest domain."""

    name = "best-fit"


class LargestFirstSolver(_GreedySolver):
    """Best-fit, largest accelerator demand first within each priority tier."""

    name = "largest-first"


class _Greedy:
    def __init__(self, ctx: PlacementContext, policy: str, *, explain: bool = True) -> None:
        self.ctx = ctx
        self._explain_reasons = explain
        self._unexplained: dict[str, str] = {}
        """JobSet left out (or partial) -> what its reason starts with; worded after the run."""
        self.policy = policy
        self.ledger = PlacementLedger(ctx)
        self._lists: dict[_ListKey, list[Domain]] = {}
        """Candidate domains per list key, in policy order: built when first needed."""
        self._cursor: dict[_ListKey, int] = {}
        """Candidate list -> index before which every domain holds planned pods, so a search
        starts there. Valid because that prefix only grows until a rollback, which restores the
        cursors of its checkpoint. Kept for its measured gain (benchmarks/RESULTS-speed.md,
        "per-shape index"): the two greedy runs at 50,000 nodes take 0.6 s of CPU with it, 1.1 s
        without."""
        self._holders = {o for owners in ctx.held_by.values() for o in owners}
        """JobSets with running pods in some exclusive domain."""
        self._tas_tree: TasTree | None = None
        """Kueue's domain tree, built on first use (only queues with Kueue annotations need it)."""

    # -- order --

    def order(self) -> list[JobSetRequest]:
        queue = list(self.ctx.jobsets)
        if self.policy != "largest-first" or self.ctx.options.queue == "strict-fifo":
            # strict-fifo decides each tier in queue order, so sorting by size could only break it
            return queue
        position = {js.key: i for i, js in enumerate(queue)}
        return sorted(queue, key=lambda j: (-j.priority, -j.accelerator_units, position[j.key]))

    # -- run --

    def run(self) -> dict[str, JobSetOutcome]:
        outcomes: dict[str, JobSetOutcome] = {}
        failed_in_tier: dict[int, str] = {}
        strict = self.ctx.options.queue == "strict-fifo"
        for js in self.order():
            if strict and js.priority in failed_in_tier:
                reason = (
                    f"strict-fifo: {failed_in_tier[js.priority]}, earlier in priority "
                    f"{js.priority}, is not admitted"
                )
                outcomes[js.key] = _outcome(js, "unschedulable", reason=reason)
                continue
            if self.policy == "first-fit":
                outcome = self._first_fit(js)
            else:
                outcome = self._all_or_nothing(js)
            outcomes[js.key] = outcome
            if outcome.status != "placed":
                failed_in_tier.setdefault(js.priority, js.key)
        if not self._unexplained:
            return outcomes
        if self._explain_reasons:
            self._explain_all(outcomes)
        else:
            for key, prefix in self._unexplained.items():
                reason = prefix + NOT_EXPLAINED
                outcomes[key] = outcomes[key].model_copy(update={"reason": reason})
        return outcomes

    def _explain(self, js: JobSetRequest, prefix: str = "") -> str:
        """Mark `js` to be explained once the plan is complete; the reason is filled in then."""
        self._unexplained[js.key] = prefix
        return prefix

    def _explain_all(self, outcomes: dict[str, JobSetOutcome]) -> None:
        """Reasons for the JobSets left out, against the finished plan: the plan `placer explain`
        diagnoses, so both report the same counts."""
        classifier = Classifier(self.ctx, occupancy_of(self.ctx, outcomes.values()))
        by_key = {js.key: js for js in self.ctx.jobsets}
        listings: dict[tuple[ReasonTally, ...], str] = {}
        for key, prefix in self._unexplained.items():
            reason = prefix + jobset_reason(classifier.diagnose(by_key[key]), listings=listings)
            outcomes[key] = outcomes[key].model_copy(update={"reason": reason})

    def _checkpoint(self) -> tuple[object, dict[_ListKey, int]]:
        """The plan as it is now, and the cursors that are valid for it."""
        return self.ledger.checkpoint(), dict(self._cursor)

    def _rollback(self, mark: tuple[object, dict[_ListKey, int]]) -> None:
        token, cursors = mark
        self.ledger.rollback(token)
        self._cursor = dict(cursors)

    # -- best-fit / largest-first --

    def _all_or_nothing(self, js: JobSetRequest) -> JobSetOutcome:
        mark = self._checkpoint()
        jobs: list[JobPlacement] = []
        classes = sorted(self.ctx.classes_of(js), key=lambda c: c.exclusive_key is None)
        for jc in classes:
            placed = self._place_rjob(jc)
            if placed is None:
                self._rollback(mark)
                return _outcome(js, "unschedulable", reason=self._explain(js))
            jobs.extend(placed)
        return _outcome(js, "placed", jobs=jobs, accelerators=js.accelerator_units)

    def _place_rjob(self, jc: JobClass) -> list[JobPlacement] | None:
        """Every child Job of `jc`, inside one domain of its required (or preferred) level.

        Shared replicated jobs with Kueue topology annotations are placed as Kueue TAS would
        (`placer.solver.greedy.tas`): the tightest domain, then the fewest domains at each level
        below.
        """
        if jc.exclusive_key is None and jc.rjob.kueue_topology:
            return self._place_kueue(jc)
        level = jc.rjob.required_topology or jc.rjob.preferred_topology
        if level:
            for enclosing in self._enclosing_order(level):
                mark = self._checkpoint()
                jobs = self._place_all(jc, enclosing)
                if jobs is not None:
                    return jobs
                self._rollback(mark)
            if jc.rjob.required_topology:
                return None
        mark = self._checkpoint()
        jobs = self._place_all(jc, None)
        if jobs is None:
            self._rollback(mark)
        return jobs

    def _place_kueue(self, jc: JobClass) -> list[JobPlacement] | None:
        """Kueue TAS BestFit for the whole replicated job, split over its child Jobs by rank."""
        if self._tas_tree is None:
            self._tas_tree = TasTree.of(self.ctx)
        return place_with_kueue(self.ledger, self._tas_tree, jc)

    def _place_all(self, jc: JobClass, within: Domain | None) -> list[JobPlacement] | None:
        jobs: list[JobPlacement] = []
        for i in range(jc.rjob.replicas):
            job = self._place_one(jc, i, within)
            if job is None:
                return None
            jobs.append(job)
        return jobs

    def _enclosing_order(self, level: str) -> list[Domain]:
        """Domains of a locality level, tightest first, the same fit rule as for child Jobs."""
        return sorted(
            self.ctx.domains(level),
            key=lambda d: (self.ctx.free_accelerators(d), len(d.nodes), d.path),
        )

    # -- first-fit --

    def _first_fit(self, js: JobSetRequest) -> JobSetOutcome:
        jobs: list[JobPlacement] = []
        missing: list[str] = []
        units = 0
        fixed: dict[int | str, Domain] = {}
        """class (or podset group) -> the enclosing domain its first child Job chose (required
        locality; a podset group's leader and workers share one)."""
        for jc in self.ctx.classes_of(js):
            for i in range(jc.rjob.replicas):
                job = self._first_fit_one(jc, i, fixed)
                if job is None:
                    missing.append(f"{jc.rjob.name}-{i}")
                else:
                    jobs.append(job)
                    units += jc.rjob.accelerator_units_per_job
        if not missing:
            return _outcome(js, "placed", jobs=jobs, accelerators=js.accelerator_units)
        if not jobs:
            return _outcome(js, "unschedulable", reason=self._explain(js))
        total = len(jobs) + len(missing)
        reason = self._explain(
            js, f"{len(missing)} of {total} child Jobs could not be placed ({', '.join(missing)}): "
        )
        return _outcome(js, "partial", jobs=jobs, accelerators=units, reason=reason)

    def _first_fit_one(
        self, jc: JobClass, index: int, fixed: dict[int | str, Domain]
    ) -> JobPlacement | None:
        level = jc.rjob.required_topology
        if not level:
            return self._place_one(jc, index, None)
        together = jc.rjob.podset_group if self.ctx.podset_group(jc) else None
        key: int | str = jc.index if together is None else together
        if key in fixed:
            return self._place_one(jc, index, fixed[key])
        for enclosing in self.ctx.domains(level):
            job = self._place_one(jc, index, enclosing)
            if job is not None:
                fixed[key] = enclosing
                return job
        return None

    # -- one child Job --

    def _place_one(self, jc: JobClass, index: int, within: Domain | None) -> JobPlacement | None:
        if jc.exclusive_key is None:
            return self.ledger.place_shared(jc, index, within.nodes if within else None)
        list_key, candidates = self._candidates_for(jc, within)
        start = self._cursor.get(list_key, 0)
        for pos in range(start, len(candidates)):
            domain = candidates[pos]
            if not self.ledger.domain_untouched(domain):
                if pos == start:
                    start += 1
                continue
            if not self.ctx.domain_open_to(domain, jc.jobset):
                continue
            job = self.ledger.take_domain(jc, index, domain)
            if job is not None:
                self._cursor[list_key] = start
                return job
        self._cursor[list_key] = start
        return None

    def _candidates_for(self, jc: JobClass, within: Domain | None) -> tuple[_ListKey, list[Domain]]:
        """Domains of `jc`'s key (inside `within`) open to it and big enough, in policy order.

        Lists are shared by every class with the same pod shape and size, unless its JobSet has
        running pods of its own in some domain (then it gets its own list, those domains included).
        """
        key = jc.exclusive_key
        assert key is not None
        shape = self.ctx.shape_index.shape_numbers[jc.index]
        own = jc.jobset.key if jc.jobset.key in self._holders else None
        list_key = (shape, jc.rjob.pods_per_job, key, within.path if within else None, own)
        found = self._lists.get(list_key)
        if found is not None:
            return list_key, found
        table = self.ctx.key_domains[key]
        need = jc.rjob.pods_per_job
        sized: list[tuple[int, int, DomainPath, Domain]] = []
        for d, held, cap, free in zip(
            table.domains,
            table.held_by,
            table.capacity[shape],
            table.free_accelerators,
            strict=True,
        ):
            if cap < need or any(o != own for o in held):
                continue
            if within is not None and not self._inside(d, within):
                continue
            sized.append((free, cap, d.path, d))
        if self.policy != "first-fit":
            sized.sort(key=lambda entry: entry[:3])
        found = self._lists[list_key] = [entry[3] for entry in sized]
        return list_key, found

    def _inside(self, domain: Domain, enclosing: Domain) -> bool:
        """Every node of `domain` is in `enclosing` (nested levels or plain label overlap)."""
        topology, nodes = self.ctx.topology, self.ctx.nodes
        return bool(domain.nodes) and all(
            topology.enclosing(nodes[n], enclosing.key) == enclosing.path for n in domain.nodes
        )


def _outcome(
    js: JobSetRequest,
    status: OutcomeStatus,
    *,
    jobs: Sequence[JobPlacement] = (),
    accelerators: int = 0,
    reason: str = "",
) -> JobSetOutcome:
    """An outcome with its child Jobs in JobSet's creation order."""
    order = {name: i for i, (_, _, name) in enumerate(js.child_jobs())}
    return JobSetOutcome(
        namespace=js.namespace,
        name=js.name,
        status=status,
        reason=reason,
        priority=js.priority,
        accelerators=accelerators,
        jobs=sorted(jobs, key=lambda j: order[j.name]),
    )
