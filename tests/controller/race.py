"""Concurrent controllers against one API server: the ledger's guarantee, tried many ways.

A trial is drawn from a seed: a cluster of `blocks` topology blocks, JobSets in the namespaces
ns0..ns2, and two or three controllers, each with its own HTTP client, namespaces and solver, all
against the API-server stand-in over HTTP (the official client, the real adapter):

- `once`: `placer controller --once` run again and again, like a cron job (a fresh controller
  each time, no memory);
- `loop`: a long-running controller without leader election;
- `elected`: two leader-elected replicas on one Lease; in some trials the leader is cut off from
  the Lease (503 on its lease calls) while a slowed-down solver keeps it inside a cycle, so its
  lease expires mid-cycle and the other replica takes over.

Meanwhile a churn thread adds JobSets and finishes placed ones. The verdict is read from the API
server's history, not from the controllers' reports:

- safety: no block is ever released to two child Jobs at once. A child Job is released into a
  block when one of its pods loses the placement gate with the block in its node affinity; it
  holds the block until its JobSet finishes. Two holders whose holds overlap in time are a double
  placement.
- liveness: once the churn stops and the controllers settle, and one more `--once` pass (CP-SAT,
  every namespace) has run as the next cron run would, every unfinished JobSet is placed or has
  more child Jobs than blocks are left free. Leaked holds (an entry kept for a finished JobSet, a
  record no one can see) fail this. How many JobSets only the final pass placed is counted too.

`python -m benchmarks.controller_race --trials 200` runs many trials (its figures are in
benchmarks/RESULTS-controller.md); tests/controller/test_race.py runs a few in CI.
"""

from __future__ import annotations

import contextlib
import logging
import random
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from benchmarks.simulate import cluster_sim as sim
from placer.controller.act.kube_adapter import KubeAdapter
from placer.controller.act.leader import LeaderSettings, run_elected
from placer.controller.act.memory_adapter import MemoryCluster
from placer.controller.adapter import Obj
from placer.controller.reconcile import Controller, ControllerConfig
from placer.model.assignment import PLACEMENT_GATE
from placer.model.cluster import ClusterSnapshot
from placer.model.options import SolveOptions
from placer.model.plan import Plan
from placer.model.workload import JobSetRequest
from placer.solver.interface import Solver
from placer.solver.registry import get_solver
from tests.controller.apiserver import ApiServer
from tests.controller.builders import BLOCK, add_jobset, record, tpu_cluster

__all__ = ["Trial", "TrialResult", "draw_trial", "run_trial"]

log = logging.getLogger(__name__)

NAMESPACES = ("ns0", "ns1", "ns2")
SOLVERS = ("best-fit", "first-fit", "largest-first", "cpsat")
QUIET_S = 2.0
LEASE = LeaderSettings(
    lease="placer",
    namespace="placer-system",
    identity="",
    lease_duration_s=3,
    renew_deadline_s=2,
    retry_period_s=1,
)


@dataclass(frozen=True)
class Role:
    kind: str
    """once, loop or elected."""
    namespaces: tuple[str, ...]
    solver: str
    slow_s: float = 0.0
    """Seconds each solve is held back (elected trials that cut the leader off)."""


@dataclass(frozen=True)
class Trial:
    seed: int
    blocks: int
    jobsets: tuple[tuple[str, str, int], ...]
    """(namespace, name, child Jobs) present at the start."""
    arrivals: tuple[tuple[float, str, str, int], ...]
    """(seconds after start, namespace, name, child Jobs) added by the churn thread."""
    finishes: int
    """Placed JobSets the churn thread finishes (one every ~0.3 s)."""
    roles: tuple[Role, ...]
    cut_leader_at_s: float | None = None


@dataclass
class TrialResult:
    trial: Trial
    double_placements: list[str] = field(default_factory=list)
    unplaced: list[str] = field(default_factory=list)
    """JobSets that fit but were not placed when the trial ended."""
    placed: int = 0
    left_by_trial: int = 0
    """JobSets that fit but waited when the concurrent phase ended (a greedy solver's choice, or a
    stuck controller): the final pass placed them, or they are in `unplaced`."""
    wall_s: float = 0.0
    commits: int = 0
    conflicts: int = 0
    deposed: int = 0
    """Leaders that found the ledger claimed by a newer leader and stopped writing."""
    leaders: int = 0
    """Replicas that led (2 after a takeover)."""

    @property
    def ok(self) -> bool:
        return not self.double_placements and not self.unplaced


