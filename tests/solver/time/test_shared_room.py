"""The reservation pass judges JobSets without an exclusive key node by node, in queue order.

Before, it counted every such JobSet as starting now whatever the room, and lifted it into the
tier the inner solve places first. Its pods then took nodes of domains the pass had given
exclusive JobSets starting now, and the inner solve was run again for each one displaced (7-11 s
of a 12-16 s pass at 10,000 nodes, benchmarks/RESULTS-controller.md, round 38).
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from placer.model.cluster import ClusterSnapshot
from placer.model.options import SolveOptions, TimePolicy
from placer.model.plan import Plan
from placer.model.workload import JobSetRequest
from placer.solver.check.checker import check
from placer.solver.interface import Solver
from placer.solver.registry import get_solver
from placer.solver.time.release import ReleaseTimeline
from placer.solver.time.reservations import reserve
from placer.solver.time.shared.room import NodeRoom
from placer.solver.time.standing import reservation_order
from placer.solver.time.timeaware import TimeAwareSolver
from placer.solver.time.units import Units
from tests.solver.time.test_shared_starts import _running
from tests.solver.time.test_timeaware import NOW, H, _timed
from tests.strategies import NODEPOOL, cluster, jobset, pool, rjob, running_pool

ALL = SolveOptions(workers=1, time=TimePolicy(now=NOW, reservations="all"))
KEPT_TO_THE_PASS = "held to the domains the pass gave them"
"""In the note of a plan solved again because it left out a JobSet the pass starts now
(`timeaware._keep_start_now`); the release's note (a JobSet started now early, its later
reservation dropped) also begins "start now: solved again", and is no such failure."""


def _shared(name: str, *, pool_name: str | None = None, priority: int = 0) -> JobSetRequest:
    """Two pods of four chips (one pool's worth), no exclusive key; on `pool_name` only if
    given."""
    selector = {NODEPOOL: pool_name} if pool_name else None
    js = jobset(name, rjob(exclusive=None, node_selector=selector), priority=priority)
    return js


def _exclusive(name: str, *, pool_name: str | None = None, priority: int = 0) -> JobSetRequest:
    """One child Job taking a pool whole; on `pool_name` only if given."""
    selector = {NODEPOOL: pool_name} if pool_name else None
    return jobset(name, rjob(node_selector=selector), priority=priority)


def _solve(snap: ClusterSnapshot, queue: list[JobSetRequest], solver: str) -> Plan:
    plan = get_solver(solver, time_policy=ALL.time).solve(snap, queue, ALL)
    assert check(plan, snap, queue, ALL) == []
    return plan


def _pass(snap: ClusterSnapshot, queue: list[JobSetRequest]) -> dict[str, float | None]:
    """The reservation pass alone (queue order as given): each JobSet's start."""
    timeline = ReleaseTimeline.of_policy(snap, ALL.time, NOW)
    units = Units(snap, queue, ALL, timeline)
    durations = {js.key: js.expected_duration_s or 0.0 for js in queue}
    candidates = [units.candidate(js, durations[js.key]) for js in queue]
    room = NodeRoom(units, queue, durations)
    found = reserve(units.layout, candidates, free_at=units.free_at, room=room)
    return {r.jobset: r.start_s for r in found}


class _Counting:
    """An inner solver that counts its solves."""

    def __init__(self, inner: Solver) -> None:
        self.inner, self.name, self.solves = inner, inner.name, 0

    def solve(
        self, snapshot: ClusterSnapshot, jobsets: Sequence[JobSetRequest], options: SolveOptions
    ) -> Plan:
        self.solves += 1
        return self.inner.solve(snapshot, jobsets, options)


@pytest.mark.parametrize("schedule", ["greedy", "cpsat"])
@pytest.mark.parametrize("solver", ["cpsat", "best-fit"])
def test_pods_queued_ahead_take_their_nodes_before_the_jobsets_behind_are_given_domains(
    solver: str, schedule: str
) -> None:
    """Two free pools, a third running for 3 h. `first` (priority 10, no exclusive key) fills
    one pool; `pair` (priority 0, two pools whole) is queued behind it. The pass counted both as
    starting now, on the two free pools; the inner solve put `first`'s pods on one of them, left
    `pair` out, and was run a second time in vain. Now the pass starts only `first` now, and
    `pair` when it ends: one solve. With `--schedule cpsat` the schedule holds the pool
    `first`'s pods close."""
    snap = _running(
        cluster(pool("pool-0", 2), pool("pool-1", 2), running_pool("pool-2", 2, "ns/run-a")),
        {"ns/run-a": 3},
    )
    queue = [
        _timed(_shared("first", priority=10), 2, 10),
        _timed(jobset("pair", rjob(replicas=2)), 2, 5),
    ]
    options = ALL.model_copy(update={"time": ALL.time.model_copy(update={"schedule": schedule})})
    counting = _Counting(get_solver(solver))
    plan = TimeAwareSolver(counting).solve(snap, queue, options)
    assert check(plan, snap, queue, options) == []
    assert counting.solves == 1
    assert plan.outcome("team-a/first").status == "placed"
    pair = plan.outcome("team-a/pair")
    assert (pair.status, pair.expected_start_seconds) == ("unschedulable", 2 * H)


def test_one_fitting_only_on_a_domain_given_to_a_jobset_ahead_does_not_start_now() -> None:
    """`second` has no exclusive key and fits only `pool-0`, which `first`, queued ahead, takes
    now for two hours: the pass starts it once `first` ends, not now."""
    snap = cluster(pool("pool-0", 2), pool("pool-1", 2))
    queue = [
        _timed(_exclusive("first", pool_name="pool-0"), 2, 10),
        _timed(_shared("second", pool_name="pool-0"), 1, 5),
    ]
    assert _pass(snap, queue) == {"team-a/first": 0.0, "team-a/second": 2 * H}


def test_a_domain_its_pods_take_is_closed_to_exclusive_jobsets_behind_for_its_run() -> None:
    """`first`'s pods fit only `pool-0`: `second`, needing `pool-0` whole, starts when they end
    (before, the pass started both now on the same pool)."""
    snap = cluster(pool("pool-0", 2), pool("pool-1", 2))
    queue = [
        _timed(_shared("first", pool_name="pool-0"), 3, 10),
        _timed(_exclusive("second", pool_name="pool-0"), 1, 5),
    ]
    assert _pass(snap, queue) == {"team-a/first": 0.0, "team-a/second": 3 * H}


@pytest.mark.parametrize("solver", ["cpsat", "best-fit"])
def test_pods_go_to_the_domain_no_jobset_of_the_queue_can_take(solver: str) -> None:
    """Two free pools; `second`, behind, can take only `pool-0`. `first`'s pods go to `pool-1`,
    in the pass and in the ledger alike (`PlacementContext.shared_pod_rank`), and both start
    now in one solve. By name they went to `pool-0`: the pass then started only `first`, and
    best-fit, even without time, left `second` out."""
    snap = cluster(pool("pool-0", 2), pool("pool-1", 2))
    queue = [
        _timed(_shared("first"), 3, 10),
        _timed(_exclusive("second", pool_name="pool-0"), 1, 5),
    ]
    assert _pass(snap, queue) == {"team-a/first": 0.0, "team-a/second": 0.0}
    counting = _Counting(get_solver(solver))
    plan = TimeAwareSolver(counting).solve(snap, queue, ALL)
    assert check(plan, snap, queue, ALL) == []
    assert [o.status for o in plan.jobsets] == ["placed", "placed"]
    assert counting.solves == 1
    without_time = get_solver(solver).solve(snap, queue, SolveOptions(workers=1))
    assert [o.status for o in without_time.jobsets] == ["placed", "placed"]


@pytest.mark.parametrize("schedule", ["greedy", "cpsat"])
def test_one_queued_behind_a_jobset_it_cannot_start_beside_does_not_take_its_place(
    schedule: str,
) -> None:
    """Equal priorities; `first` (one child Job of one chip a pod, `pool-0` whole) is queued
    ahead of `second` (two pods of four chips, no exclusive key, on `pool-0` only). Both were
    counted as starting now, in one tier, and CP-SAT started `second`, which holds more chips;
    with `--schedule cpsat` the schedule still counts it so, and the pass now judges it at its
    turn in queue order."""
    snap = cluster(pool("pool-0", 2), pool("pool-1", 2))
    queue = [
        _timed(jobset("first", rjob(node_selector={NODEPOOL: "pool-0"}, tpu=1)), 2, 10),
        _timed(_shared("second", pool_name="pool-0"), 1, 5),
    ]
    options = ALL.model_copy(update={"time": ALL.time.model_copy(update={"schedule": schedule})})
    plan = get_solver("cpsat", time_policy=options.time).solve(snap, queue, options)
    assert check(plan, snap, queue, options) == []
    assert plan.outcome("team-a/first").status == "placed"
    second = plan.outcome("team-a/second")
    assert (second.status, second.expected_start_seconds) == ("unschedulable", 2 * H)


def test_one_that_fits_nowhere_now_waits_for_the_runs_on_its_nodes() -> None:
    snap = _running(cluster(running_pool("pool-0", 2, "ns/run-a")), {"ns/run-a": 1})
    assert _pass(snap, [_timed(_shared("later"), 1, 5)]) == {"team-a/later": 1 * H}
    nowhere = _timed(_shared("nowhere", pool_name="gone"), 1, 5)
    assert _pass(snap, [nowhere]) == {"team-a/nowhere": None}


@st.composite
def _queues(draw: st.DrawFn) -> tuple[ClusterSnapshot, list[JobSetRequest]]:
    """Two to four pools, some held by running JobSets; a queue of up to five JobSets, each
    either one pool whole or two pods of four chips without an exclusive key, on a drawn pool
    or anywhere, of drawn priorities and run times."""
    pools: list[object] = []
    ends: dict[str, float] = {}
    count = draw(st.integers(2, 4))
    for i in range(count):
        if draw(st.booleans()):
            ends[f"ns/run-{i}"] = float(draw(st.integers(1, 3)))
            pools.append(running_pool(f"pool-{i}", 2, f"ns/run-{i}"))
        else:
            pools.append(pool(f"pool-{i}", 2))
    queue = []
    for k in range(draw(st.integers(1, 5))):
        where = draw(st.sampled_from([None, *(f"pool-{i}" for i in range(count))]))
        make = _shared if draw(st.booleans()) else _exclusive
        js = make(f"js-{k}", pool_name=where, priority=draw(st.sampled_from([0, 10])))
        queue.append(_timed(js, draw(st.integers(1, 3)), 30 - k))
    return _running(cluster(*pools), ends), queue  # type: ignore[arg-type]


@settings(max_examples=40, deadline=None)
@given(_queues(), st.sampled_from(["cpsat", "best-fit"]))
def test_every_jobset_the_pass_starts_now_is_placed_without_solving_again_by_cpsat(
    world: tuple[ClusterSnapshot, list[JobSetRequest]], solver: str
) -> None:
    """What the pass starts now fits together: CP-SAT, placing the JobSets it starts now in a
    tier above every other, places all of them; and every plan passes the checker (`_solve`).
    Best-fit, which packs in its own order, may solve again, and then too places them all."""
    snap, queue = world
    plan = _solve(snap, queue, solver)
    order = sorted(queue, key=lambda js: reservation_order(js, ALL.time, NOW))
    starts = _pass(snap, order)
    now = {k for k, s in starts.items() if s == 0}
    placed = {o.key for o in plan.jobsets if o.status == "placed"}
    assert now <= placed
    if solver == "cpsat":
        assert not any(KEPT_TO_THE_PASS in n for n in plan.solver.notes)
