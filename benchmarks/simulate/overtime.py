"""Over time: a discrete-event simulation of JobSets arriving, running, failing and finishing.

Every `round_s` of simulated time in which something changed (an arrival, a finish, a failure, a
repair), the policy plans all pending JobSets against the current cluster; what it places starts
at once and runs for its (trace) duration. The arrival sequence, durations and failure draws are
the same for every policy; only the placements differ.

- Cluster state is kept here (a dict of `Node`s whose free capacity and JobSet owners are updated
  as pods start and stop), not in the controller's in-memory API server (`placer.controller.
  memory_adapter`): driving the whole controller would time the controller, and the question here is
  what the placement policy does to queueing.
- first-fit may place only some child Jobs of a JobSet (upstream behavior): those hold their
  domains, idle, and the rest is planned again in later rounds; the JobSet starts when complete.
- Failures: a drawn share of JobSets fails once at a drawn point of its run, because one of its
  hosts goes NotReady (repaired after `repair_s`). The JobSet restarts from its last checkpoint
  (every `checkpoint_s`) and goes back to the queue with its original arrival time.
- The fleet and the arrivals (offered load, failure draws) come from `benchmarks.worlds.simworld`.
- Preemption (issue 20): `cpsat-preempt` plans with `--preemption lower-priority` (the planner
  chooses the cheapest whole victims); `kueue-preempt` is best-fit plus Kueue-like greedy
  preemption (`benchmarks.simulate.greedy_preempt`). An evicted JobSet loses the work since its last
  checkpoint (every `checkpoint_s`, as a failure does) and goes back to the queue with its
  original arrival time; lost accelerator-hours and preemptions per JobSet are counted.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal
from typing import Any

from benchmarks.reporting.metrics import checked
from benchmarks.reporting.progress import Progress
from benchmarks.simulate.greedy_preempt import first_fitting_victims
from benchmarks.simulate.policies import POLICIES, Policy
from benchmarks.simulate.results import SimResult, time_average
from benchmarks.worlds.queues import BASE_TIME, JobSetSpec
from benchmarks.worlds.simworld import SimConfig, SimWorld
from placer.model.cluster import (
    ClusterSnapshot,
    DomainReservation,
    JobSetUsage,
    Node,
    RunningJobSet,
)
from placer.model.options import (
    SolveOptions,
)
from placer.model.plan import Plan
from placer.model.preemption import PreemptionFacts, PreemptionPolicy
from placer.solver.time.schedule.solve import HintChanges
from placer.solver.time.timeaware import reservations_of

__all__ = ["simulate"]


@dataclass
class _Job:
    spec: JobSetSpec
    arrival_s: float
    remaining_s: float
    state: str = "waiting"
    first_start: float | None = None
    run_start: float = 0.0
    run_remaining_s: float = 0.0
    """What was left of the run when it last started."""
    epoch: int = 0
    restarts: int = 0
    held: dict[str, int] = field(default_factory=dict)
    """replicated job -> child Jobs already placed (first-fit partial holdings)."""
    pods: list[tuple[str, dict[str, Decimal]]] = field(default_factory=list)
    units_held: int = 0
    preempted: int = 0


class _Sim:
    def __init__(
        self,
        world: SimWorld,
        policy: Policy,
        options: SolveOptions,
        cfg: SimConfig,
        estimates: dict[str, float | None] | None = None,
    ):
        self.world, self.policy, self.options, self.cfg = world, policy.name, options, cfg
        self.spec = policy
        self.solver = policy.build()
        self.estimates = estimates or {js.key: js.duration_s for js in world.queue}
        """JobSet -> the run time it announces (None: it announces none)."""
        self.nodes: dict[str, Node] = {n.name: n for n in world.snapshot.nodes}
        self.jobs = {js.key: _Job(js, js.arrival_s, js.duration_s) for js in world.queue}
        self.events: list[tuple[float, int, str, str, int]] = []
        self.seq = 0
        self.busy = 0
        self.util: list[tuple[float, float, float]] = [(0.0, 0.0, 0.0)]
        self.rounds = 0
        self.walls: list[float] = []
        self.hint_changes: list[HintChanges] = []
        self.checked = 0
        self.kept: tuple[DomainReservation, ...] = ()
        """The last round's reservations, handed to the next as the controller's ledger hands
        them to its next cycle, so a reservation stays where it is while it fits."""
        self.kept_at = 0.0
        self.lost_s = 0.0
        """Accelerator-seconds of work lost to preemption."""
        for js in world.queue:
            self._push(js.arrival_s, "arrive", js.key)

    def _push(self, t: float, kind: str, key: str, epoch: int = 0) -> None:
        heapq.heappush(self.events, (t, self.seq, kind, key, epoch))
        self.seq += 1

    def _record(self, t: float) -> None:
        total = max(self.world.total_units, 1)
        held = sum(j.units_held for j in self.jobs.values())
        self.util.append((t, self.busy / total, held / total))

    def _hold(self, job: _Job, node: str, req: dict[str, Decimal], sign: int) -> None:
        n = self.nodes[node]
        free = dict(n.free)
        for k, v in req.items():
            free[k] = free.get(k, Decimal(0)) - sign * v
        free["pods"] = free.get("pods", Decimal(0)) - sign
        owners = set(n.jobsets)
        usage = dict(n.jobset_usage)
        key = job.spec.key
        mine = dict(usage[key].requests) if key in usage else {}
        for k, v in {**req, "pods": Decimal(1)}.items():
            mine[k] = mine.get(k, Decimal(0)) + sign * v
        if sign > 0:
            owners.add(key)
        elif not any(h == node for h, _ in job.pods):
            owners.discard(key)
        if key in owners:
            usage[key] = JobSetUsage(requests=mine, priority=job.spec.priority)
        else:
            usage.pop(key, None)
        self.nodes[node] = n.model_copy(
            update={"free": free, "jobsets": tuple(sorted(owners)), "jobset_usage": usage}
        )

    def _release(self, job: _Job) -> None:
        pods, job.pods = job.pods, []
        for node, req in pods:
            self._hold(job, node, req, -1)
        job.held = {}
        job.units_held = 0

    def run(self) -> SimResult:
        t = 0.0
        dirty = False
        while self.events:
            tick = math.ceil(max(self.events[0][0], t) / self.cfg.round_s) * self.cfg.round_s
            while self.events and self.events[0][0] <= tick:
                et, _, kind, key, epoch = heapq.heappop(self.events)
                dirty |= self._event(et, kind, key, epoch)
            t = tick
            pending = [j for j in self.jobs.values() if j.state == "pending"]
            if dirty and pending:
                self._round(t, pending)
            dirty = False
        end = max([t, *(j.first_start or 0.0 for j in self.jobs.values())])
        delays = [
            (j.first_start if j.first_start is not None else end) - j.arrival_s
            for j in self.jobs.values()
        ]
        finished = sum(1 for j in self.jobs.values() if j.state == "done")
        horizon = self.util[-1][0]
        window = self.world.queue[-1].arrival_s
        return SimResult(
            world=self.world.name,
            policy=self.policy,
            delays_s=delays,
            never_started=sum(1 for j in self.jobs.values() if j.first_start is None),
            starved=sum(1 for d in delays if d > self.cfg.starve_s),
            makespan_s=horizon,
            finished=finished,
            restarts=sum(j.restarts for j in self.jobs.values()),
            utilization=self.util,
            mean_utilization=time_average(self.util, horizon),
            window_utilization=time_average(self.util, window),
            window_s=window,
            rounds=self.rounds,
            round_wall_s=self.walls,
            hint_changes=self.hint_changes,
            checked_plans=self.checked,
            priorities=[j.spec.priority for j in self.jobs.values()],
            preemptions=[j.preempted for j in self.jobs.values()],
            lost_chip_hours=self.lost_s / 3600.0,
            busy_chip_hours=time_average(self.util, horizon)
            * horizon
            * self.world.total_units
            / 3600.0,
        )

    def _event(self, t: float, kind: str, key: str, epoch: int) -> bool:
        if kind == "repair":
            self.nodes[key] = self.nodes[key].model_copy(update={"ready": True})
            return True
        job = self.jobs[key]
        if kind == "arrive":
            job.state = "pending"
            return True
        if epoch != job.epoch or job.state != "running":
            return False
        self.busy -= job.units_held
        if kind == "finish":
            job.state = "done"
            self._release(job)
        else:  # fail: one host breaks, the JobSet restarts from its last checkpoint
            _, which = self.world.failures[key]
            broken = job.pods[which % len(job.pods)][0]
            elapsed = t - job.run_start
            job.remaining_s -= math.floor(elapsed / self.cfg.checkpoint_s) * self.cfg.checkpoint_s
            job.restarts += 1
            job.state = "pending"
            job.epoch += 1
            self._release(job)
            self.nodes[broken] = self.nodes[broken].model_copy(update={"ready": False})
            self._push(t + self.cfg.repair_s, "repair", broken)
        self._record(t)
        return True

    def _still_pending(self, t: float, pending: set[str]) -> tuple[DomainReservation, ...]:
        """The last round's reservations of JobSets still waiting, on this round's clock."""
        shift = t - self.kept_at
        return tuple(
            r.model_copy(
                update={"start_s": max(0.0, r.start_s - shift), "end_s": max(0.0, r.end_s - shift)}
            )
            for r in self.kept
            if r.jobset in pending
        )

    def _round(self, t: float, pending: list[_Job]) -> None:
        requests = []
        for j in pending:
            counts = {r.name: r.replicas - j.held.get(r.name, 0) for r in j.spec.rjobs}
            requests.append(j.spec.to_request(replicas=counts if j.held else None))
        requests = [
            r.model_copy(update={"expected_duration_s": self._announced(self.jobs[r.key])})
            for r in requests
        ]
        running = {
            key: RunningJobSet(
                started_at=BASE_TIME + timedelta(seconds=j.run_start),
                expected_duration_s=self._announced(j, at_start=True),
                preemption=PreemptionFacts(checkpoint_interval_s=self.cfg.checkpoint_s),
            )
            for key, j in self.jobs.items()
            if j.state == "running"
        }
        snapshot = ClusterSnapshot(
            nodes=tuple(self.nodes.values()),
            priority_classes=self.world.snapshot.priority_classes,
            levels=self.world.snapshot.levels,
            source=self.world.name,
            running=running,
            reservations=self._still_pending(t, {r.key for r in requests}),
        )
        options = self.options.model_copy(
            update={
                "preemption": PreemptionPolicy(mode=self.spec.preemption),
                "queue": self.spec.queue,
                "time": self.spec.time_policy(
                    BASE_TIME + timedelta(seconds=t),
                    self.cfg.default_duration_s,
                    self.options.time.schedule_search,
                ),
            }
        )
        plan = self.solver.solve(snapshot, requests, options)
        if self.spec.time_policy().active:
            self.kept, self.kept_at = reservations_of(plan, requests, options.time), t
        self.rounds += 1
        self.walls.append(plan.solver.wall_seconds)
        self.hint_changes += [c for n in plan.solver.notes if (c := HintChanges.parse(n))]
        if checked(plan, snapshot, requests, options, where=f"sim {self.world.name} t={t}"):
            self.checked += 1
        for p in plan.preempted:
            self._preempt(t, self.jobs[p.key])
        self._apply(t, plan, requests)
        if self.spec.greedy_preemption:
            self._greedy_preemption(t, snapshot, requests, plan, options)
        self._record(t)

    def _apply(self, t: float, plan: Plan, requests: Sequence[Any]) -> None:
        """Hold what the plan places; start the JobSets placed whole."""
        by_key = {r.key: r for r in requests}
        for o in plan.jobsets:
            if o.status == "unschedulable":
                continue
            job = self.jobs[o.key]
            shapes = {r.name: r for r in by_key[o.key].replicated_jobs}
            for placement in o.jobs:
                rjob = shapes[placement.replicated_job]
                for p in placement.pods:
                    job.pods.append((p.node, dict(rjob.pod.requests)))
                    self._hold(job, p.node, dict(rjob.pod.requests), +1)
                job.held[rjob.name] = job.held.get(rjob.name, 0) + 1
                job.units_held += rjob.accelerator_units_per_job
            if o.status == "placed":
                self._start(t, job)

    def _preempt(self, t: float, job: _Job) -> None:
        """Evict a running JobSet whole: it loses the work since its last checkpoint and waits
        again with its original arrival time."""
        elapsed = t - job.run_start
        kept = math.floor(elapsed / self.cfg.checkpoint_s) * self.cfg.checkpoint_s
        self.lost_s += job.units_held * (elapsed - kept)
        job.remaining_s = job.run_remaining_s - kept
        job.preempted += 1
        self.busy -= job.units_held
        job.state = "pending"
        job.epoch += 1
        self._release(job)

    def _greedy_preemption(
        self,
        t: float,
        before: ClusterSnapshot,
        requests: Sequence[Any],
        plan: Plan,
        options: SolveOptions,
    ) -> None:
        """Kueue-like preemption after the plan: each blocked JobSet, in queue order, evicts
        running JobSets of lower priority, lowest priority (then most recently started) first,
        one at a time, until it fits alone (`greedy_preempt.first_fitting_victims`)."""
        blocked = [r for r in requests if plan.outcome(r.key).status != "placed"]
        for request in sorted(blocked, key=lambda r: r.queue_key()):
            snapshot = before.model_copy(update={"nodes": tuple(self.nodes.values())})
            running = {
                k: (j.spec.priority, j.run_start)
                for k, j in self.jobs.items()
                if j.state == "running"
            }
            found = first_fitting_victims(snapshot, request, running, options)
            if found is None:
                continue
            victims, single = found
            for key in victims:
                self._preempt(t, self.jobs[key])
            self._apply(t, single, [request])

    def _announced(self, job: _Job, *, at_start: bool = False) -> float | None:
        """The run time the JobSet announces for what is left of it (restarts shorten it)."""
        estimate = self.estimates.get(job.spec.key)
        if estimate is None:
            return None
        left = job.remaining_s if not at_start else job.run_remaining_s
        return max(1.0, estimate * left / job.spec.duration_s)

    def _start(self, t: float, job: _Job) -> None:
        job.state = "running"
        job.run_start = t
        job.run_remaining_s = job.remaining_s
        if job.first_start is None:
            job.first_start = t
        self.busy += job.units_held
        failure = self.world.failures.get(job.spec.key)
        if failure is not None and job.restarts == 0:
            self._push(t + failure[0] * job.remaining_s, "fail", job.spec.key, job.epoch)
        else:
            self._push(t + job.remaining_s, "finish", job.spec.key, job.epoch)


def simulate(
    world: SimWorld,
    policies: Sequence[str],
    options: SolveOptions,
    cfg: SimConfig,
    *,
    progress: Progress | None = None,
    estimates: dict[str, float | None] | None = None,
) -> list[SimResult]:
    """Each policy (a name in `POLICIES`) over the same arrivals; `estimates` are the run times
    the JobSets announce (default: exact)."""
    results = []
    for policy in policies:
        if progress:
            progress.step(f"over time {world.name} {policy}")
        results.append(_Sim(world, POLICIES[policy], options, cfg, estimates).run())
        if progress:
            progress.advance()
    return results