def draw_trial(seed: int, *, elected: bool | None = None) -> Trial:
    rnd = random.Random(seed)
    blocks = rnd.randint(3, 6)
    jobsets = tuple(
        (rnd.choice(NAMESPACES), f"js{i}", rnd.randint(1, 2)) for i in range(rnd.randint(2, 6))
    )
    arrivals = tuple(
        (rnd.uniform(0.0, 1.5), rnd.choice(NAMESPACES), f"late{i}", rnd.randint(1, 2))
        for i in range(rnd.randint(0, 3))
    )
    use_elected = rnd.random() < 0.3 if elected is None else elected
    kinds = ["elected"] if use_elected else []
    while len(kinds) < rnd.randint(2, 3):
        kinds.append(rnd.choice(["once", "loop"]))
    roles = []
    for kind in kinds:
        scope: tuple[str, ...] = ()
        if rnd.random() < 0.5:
            scope = tuple(sorted(rnd.sample(NAMESPACES, rnd.randint(1, 2))))
        slow = rnd.uniform(0.5, 4.0) if kind == "elected" and rnd.random() < 0.5 else 0.0
        roles.append(Role(kind, scope, rnd.choice(SOLVERS), slow))
    # Every namespace is managed by someone, so liveness can be judged for every JobSet.
    covered = (
        {ns for r in roles for ns in r.namespaces} if all(r.namespaces for r in roles) else set()
    )
    if covered and covered != set(NAMESPACES):
        roles[0] = Role(roles[0].kind, (), roles[0].solver, roles[0].slow_s)
    cut = rnd.uniform(0.5, 2.0) if use_elected and rnd.random() < 0.6 else None
    if cut is not None:
        # The leader is cut off from its Lease just as a JobSet arrives, and its solver takes
        # longer than the lease: its lease expires mid-cycle and the other replica takes over
        # (and later has work of its own).
        roles[0] = Role(
            "elected", roles[0].namespaces, roles[0].solver, LEASE.lease_duration_s + 1.5
        )
        arrivals += (
            (cut + 0.05, rnd.choice(NAMESPACES), "during", 1),
            (cut + 2 * LEASE.lease_duration_s + 2.0, rnd.choice(NAMESPACES), "after", 1),
        )
    return Trial(
        seed=seed,
        blocks=blocks,
        jobsets=jobsets,
        arrivals=arrivals,
        finishes=rnd.randint(0, 2),
        roles=tuple(roles),
        cut_leader_at_s=cut,
    )


class _Slow:
    """A solver held back `delay_s` per call: keeps a controller inside its cycle."""

    def __init__(self, inner: Solver, delay_s: float, stop: threading.Event) -> None:
        self.inner, self.delay_s, self.stop = inner, delay_s, stop
        self.name = inner.name

    def solve(
        self, snapshot: ClusterSnapshot, jobsets: Sequence[JobSetRequest], options: SolveOptions
    ) -> Plan:
        time.sleep(self.delay_s)
        return self.inner.solve(snapshot, jobsets, options)


def _config(role: Role, identity: str) -> ControllerConfig:
    return ControllerConfig(
        solver=role.solver,
        namespaces=role.namespaces,
        options=SolveOptions(time_limit_s=2.0, workers=1),
        window_s=0.0,
        replan_s=0.5,
        debounce_s=0.02,
        watch_timeout_s=2.0,
        identity=identity,
        ledger_namespace="placer-system",
        list_retry_s=2.0,
    )


