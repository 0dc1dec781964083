"""The reconcile loop: observe, review, plan, commit, write; repeat.

Why one global cycle rather than a work queue of objects, the usual controller shape: placement is
a joint decision. Which domain one JobSet should get depends on every other pending JobSet (the
solver trades them off together: priorities, fragmentation, all-or-nothing), so reconciling
JobSets one at a time, each key popped from a queue by a worker, would be exactly the greedy,
order-dependent placement placer exists to replace, and several workers would race for domains.
A cycle therefore observes the whole cluster once, plans every due JobSet in one solver call and
commits the result in one ledger write; the per-object work (a record, pod ungates, node labels)
follows from that one decision. Watches only tell the loop when to run a cycle.

Phases of one cycle (`Controller.run_cycle`), each one method (observe: observe.py's `Observer`)
handing the next a frozen value, timed into `CycleReport.phases` (the names in brackets):

  observe  `ClusterCache.state()`, the ledger in it, the managed JobSets (their records: ledger
           entry, else annotation) and the planner's snapshot, rebuilt only when something that
           changes capacity changed -> `Observed`                 [observe, survey, snapshot]
  review   `roundreview.judge`: (with --kueue-admission-check, first the survey as Kueue has
           it: the suspended JobSets whose Workload holds quota are planned, evicted ones
           released) records in force, broken, and the targets to plan; what the ledger holds
           for others and what it can release; who may be evicted. Then the ledger's suspects
           confirmed gone by one read per cycle, and which targets are due
           (memory.CycleMemory.due): the oldest has waited the gather window, and one that was
           unschedulable is retried only after capacity changed or every `replan_s`
           -> `Reviewed`                                                     [review, commit]
  plan     every due target in one solver call around everything held (planning.planning_inputs,
           planning.solve_targets) -> `PlannedRound`                                  [plan]
  commit   new placements, adopted records, releases and reservations in one compare-and-swap of
           the ledger (decided by roundchange.round_change, sent by commit.commit)
           -> `_Committed`. When another writer committed first, the round starts again at
           observe from the fresh ledger (at most `MAX_ROUNDS` rounds; then nothing new is
           written and the next cycle tries again). A leader whose ledger term was taken over
           raises `Deposed` and writes nothing.                                     [commit]
  write    `roundwrites.round_writes` decides every write and event of the JobSets and
           placer's check on each Workload; `executor.execute` sends
           them (only logged with --dry-run)                          [write planning, writes]

When cycles run (the watch loop, `--once`, an elected leader's work) is loop.py's business;
`run`, `run_once` and `run_leading` here hand over to it. The settings are config.py's
`ControllerConfig`, the report report.py's `CycleReport`, what one cycle leaves the next
memory.py's `CycleMemory`, how it reads time clocks.py's `Clocks`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from placer.controller import loop
from placer.controller.act.cache import ClusterCache, Stream
from placer.controller.act.commit import commit, confirm_gone
from placer.controller.act.executor import ExecReport, RetryPolicy, execute
from placer.controller.adapter import ClusterAdapter
from placer.controller.clocks import Clocks
from placer.controller.config import ControllerConfig
from placer.controller.decide.kueue.eta import estimate_behind
from placer.controller.decide.observed import Observed, Reviewed
from placer.controller.decide.plan.planning import PlannedRound, planning_inputs, solve_targets
from placer.controller.decide.preempting import KUEUE_QUEUE_LABEL, Eligibility
from placer.controller.decide.records.ledger import LEDGER_LABEL, Fence
from placer.controller.decide.records.writes import Write
from placer.controller.decide.round.roundchange import round_change
from placer.controller.decide.round.roundreview import ReviewSettings, judge
from placer.controller.decide.round.roundwrites import round_writes
from placer.controller.decide.round.writeplan import WriteSettings
from placer.controller.memory import CycleMemory
from placer.controller.metrics import Metrics
from placer.controller.observe import Observer
from placer.controller.report import CycleReport, PhaseTimer
from placer.model.cluster import ClusterSnapshot
from placer.model.durations import format_rfc3339
from placer.model.errors import InputError
from placer.model.options import SolveOptions
from placer.runtime import collector_paused, freeze_long_lived
from placer.solver.interface import Solver
from placer.solver.registry import get_solver, prepare_solver

__all__ = ["MAX_ROUNDS", "Clocks", "Controller", "ControllerConfig", "CycleReport"]

log = logging.getLogger(__name__)

MAX_ROUNDS = 4
"""Plan-and-commit rounds per cycle when other writers keep committing first."""


@dataclass(frozen=True)
class _Committed:
    """The commit phase's hand-over to the write phase."""

    planned: PlannedRound
    """The round's plans; `placed` only what the ledger took, `reserved` what to announce."""
    refused: Mapping[str, str] = field(default_factory=dict)
    """Placements the final ledger check refused (JobSet key -> why)."""
    committed: bool | None = None
    """True: the ledger took the commit; False: another writer committed first; None: nothing
    to commit (or a dry run)."""
    gave_up: bool = False
    """Other writers kept committing first for `MAX_ROUNDS` rounds: nothing new is written and
    the next cycle runs at once."""


