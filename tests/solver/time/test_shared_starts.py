"""When a waiting JobSet without an exclusive child Job starts: node by node, over time.

Before, the time-aware pass had no future for such a JobSet: left out of the plan, it was told
expected start 0 ("now"), round after round, whether a reservation or running JobSets kept it
out; and one whose pods fit no node even on an empty cluster was never told "never".
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.reporting.metrics import apply_plan
from placer.model.cluster import ClusterSnapshot, RunningJobSet
from placer.model.options import SolveOptions, TimePolicy
from placer.model.plan import Plan
from placer.model.whatif import without_jobsets
from placer.model.workload import JobSetRequest
from placer.solver.check.checker import check
from placer.solver.registry import get_solver
from placer.solver.time.behind import expected_starts_behind
from placer.solver.time.never import never_reason
from tests.solver.time.test_shared_pods_reserved import _plan as _reserved_plan
from tests.solver.time.test_shared_pods_reserved import _shared
from tests.solver.time.test_timeaware import NOW, H, _queue
from tests.strategies import cluster, jobset, pool, rjob, running_pool

HEAD = SolveOptions(workers=1, time=TimePolicy(now=NOW, reservations="head"))


def _running(snap: ClusterSnapshot, ends_h: dict[str, float]) -> ClusterSnapshot:
    running = {
        k: RunningJobSet(started_at=NOW, expected_duration_s=h * H) for k, h in ends_h.items()
    }
    return snap.model_copy(update={"running": running})


def _solve(snap: ClusterSnapshot, queue: list[JobSetRequest], solver: str = "best-fit") -> Plan:
    plan = get_solver(solver, time_policy=HEAD.time).solve(snap, queue, HEAD)
    assert check(plan, snap, queue, HEAD) == []
    return plan


def _busy() -> ClusterSnapshot:
    """Two pools of two hosts, every chip held: run-a ends in 1 h, run-b in 3 h."""
    return _running(
        cluster(running_pool("pool-0", 2, "ns/run-a"), running_pool("pool-1", 2, "ns/run-b")),
        {"ns/run-a": 1, "ns/run-b": 3},
    )


@pytest.mark.parametrize("solver", ["cpsat", "best-fit"])
def test_a_jobset_kept_out_by_a_reservation_starts_when_it_ends(solver: str) -> None:
    # every pool is reserved for team-a/wide from 2 h to 3 h; a 5-hour run cannot end before
    plan = _reserved_plan(solver, [*_queue(), _shared("long-shared", 5)])
    o = plan.outcome("team-a/long-shared")
    assert (o.status, o.expected_start_seconds) == ("unschedulable", 3 * H)
    assert o.waits_for == ["ns/run-a"]  # running JobSets only, as for every JobSet
    assert o.reserved_domains == []


@pytest.mark.parametrize("solver", ["cpsat", "best-fit"])
def test_a_jobset_starts_when_enough_running_jobsets_end(solver: str) -> None:
    # two pods of four chips fit one pool: run-a's, free in 1 h
    plan = _solve(_busy(), [_shared("two", 2)], solver)
    o = plan.outcome("team-a/two")
    assert (o.status, o.expected_start_seconds, o.waits_for) == (
        "unschedulable",
        1 * H,
        ["ns/run-a"],
    )
    # four pods need both pools: run-b's end too
    four = jobset("four", rjob(replicas=2, pods_per_job=2, exclusive=None))
    plan = _solve(_busy(), [four], solver)
    o = plan.outcome("team-a/four")
    assert (o.expected_start_seconds, o.waits_for) == (3 * H, ["ns/run-b", "ns/run-a"])


def test_jobsets_queued_ahead_are_waited_for_in_queue_order() -> None:
    # both need run-a's pool for 2 h: the first from 1 h, the second once the first ends
    first, second = _shared("first", 2), _shared("second", 2)
    second = second.model_copy(update={"creation_timestamp": NOW})
    plan = _solve(_busy(), [first, second])
    assert plan.outcome("team-a/first").expected_start_seconds == 1 * H
    assert plan.outcome("team-a/second").expected_start_seconds == 3 * H
    assert plan.outcome("team-a/second").waits_for == ["ns/run-a"]


def test_a_host_port_taken_by_a_jobset_queued_ahead_is_waited_for() -> None:
    # both bind host port 8471, one pod per host: run-a's pool, free in 1 h, has room for the
    # pods of both but the port for one, so the second waits for run-b's pool (3 h); the ports
    # of the JobSets ahead were not held, and it was told 1 h
    first, second = (
        jobset(name, rjob(exclusive=None, tpu=1, host_ports=[(8471, "TCP")]), order=k)
        for k, name in enumerate(["first", "second"])
    )
    queue = [
        js.model_copy(
            update={
                "expected_duration_s": 2 * H,
                "duration_source": "annotation",
                "creation_timestamp": NOW - timedelta(minutes=10 - k),
            }
        )
        for k, js in enumerate([first, second])
    ]
    plan = _solve(_busy(), queue)
    assert plan.outcome("team-a/first").expected_start_seconds == 1 * H
    assert plan.outcome("team-a/second").expected_start_seconds == 3 * H


def test_a_jobset_planned_now_holds_its_nodes_for_its_run() -> None:
    # one free pool: the first JobSet takes it for 2 h; the second waits for run-a's (1 h)
    snap = _running(
        cluster(running_pool("pool-0", 2, "ns/run-a"), pool("pool-1", 2)), {"ns/run-a": 1}
    )
    first, second = _shared("first", 2), _shared("second", 2)
    second = second.model_copy(update={"creation_timestamp": NOW})
    plan = _solve(snap, [first, second])
    assert plan.outcome("team-a/first").status == "placed"
    assert plan.outcome("team-a/second").expected_start_seconds == 1 * H


def test_a_jobset_fitting_no_node_is_told_never_and_why() -> None:
    nowhere = jobset(
        "nowhere", rjob(exclusive=None, node_selector={"cloud.google.com/gke-nodepool": "gone"})
    )
    plan = _solve(_busy(), [nowhere])
    o = plan.outcome("team-a/nowhere")
    assert o.expected_start_seconds is None
    assert "nodeSelector cloud.google.com/gke-nodepool=gone" in o.reason
    assert "held by" not in o.reason


def test_a_kueue_workload_without_quota_gets_the_same_start() -> None:
    # the estimate for a JobSet left out of the round (no quota yet), behind what it planned
    snap = _busy()
    [o] = expected_starts_behind(snap, [_shared("later", 2)], HEAD)
    assert (o.expected_start_seconds, o.waits_for) == (1 * H, ["ns/run-a"])
    # behind a JobSet the round planned for run-a's pool from 1 h... which it only estimated:
    # estimates hold nothing, so the later one is told the same hour
    queued = [_shared("queued", 2)]
    planned = _solve(snap, queued)
    [o] = expected_starts_behind(snap, [_shared("later", 2)], HEAD, (planned, queued))
    assert o.expected_start_seconds == 1 * H


@st.composite
def _worlds(draw: st.DrawFn) -> tuple[ClusterSnapshot, JobSetRequest]:
    """Pools held by running JobSets ending at drawn hours, a free pool or not, and one JobSet
    of pods without an exclusive key, its chips per pod and pod count drawn."""
    pools: list[object] = []
    ends: dict[str, float] = {}
    for i in range(draw(st.integers(1, 4))):
        hosts = draw(st.integers(1, 3))
        if draw(st.booleans()):
            key = f"ns/run-{i}"
            ends[key] = float(draw(st.integers(1, 6)))
            pools.append(running_pool(f"pool-{i}", hosts, key))
        else:
            pools.append(pool(f"pool-{i}", hosts))
    chips = draw(st.sampled_from([1, 2, 4]))
    pods = draw(st.integers(1, 10))
    selector = {"cloud.google.com/gke-nodepool": "pool-9"} if draw(st.booleans()) else None
    waiting = jobset(
        "waiting",
        rjob(replicas=1, pods_per_job=pods, exclusive=None, tpu=chips, node_selector=selector),
    ).model_copy(update={"expected_duration_s": 2 * H, "duration_source": "annotation"})
    return _running(cluster(*pools), ends), waiting  # type: ignore[arg-type]


@settings(max_examples=60, deadline=None)
@given(_worlds())
def test_the_start_is_the_first_end_after_which_the_jobset_fits(
    world: tuple[ClusterSnapshot, JobSetRequest],
) -> None:
    """The oracle: best-fit without time, on the snapshot once every JobSet ending by t ended,
    places it at the expected start and at no earlier end; never placed: no start."""
    snap, waiting = world
    plan = _solve(snap, [waiting])
    assert plan.outcome(waiting.key).expected_start_seconds == first_end_it_fits(snap, waiting)


def first_end_it_fits(snap: ClusterSnapshot, waiting: JobSetRequest) -> float | None:
    """The first running JobSet's end (or now) once which best-fit without time places
    `waiting` alone on `snap`, every run ended by then gone; None if at no such time."""
    ends = sorted({0.0, *(r.expected_duration_s or 0.0 for r in snap.running.values())})
    plain = SolveOptions(workers=1)

    def fits_after(t: float) -> bool:
        gone = [k for k, r in snap.running.items() if (r.expected_duration_s or 0.0) <= t]
        later, _, _ = without_jobsets(snap, gone)
        alone = get_solver("best-fit").solve(later, [waiting], plain)
        return alone.outcome(waiting.key).status == "placed"

    return next((t for t in ends if fits_after(t)), None)


def test_explain_without_time_flags_asks_the_same_question() -> None:
    """`placer explain`'s never check (`never_reason`) judged only JobSets with an exclusive
    child Job; one whose pods fit no node was not told it never fits."""
    snap = _busy()
    nowhere = jobset(
        "nowhere", rjob(exclusive=None, node_selector={"cloud.google.com/gke-nodepool": "gone"})
    )
    later = _shared("later", 2)
    why = never_reason(snap, [nowhere, later], SolveOptions(), nowhere)
    assert why is not None
    assert "nodeSelector cloud.google.com/gke-nodepool=gone" in why
    # busy now, free once run-a ends: it fits some day
    assert never_reason(snap, [nowhere, later], SolveOptions(), later) is None


@st.composite
def _queues(draw: st.DrawFn) -> tuple[ClusterSnapshot, list[JobSetRequest]]:
    """Pools every chip of which a running JobSet holds (ending at drawn hours), and two or
    three JobSets of pods without an exclusive key queued one after another, none able to start
    now: each waits for runs to end and for the ones queued ahead of it."""
    pools = []
    ends: dict[str, float] = {}
    for i in range(draw(st.integers(1, 3))):
        key = f"ns/run-{i}"
        ends[key] = float(draw(st.integers(1, 5)))
        pools.append(running_pool(f"pool-{i}", draw(st.integers(1, 3)), key))
    queue = []
    for k in range(draw(st.integers(2, 3))):
        js = jobset(
            f"w{k}",
            rjob(
                replicas=draw(st.integers(1, 2)),
                pods_per_job=draw(st.integers(1, 3)),
                exclusive=None,
                tpu=draw(st.sampled_from([2, 4])),
                host_ports=draw(st.sampled_from([(), ((8471, "TCP"),)])),
            ),
            order=k,
        )
        update = {
            "expected_duration_s": draw(st.integers(1, 4)) * H,
            "duration_source": "annotation",
            "creation_timestamp": NOW - timedelta(minutes=10 - k),
        }
        queue.append(js.model_copy(update=update))
    return _running(cluster(*pools), ends), queue


@settings(max_examples=40, deadline=None)
@given(_queues())
def test_each_start_is_the_first_time_it_fits_behind_the_runs_and_the_queue_ahead(
    world: tuple[ClusterSnapshot, list[JobSetRequest]],
) -> None:
    """The oracle replays the queue with the planner itself: for each JobSet in turn, best-fit
    without time on the cluster at each candidate time (the runs ended by then given back, the
    JobSets ahead placed where best-fit put them if their runs overlap its own), and the first
    time it is placed is its start."""
    snap, queue = world
    plan = _solve(snap, queue)
    plain = SolveOptions(workers=1)
    ahead: list[tuple[float, float, JobSetRequest, Plan]] = []
    for js in queue:
        duration = js.expected_duration_s or 0.0
        ends = {r.expected_duration_s or 0.0 for r in snap.running.values()}
        times = sorted({0.0, *ends, *(end for _, end, _, _ in ahead)})
        expected = None
        for t in times:
            gone = [k for k, r in snap.running.items() if (r.expected_duration_s or 0.0) <= t]
            at_t, _, _ = without_jobsets(snap, gone)
            for start, end, other, placed in ahead:
                if start < t + duration and end > t:
                    at_t = apply_plan(at_t, [other], placed)
            alone = get_solver("best-fit").solve(at_t, [js], plain)
            if alone.outcome(js.key).status == "placed":
                expected = t
                ahead.append((t, t + duration, js, alone))
                break
        assert plan.outcome(js.key).status != "placed"
        assert plan.outcome(js.key).expected_start_seconds == expected, js.key


@pytest.mark.parametrize("solver", ["cpsat", "best-fit"])
def test_a_jobset_kept_out_by_pods_without_an_exclusive_key_is_told_when(solver: str) -> None:
    """Two free pools, both needed by `pair`; `early`, of higher priority, queued ahead and
    without an exclusive key, starts now on one of them. The pass counted both as starting now
    (since round 39 it starts only `early`, judging it node by node: `test_shared_room`): in one
    tier CP-SAT started `pair` instead (its objective did not see their priorities). And the
    estimate of `pair` held only the domains of child Jobs placed now, so it read "now" while
    `early`'s pods closed a pool for two hours."""
    snap = _running(
        cluster(running_pool("pool-0", 2, "ns/run-a"), pool("pool-1", 2), pool("pool-2", 2)),
        {"ns/run-a": 1},
    )
    early = _shared("early", 2).model_copy(update={"priority": 10})
    pair = jobset("pair", rjob(replicas=2)).model_copy(
        update={
            "expected_duration_s": 2 * H,
            "duration_source": "annotation",
            "creation_timestamp": NOW,
        }
    )
    plan = _solve(snap, [early, pair], solver)
    assert plan.outcome("team-a/early").status == "placed"
    o = plan.outcome("team-a/pair")
    # pool-0 frees when run-a ends, in 1 h; with pool-2 that is two pools
    assert (o.status, o.expected_start_seconds, o.waits_for) == (
        "unschedulable",
        1 * H,
        ["ns/run-a"],
    )