class _Run:
    """The controllers of one trial, in threads; `stop()` ends them all."""

    def __init__(self, api: ApiServer, trial: Trial) -> None:
        self.api, self.trial = api, trial
        self.halt = threading.Event()
        self.threads: list[threading.Thread] = []
        self.controllers: list[Controller] = []
        self.leaders: list[str] = []
        self.lock = threading.Lock()
        self.cut = False

    def _controller(self, role: Role, identity: str, stop: threading.Event) -> Controller:
        adapter = KubeAdapter(self.api.client(agent=identity), request_timeout_s=5)
        solver: Solver = get_solver(role.solver)
        if role.slow_s:
            solver = _Slow(solver, role.slow_s, stop)
        ctl = Controller(adapter, _config(role, identity), solver=solver)
        with self.lock:
            self.controllers.append(ctl)
        return ctl

    def _once(self, role: Role, n: int) -> None:
        rnd = random.Random(self.trial.seed * 100 + n)
        run = 0
        while not self.halt.is_set():
            run += 1
            ctl = self._controller(role, f"once{n}-{run}", self.halt)
            try:
                ctl.run_once()
            except Exception as e:  # a failed run is retried, as a cron job would be
                log.info("once%d run %d failed: %s", n, run, e)
            self.halt.wait(rnd.uniform(0.0, 0.2))

    def _loop(self, role: Role, n: int) -> None:
        self._controller(role, f"loop{n}", self.halt).run(self.halt)

    def _replica(self, role: Role, identity: str) -> None:
        stop = threading.Event()
        ctl = self._controller(role, identity, stop)
        adapter = ctl.adapter
        settings = LeaderSettings(**{**LEASE.__dict__, "identity": identity})

        def work(s: threading.Event) -> None:
            with self.lock:
                self.leaders.append(identity)
            ctl.run_leading(s)

        def relay() -> None:
            self.halt.wait()
            stop.set()

        watcher = threading.Thread(target=relay, daemon=True)
        watcher.start()
        run_elected(adapter, settings, work, stop)

    def start(self) -> None:
        for n, role in enumerate(self.trial.roles):
            targets: list[Callable[[], None]]
            if role.kind == "once":
                targets = [partial(self._once, role, n)]
            elif role.kind == "loop":
                targets = [partial(self._loop, role, n)]
            else:
                targets = [partial(self._replica, role, f"replica{n}{r}") for r in "ab"]
            for target in targets:
                t = threading.Thread(target=target, daemon=True)
                t.start()
                self.threads.append(t)

    def cut_leader(self) -> None:
        with self.lock:
            leader = self.leaders[-1] if self.leaders else None
        if leader:
            self.cut = True
            self.api.partition(leader, "/leases")

    def stop(self) -> None:
        self.halt.set()
        for t in self.threads:
            t.join(timeout=10)