class Controller:
    """The in-cluster controller over any `ClusterAdapter` (real API server or `MemoryCluster`)."""

    def __init__(
        self,
        adapter: ClusterAdapter,
        config: ControllerConfig,
        *,
        solver: Solver | None = None,
        metrics: Metrics | None = None,
        retry: RetryPolicy | None = None,
        clocks: Clocks | None = None,
    ) -> None:
        self.adapter = adapter
        config, warnings = config.as_run()
        for warning in warnings:
            log.warning("%s", warning)
        self.config = config
        time_policy = config.options.time
        self.solver = (
            prepare_solver(solver, time_policy=time_policy, never_check=True)
            if solver
            else get_solver(config.solver, time_policy=time_policy, never_check=True)
        )
        clocks = clocks or Clocks()
        self.clock = clocks.monotonic
        self.sleep = clocks.sleep
        self.wall_clock = clocks.wall
        """Epoch seconds: the planning instant of time-aware planning, and reservations' times."""
        self.metrics = metrics or Metrics()
        self.retry = retry or RetryPolicy()
        self.cache = ClusterCache(
            adapter,
            namespaces=config.namespaces,
            all_pods=config.all_pods,
            watch_timeout_s=config.watch_timeout_s,
            ledger=Stream("configmaps", config.ledger_namespace, LEDGER_LABEL),
            kueue=config.kueue_admission_check,
        )
        self.observer = Observer(self.cache, config)
        """Phase 1: the cache read into an `Observed`, with its parsing memos."""
        self.memory = CycleMemory()
        """Across cycles: who waits since when, who failed, which events were sent."""
        self.fence: Fence | None = None
        """Set while this replica leads: the ledger term it claimed (see ledger.py)."""
        self.deposed = False
        """A newer leader claimed the ledger: this replica stopped writing."""
        self.misconfigured: InputError | None = None
        """A flag the cluster contradicts (`--default-duration` naming an unknown PriorityClass):
        the loop stopped, and `placer controller` exits 2 with this error."""

    # --- one cycle -----------------------------------------------------------------------------

    def _options(self, snapshot: ClusterSnapshot) -> SolveOptions:
        """The configured options with `--default-duration CLASS=DURATION` resolved against the
        PriorityClasses of this cycle's snapshot (`TimePolicy.for_classes`). A class the cluster
        does not know raises a usage error, which stops the controller with exit 2 (loop.py), as
        `placer plan` exits 2 for it."""
        options = self.config.options
        policy = options.time.for_classes(snapshot.priority_classes)
        return options if policy is options.time else options.model_copy(update={"time": policy})

    def run_cycle(self, *, force_plan: bool = False) -> CycleReport:
        """One cycle (see the module docstring), with the cyclic garbage collector paused.

        A cycle builds a snapshot, plans and writes: hundreds of thousands of objects on a
        10,000-node cluster, whose allocation bursts would trigger full collections rescanning all
        of them (a fifth of the cycle's time). They hold no reference cycles worth collecting
        before the cycle ends; the collector catches up afterwards.
        """
        with collector_paused():
            return self._run_cycle(force_plan=force_plan)

    def _run_cycle(self, *, force_plan: bool) -> CycleReport:
        """observe -> review -> plan -> commit (in rounds, see `_decide`), then write."""
        start = self.clock()
        timer = PhaseTimer(self.clock)
        reviewed, outcome, rounds = self._decide(timer, force_plan=force_plan)
        writes, executed = self._write(reviewed, outcome, timer)
        done = executed.done if executed is not None else writes if self.config.dry_run else []
        capacity = reviewed.observed.state.capacity_version
        self.memory.remember(outcome.planned, capacity, reviewed.now_s, done)
        observed = reviewed.observed
        report = CycleReport(
            managed=list(observed.managed),
            review=reviewed.review,
            planned=outcome.planned,
            writes=writes,
            executed=executed,
            snapshot=observed.snapshot,
            wall_s=self.clock() - start,
            wake_in_s=0.0 if outcome.gave_up else reviewed.wake_in_s,
            deferred=list(reviewed.deferred),
            phases=timer.seconds,
            rounds=rounds,
            committed=outcome.committed,
            refused=dict(outcome.refused),
            ledger=observed.ledger,
        )
        self.metrics.observe_cycle(report)
        return report

    def _decide(self, timer: PhaseTimer, *, force_plan: bool) -> tuple[Reviewed, _Committed, int]:
        """The rounds of observe -> review -> plan -> commit: again from a fresh observation
        while another writer committed first, at most `MAX_ROUNDS` times. Also returns the
        number of rounds run."""
        gone: frozenset[str] | None = None
        for rounds in range(1, MAX_ROUNDS + 1):
            observed = self.observer.observe(timer)
            reviewed = self._review(observed, timer, force_plan=force_plan, gone=gone)
            gone = reviewed.gone
            planned = self._plan(reviewed, timer)
            if self.config.dry_run:
                return reviewed, _Committed(planned), rounds
            outcome = self._commit(reviewed, planned, timer)
            if outcome.committed is None and rounds > 1:
                # nothing left to commit after losing to another writer: still not committed
                return reviewed, replace(outcome, committed=False), rounds
            if outcome.committed is not False:
                return reviewed, outcome, rounds
        log.warning(
            "the ledger kept changing under %d rounds; nothing new written this cycle", MAX_ROUNDS
        )
        given_up = _Committed(
            PlannedRound(plans=planned.plans),
            refused=outcome.refused,
            committed=False,
            gave_up=True,
        )
        return reviewed, given_up, MAX_ROUNDS

    def _review(
        self,
        observed: Observed,
        timer: PhaseTimer,
        *,
        force_plan: bool,
        gone: frozenset[str] | None,
    ) -> Reviewed:
        """Phase 2: the records judged, the ledger sorted (its suspects confirmed gone once per
        cycle: `gone` is what an earlier round confirmed), and the targets due now."""
        options = self._options(observed.snapshot)
        wall_s = self.wall_clock()
        settings = ReviewSettings(
            namespaces=self.config.namespaces,
            kueue=self.config.kueue_admission_check,
            max_preemptions_per_day=self.config.max_preemptions_per_day,
            now=format_rfc3339(wall_s),
            wall_s=wall_s,
        )
        with timer("review"):
            judged = judge(observed, options, settings)
        if judged.eligibility is not None:
            self._log_kueue(judged.eligibility)
        observed, view = judged.observed, judged.ledger
        if view.suspects and not self.config.dry_run:
            with timer("commit"):
                if gone is None:
                    gone = frozenset(
                        confirm_gone(
                            self.adapter, view.suspects, policy=self.retry, sleep=self.sleep
                        )
                    )
                # Confirmed gone: planned around no longer, released by this round's commit.
                view = view.without(gone)
        now = self.clock()
        chosen = self.memory.due(
            judged.review,
            observed.state.capacity_version,
            now,
            window_s=self.config.window_s,
            replan_s=self.config.replan_s,
            force=force_plan,
        )
        return Reviewed(
            observed=observed,
            options=options,
            review=judged.review,
            ledger=view,
            due=tuple(chosen.due),
            deferred=tuple(chosen.deferred),
            wake_in_s=chosen.wake_in_s,
            now_s=now,
            wall_s=wall_s,
            gone=gone,
            kueue=judged.kueue,
            eligibility=judged.eligibility,
            evictions=judged.evictions,
        )

    def _log_kueue(self, eligible: Eligibility) -> None:
        """Say once per JobSet that placer neither preempts for it nor evicts it."""
        for key in sorted(eligible.no_preempt - self.memory.kueue_not_preempting):
            log.info(
                "%s: managed by Kueue (label %s): placer neither preempts for it nor evicts it; "
                "Kueue preempts by quota",
                key,
                KUEUE_QUEUE_LABEL,
            )
        self.memory.kueue_not_preempting = set(eligible.no_preempt)

    def _plan(self, reviewed: Reviewed, timer: PhaseTimer) -> PlannedRound:
        """Phase 3: every due target in one solver call around everything held."""
        with timer("plan"):
            inputs = planning_inputs(reviewed, pinned=self.config.pin_nodes)
            planned = solve_targets(reviewed.due, inputs, self.solver)
            planned = estimate_behind(reviewed, inputs, planned)
        if reviewed.due:
            self.metrics.observe_plans(planned.plans, timer.seconds.get("plan", 0.0))
        return planned

    def _commit(self, reviewed: Reviewed, planned: PlannedRound, timer: PhaseTimer) -> _Committed:
        """Phase 4: the round's placements, adoptions, releases and reservations in one
        compare-and-swap of the ledger. Placements the final node check refuses become
        unschedulable; reservations are announced only once committed."""
        with timer("commit"):
            decided = round_change(reviewed, planned, self.fence)
            change, planned, refused = decided.change, decided.planned, decided.refused
            if not change:
                change.check_fence(reviewed.observed.ledger)  # a deposed leader writes nothing
                return _Committed(planned, refused)
            result = commit(
                self.adapter,
                reviewed.observed.ledger,
                change,
                policy=self.retry,
                sleep=self.sleep,
                on_object=self.cache.record,
            )
        outcome = "committed" if result.committed else "conflict"
        self.metrics.ledger_commits.labels(outcome=outcome).inc()
        if result.committed:
            planned = replace(planned, reserved=decided.announce)
            self.metrics.preemptions.inc(len(planned.evictions))
        else:
            planned = replace(planned, evictions={})
        return _Committed(planned, refused, committed=result.committed)

    def _write(
        self, reviewed: Reviewed, outcome: _Committed, timer: PhaseTimer
    ) -> tuple[list[Write], ExecReport | None]:
        """Phase 5: every write and event the round's outcome needs, then sent (or, with
        --dry-run, logged)."""
        wall_s = self.wall_clock()
        settings = WriteSettings(
            binding=self.config.binding,
            namespaces=self.config.namespaces,
            now=format_rfc3339(wall_s),
            instance=self.config.identity,
            now_s=wall_s,
            kueue_hold_s=self.config.kueue_hold_quota_s,
        )
        with timer("write planning"):
            writes = round_writes(
                reviewed,
                outcome.planned,
                settings,
                self.memory.announced(),
                committed=bool(outcome.committed),
                kueue_warned=self.memory.kueue_warnings,
            )
        if self.config.dry_run:
            for w in writes:
                log.info("dry run: would %s", w.describe())
            return writes, None
        if not writes:
            return writes, None
        with timer("writes"):
            executed = execute(
                self.adapter,
                writes,
                policy=self.retry,
                on_object=self.cache.record,
                sleep=self.sleep,
            )
        self.metrics.count_writes(executed)
        return writes, executed

    # --- running -------------------------------------------------------------------------------

    def relist(self) -> None:
        """List everything afresh (on start and every `resync_s`), then freeze the heap.

        The cache then holds tens of thousands of API objects for as long as they do not change.
        Left to the cyclic garbage collector, they are rescanned by every full collection: those
        the watch threads' events trigger and the catch-up after each cycle (0.8 s of CPU at
        10,000 nodes, 0.35 s frozen). `gc.freeze` keeps what is alive now out of its sight, at
        O(1) cost. Reference counting still frees each object the cache drops (JSON objects hold
        no reference cycles); the price is that a reference cycle alive at this instant and
        dropped later is never collected, which at one relist per `resync_s` stays negligible.
        """
        self.cache.relist()
        freeze_long_lived(collect_first=False)

    def relist_with_retries(self, stop: threading.Event | None = None) -> None:
        loop.relist_with_retries(self, stop)

    def run_once(self) -> CycleReport:
        """List everything (retrying temporary errors), run one full cycle planning every pending
        JobSet now, return."""
        return loop.run_once(self)

    def run_leading(self, stop: threading.Event) -> None:
        """The elected leader's work: claim the ledger, then watch and reconcile until `stop`."""
        loop.run_leading(self, stop)

    def run(self, stop: threading.Event) -> None:
        """Watch and reconcile until `stop` is set (or this replica is deposed)."""
        loop.run_loop(self, stop)
