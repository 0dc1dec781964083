"""The reconcile loop: observe, decide (pure), write back through the adapter, repeat.

One cycle (`Controller.run_cycle`):

1. observe   - `ClusterCache.state()`: one consistent view of nodes, pods, JobSets.
2. survey    - the managed JobSets, their records and pods (survey.py).
3. snapshot  - the planner's snapshot of that view (holds.planning_snapshot), rebuilt only when
               something that changes capacity changed.
4. review    - records in force, broken, and the targets to plan (decisions.review).
5. plan      - once the oldest target has waited the gather window, plan every due target in one
               solver call (decisions.solve_targets); a target that was unschedulable is retried
               only after capacity changed, or every `replan_s`.
6. writes    - `writeplan.plan_writes`, then `executor.execute` (or only logged with --dry-run).

`run()` keeps the cache fed by watches and runs a cycle after every change (debounced), when the
gather window closes, and every `replan_s`; it relists everything every `resync_s`.
"""

from __future__ import annotations

import gc
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from pydantic import BaseModel, ConfigDict, Field

from placer.controller.adapter import ClusterAdapter
from placer.controller.cache import ClusterCache, ClusterState
from placer.controller.decisions import PlannedRound, Review, Target, review, solve_targets
from placer.controller.domains import DomainIndex
from placer.controller.executor import ExecReport, RetryPolicy, execute
from placer.controller.metrics import Metrics
from placer.controller.snapshot import planning_snapshot
from placer.controller.survey import Binding, ManagedJobSet, ParseMemo, RefMemo, survey
from placer.controller.writeplan import WriteSettings, plan_writes
from placer.controller.writes import EmitEvent, Write
from placer.model.cluster import ClusterSnapshot
from placer.model.errors import PlacerError
from placer.model.manifests import paused_gc
from placer.model.options import SolveOptions
from placer.solver.interface import Solver
from placer.solver.registry import get_solver

__all__ = ["Controller", "ControllerConfig", "CycleReport"]

log = logging.getLogger(__name__)


class ControllerConfig(BaseModel):
    model_config = ConfigDict(frozen=True)
    binding: Binding = "gate"
    namespaces: tuple[str, ...] = ()
    """Manage JobSets in these namespaces only (empty: all)."""
    pin_nodes: bool = False
    """Also pin each pod to the node the plan gave it (gate binding)."""
    dry_run: bool = False
    solver: str = "cpsat"
    options: SolveOptions = Field(default_factory=lambda: SolveOptions(time_limit_s=10.0))
    window_s: float = 2.0
    """Gather window: plan once the oldest pending JobSet has waited this long."""
    replan_s: float = 60.0
    """Retry unschedulable JobSets at least this often, even when nothing changed."""
    resync_s: float = 600.0
    """Relist everything this often (watches are trusted in between)."""
    debounce_s: float = 0.1
    all_pods: bool = True
    """Watch every pod (true free capacity) rather than only JobSet pods."""
    watch_timeout_s: float = 300.0
    identity: str = ""