def _blocks(pod: Obj) -> set[str]:
    aff = ((pod.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {}
    terms = (aff.get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get(
        "nodeSelectorTerms"
    ) or []
    return {
        v
        for t in terms
        for r in t.get("matchExpressions") or []
        if r.get("key") == BLOCK
        for v in r.get("values") or []
    }


def _gated(pod: Obj | None) -> bool:
    gates = ((pod or {}).get("spec") or {}).get("schedulingGates") or []
    return any(g.get("name") == PLACEMENT_GATE for g in gates)


def double_placements(cluster: MemoryCluster) -> list[str]:
    """Overlapping holds of one block by two child Jobs, from the API server's history."""
    ends: dict[str, int] = {}
    for rv, type_, old, new in cluster.changes("jobsets"):
        obj = new or old or {}
        uid = str(obj.get("metadata", {}).get("uid"))
        if uid in ends:
            continue
        if type_ == "DELETED" or ((new or {}).get("status") or {}).get("terminalState"):
            ends[uid] = rv
    releases: list[tuple[int, str, str, str]] = []  # (rv, block, holder, jobset uid)
    for rv, _, old, new in cluster.changes("pods"):
        if new is None or not _gated(old) or _gated(new):
            continue
        if (new.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue  # an ended pod never runs: releasing it holds nothing
        labels = new["metadata"].get("labels") or {}
        uid = labels.get("jobset.sigs.k8s.io/jobset-uid", "")
        holder = f"{new['metadata']['namespace']}/{labels.get('batch.kubernetes.io/job-name')}"
        for block in _blocks(new):
            releases.append((rv, block, f"{holder}@{uid}", uid))
    problems = []
    holding: dict[str, tuple[str, str]] = {}  # block -> (holder, jobset uid)
    for rv, block, holder, uid in sorted(releases):
        current = holding.get(block)
        if current is not None and current[0] != holder:
            end = ends.get(current[1])
            if end is None or end > rv:
                problems.append(
                    f"block {block}: {holder} released at {rv} while {current[0]} held it"
                )
        holding[block] = (holder, uid)
    return problems


def unplaced_that_fit(cluster: MemoryCluster, trial: Trial) -> tuple[list[str], int]:
    """Unfinished JobSets without a record although enough blocks are free; and how many are
    placed."""
    used: set[str] = set()
    waiting: list[tuple[str, int]] = []
    placed = 0
    for js in cluster.objects("jobsets"):
        if (js.get("status") or {}).get("terminalState"):
            continue
        ns, name = js["metadata"]["namespace"], js["metadata"]["name"]
        a = record(cluster, name, ns)
        if a is None:
            jobs = len(js["spec"]["replicatedJobs"]) and js["spec"]["replicatedJobs"][0]["replicas"]
            waiting.append((f"{ns}/{name}", int(jobs)))
            continue
        placed += 1
        used |= {j.domain.value for j in a.jobs.values() if j.domain is not None}
    free = trial.blocks - len(used)
    return [
        f"{k} ({jobs} child Jobs, {free} blocks free)" for k, jobs in waiting if jobs <= free
    ], placed


def _progress(cluster: MemoryCluster) -> tuple[int, ...]:
    """Changes a settled trial no longer makes: records written, pods released."""
    jobsets = cluster.objects("jobsets")
    records = sum(1 for js in jobsets if (js["metadata"].get("annotations") or {}))
    released = sum(1 for p in cluster.objects("pods") if not _gated(p))
    return records, released


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Controllers log every write and every refused commit; a trial keeps only errors."""
    names = ["placer", "leaderelection", "kubernetes", "urllib3"]
    levels = {n: logging.getLogger(n).level for n in names}
    for n in names:
        logging.getLogger(n).setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for n, level in levels.items():
            logging.getLogger(n).setLevel(level)


def run_trial(trial: Trial, *, settle_s: float = 15.0) -> TrialResult:
    for role in trial.roles:
        get_solver(role.solver)  # imported here, not by racing threads at the start
    start = time.monotonic()
    cluster = tpu_cluster(blocks=trial.blocks)
    for ns, name, jobs in trial.jobsets:
        add_jobset(cluster, name, jobs=jobs, pods=2, namespace=ns)
    result = TrialResult(trial)
    with _quiet(), ApiServer(cluster) as api:
        run = _Run(api, trial)
        run.start()
        rnd = random.Random(trial.seed)
        t0 = time.monotonic()
        events: list[tuple[float, str, Any]] = [
            (t, "add", (ns, n, j)) for t, ns, n, j in trial.arrivals
        ]
        events += [(0.3 * (i + 1), "finish", None) for i in range(trial.finishes)]
        if trial.cut_leader_at_s is not None:
            events.append((trial.cut_leader_at_s, "cut", None))
        for at, what, arg in sorted(events, key=lambda e: e[0]):
            time.sleep(max(0.0, at - (time.monotonic() - t0)))
            if what == "add":
                ns, name, jobs = arg
                add_jobset(cluster, name, jobs=jobs, pods=2, namespace=ns)
            elif what == "finish":
                # Only JobSets that run (every pod released) can complete.
                done = [
                    js
                    for js in cluster.objects("jobsets")
                    if record(cluster, js["metadata"]["name"], js["metadata"]["namespace"])
                    and not (js.get("status") or {}).get("terminalState")
                    and not any(
                        _gated(p)
                        for p in cluster.objects("pods", js["metadata"]["namespace"])
                        if p["metadata"]["labels"].get("jobset.sigs.k8s.io/jobset-name")
                        == js["metadata"]["name"]
                    )
                ]
                if done:
                    js = rnd.choice(done)
                    sim.finish(cluster, js["metadata"]["namespace"], js["metadata"]["name"])
            else:
                until = time.monotonic() + 5.0
                while not run.leaders and time.monotonic() < until:
                    time.sleep(0.05)
                run.cut_leader()
        # Settled: nothing fitting waits, or nothing changed for a while (a greedy solver may
        # keep the free blocks for an earlier JobSet that does not fit).
        deadline = time.monotonic() + settle_s
        last, since = _progress(cluster), time.monotonic()
        while time.monotonic() < deadline and (
            unplaced_that_fit(cluster, trial)[0] or (run.cut and len(run.leaders) < 2)
        ):
            time.sleep(0.1)
            now = _progress(cluster)
            if now != last:
                last, since = now, time.monotonic()
            elif time.monotonic() - since > QUIET_S + max(r.slow_s for r in trial.roles):
                break
        time.sleep(0.3)  # writes of a cycle still running land too
        run.stop()
        result.left_by_trial = len(unplaced_that_fit(cluster, trial)[0])
        # "Eventually": one more pass, as the next cron run would make. CP-SAT over every
        # namespace; it sees only what the ledger and the records leave free.
        final = Controller(
            KubeAdapter(api.client(agent="final"), request_timeout_s=5),
            _config(Role("once", (), "cpsat"), "final"),
        )
        final.run_once()
    result.double_placements = double_placements(cluster)
    result.unplaced, result.placed = unplaced_that_fit(cluster, trial)
    for ctl in run.controllers:
        reg = ctl.metrics.registry
        result.commits += int(
            reg.get_sample_value("placer_ledger_commits_total", {"outcome": "committed"}) or 0
        )
        result.conflicts += int(
            reg.get_sample_value("placer_ledger_commits_total", {"outcome": "conflict"}) or 0
        )
        result.deposed += int(ctl.deposed)
    result.leaders = len(run.leaders)
    result.wall_s = time.monotonic() - start
    return result