@dataclass
class CycleReport:
    """What one cycle saw, decided and did: for logs, metrics and tests."""

    managed: list[ManagedJobSet]
    review: Review
    planned: PlannedRound
    writes: list[Write]
    executed: ExecReport | None
    snapshot: ClusterSnapshot
    wall_s: float
    wake_in_s: float | None = None
    """Seconds until a pending target's gather window closes (None: nothing waiting)."""
    deferred: list[str] = field(default_factory=list)


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
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.adapter = adapter
        self.config = config
        self.solver = solver or get_solver(config.solver)
        self.metrics = metrics or Metrics()
        self.retry = retry or RetryPolicy()
        self.clock = clock
        self.sleep = sleep
        self.cache = ClusterCache(
            adapter,
            namespaces=config.namespaces,
            all_pods=config.all_pods,
            watch_timeout_s=config.watch_timeout_s,
        )
        self.announced: dict[str, str] = {}
        """JobSet -> the Unschedulable message already emitted."""
        self.placed_announced: set[tuple[str, str]] = set()
        """(JobSet, plan id) whose Placed event was sent (or found already sent)."""
        self.pending_since: dict[str, float] = {}
        self.failed_at: dict[str, tuple[int, float]] = {}
        """JobSet -> (capacity version, time) of its last unschedulable plan."""
        self._snapshot: tuple[int, ClusterSnapshot] | None = None
        self._parsed: ParseMemo = {}
        self._refs: RefMemo = {}

    # --- one cycle -----------------------------------------------------------------------------

    def _planning_snapshot(self, state: ClusterState) -> ClusterSnapshot:
        if self._snapshot is None or self._snapshot[0] != state.capacity_version:
            snap = planning_snapshot(
                state, binding=self.config.binding, levels=self.config.options.levels
            )
            self._snapshot = (state.capacity_version, snap)
        return self._snapshot[1]

    def _due(
        self, rev: Review, state: ClusterState, now: float, *, force: bool
    ) -> tuple[list[Target], list[str], float | None]:
        """(targets to plan now, keys deferred, seconds until the window closes)."""
        keys = {t.key for t in rev.targets}
        for k in list(self.pending_since):
            if k not in keys:
                del self.pending_since[k]
        for k in keys:
            self.pending_since.setdefault(k, now)
        if not rev.targets:
            return [], [], None
        oldest = min(self.pending_since[k] for k in keys)
        if not force and now - oldest < self.config.window_s:
            return [], sorted(keys), self.config.window_s - (now - oldest)
        due, deferred = [], []
        for t in rev.targets:
            last = self.failed_at.get(t.key)
            stale = (
                last is not None
                and last[0] == state.capacity_version
                and now - last[1] < self.config.replan_s
            )
            if stale and not force:
                deferred.append(t.key)
            else:
                due.append(t)
        return due, deferred, None

    def run_cycle(self, *, force_plan: bool = False) -> CycleReport:
        """One cycle (see the module docstring), with the cyclic garbage collector paused.

        A cycle builds a snapshot, plans and writes: hundreds of thousands of objects on a
        10,000-node cluster, whose allocation bursts would trigger full collections rescanning all
        of them (a fifth of the cycle's time). They hold no reference cycles worth collecting
        before the cycle ends; the collector catches up afterwards.
        """
        with paused_gc():
            return self._run_cycle(force_plan=force_plan)

    def _run_cycle(self, *, force_plan: bool) -> CycleReport:
        start = self.clock()
        state = self.cache.state()
        if len(self._parsed) > 4 * len(state.jobsets) + 100:
            self._parsed.clear()  # forget deleted and superseded manifests
        if len(self._refs) > 2 * len(state.pods) + 100:
            self._refs.clear()  # forget deleted pods and superseded versions
        managed = survey(
            state,
            binding=self.config.binding,
            namespaces=self.config.namespaces,
            memo=self._parsed,
            refs=self._refs,
        )
        snapshot = self._planning_snapshot(state)
        index = DomainIndex(snapshot)
        rev = review(managed, index, self.config.options)
        now = self.clock()
        due, deferred, wake = self._due(rev, state, now, force=force_plan)
        plan_start = self.clock()
        planned = solve_targets(
            rev,
            due,
            snapshot,
            index,
            self.solver,
            self.config.options,
            pinned=self.config.pin_nodes,
        )
        if due:
            self.metrics.plan_seconds.observe(self.clock() - plan_start)
            for plan, _, _ in planned.plans:
                gap = plan.solver.gap  # None: nothing proven
                self.metrics.gap.set(float("nan") if gap is None else gap)
                log.info(
                    "planned %d JobSet(s) with %s: %s, gap %s, %.2fs",
                    len(plan.jobsets),
                    plan.solver.name,
                    plan.solver.status,
                    "unknown" if gap is None else f"{gap:.3f}",
                    plan.solver.wall_seconds,
                )
        settings = WriteSettings(
            binding=self.config.binding,
            namespaces=self.config.namespaces,
            now=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            instance=self.config.identity,
        )
        writes = plan_writes(
            state,
            managed,
            rev,
            planned,
            index,
            settings,
            announced=self.announced,
            placed_announced=self.placed_announced,
        )
        executed = None
        if self.config.dry_run:
            for w in writes:
                log.info("dry run: would %s", w.describe())
        elif writes:
            executed = execute(
                self.adapter,
                writes,
                policy=self.retry,
                on_object=self.cache.record,
                sleep=self.sleep,
            )
            self._account(executed)
        self._remember(planned, state, now, executed, writes)
        report = CycleReport(
            managed=managed,
            review=rev,
            planned=planned,
            writes=writes,
            executed=executed,
            snapshot=snapshot,
            wall_s=self.clock() - start,
            wake_in_s=wake,
            deferred=deferred,
        )
        self._observe(report)
        return report

    def _account(self, executed: ExecReport) -> None:
        for w in executed.done:
            self.metrics.writes.labels(kind=w.op).inc()
        for w, _ in executed.failed:
            self.metrics.write_failures.labels(kind=w.op).inc()

    def _remember(
        self,
        planned: PlannedRound,
        state: ClusterState,
        now: float,
        executed: ExecReport | None,
        writes: list[Write],
    ) -> None:
        for key in planned.placed:
            self.failed_at.pop(key, None)
            self.announced.pop(key, None)
        for key in planned.unschedulable:
            self.failed_at[key] = (state.capacity_version, now)
        done = executed.done if executed is not None else writes if self.config.dry_run else []
        for w in done:
            if isinstance(w, EmitEvent) and w.reason == "Unschedulable":
                self.announced[w.jobset] = str(w.body.get("message"))
            elif isinstance(w, EmitEvent) and w.reason == "Placed":
                self.placed_announced.add((w.jobset, w.plan_id))

    def _observe(self, report: CycleReport) -> None:
        m = self.metrics
        m.cycles.inc()
        m.cycle_seconds.observe(report.wall_s)
        m.pending.set(len(report.review.targets) - len(report.planned.placed))
        m.placed.set(
            len(report.review.in_force)
            + len([k for k in report.planned.placed if k not in report.review.in_force])
        )
        m.unschedulable.set(len(report.planned.unschedulable))
        log.debug(
            "cycle: %d managed, %d in force, %d targets, %d placed, %d unschedulable, "
            "%d writes, %.3fs",
            len(report.managed),
            len(report.review.in_force),
            len(report.review.targets),
            len(report.planned.placed),
            len(report.planned.unschedulable),
            len(report.writes),
            report.wall_s,
        )

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
        gc.freeze()

    def run_once(self) -> CycleReport:
        """List everything, run one full cycle planning every pending JobSet now, return."""
        self.relist()
        return self.run_cycle(force_plan=True)

    def run(self, stop: threading.Event) -> None:
        """Watch and reconcile until `stop` is set."""
        self.metrics.leader.set(1)
        try:
            self._relist_until_ok(stop)
            self.cache.start_watches(stop)
            last_resync = self.clock()
            seen = -1
            wake: float | None = None
            failures = 0
            while not stop.is_set():
                timeout = self.config.replan_s if wake is None else max(0.0, wake)
                timeout = min(
                    timeout, max(0.0, self.config.resync_s - (self.clock() - last_resync))
                )
                self.cache.wait_for_change(seen, timeout)
                if stop.is_set():
                    break
                stop.wait(self.config.debounce_s)
                seen = self.cache.version
                try:
                    if self.clock() - last_resync >= self.config.resync_s:
                        self.relist()
                        last_resync = self.clock()
                        seen = self.cache.version
                    report = self.run_cycle()
                    wake = report.wake_in_s
                    failures = 0
                except PlacerError as e:
                    failures += 1
                    log.error("reconcile cycle failed: %s", e)
                    stop.wait(min(30.0, 0.5 * 2 ** min(failures, 6)))
                except Exception:  # a bug must not take the controller down with it
                    failures += 1
                    log.exception("reconcile cycle crashed")
                    stop.wait(min(30.0, 0.5 * 2 ** min(failures, 6)))
        finally:
            self.metrics.leader.set(0)

    def _relist_until_ok(self, stop: threading.Event) -> None:
        delay = 0.5
        while not stop.is_set():
            try:
                self.relist()
                return
            except PlacerError as e:
                log.warning("initial list failed (%s); retrying in %.1fs", e, delay)
                stop.wait(delay)
                delay = min(30.0, delay * 2)
