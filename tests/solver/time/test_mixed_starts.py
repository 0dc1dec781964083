"""When a waiting JobSet with child Jobs of both kinds starts: workers with an exclusive key, a
coordinator without one.

Before, the time-aware pass timed such a JobSet by its domains alone: its coordinator's pods,
with no room on their nodes for hours, left it told "now" round after round, and a coordinator
fitting no node at all left it told "now" rather than never (so never Rejected under Kueue).
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from placer.model.cluster import ClusterSnapshot, DomainReservation
from placer.model.options import SolveOptions
from placer.model.whatif import without_jobsets
from placer.model.workload import JobSetRequest
from placer.solver.check.checker import check
from placer.solver.registry import get_solver
from placer.solver.time.behind import expected_starts_behind
from placer.solver.time.never import never_reason
from tests.solver.time.test_shared_starts import HEAD, _running, _solve, first_end_it_fits
from tests.solver.time.test_timeaware import NOW, H
from tests.strategies import NODEPOOL, TPU_TOPOLOGY, cluster, jobset, pool, rjob, running_pool

WORKERS = {TPU_TOPOLOGY: "2x4"}
"""The workers' pools: every pool but the coordinator's, which is 4x4."""


def _mixed(
    coordinator: str = "4x4", *, workers: int = 1, pods: int = 1, tpu: int = 4, hours: float = 2
) -> JobSetRequest:
    """`workers` child Jobs of two 4-chip pods, one node pool each, and one coordinator of
    `pods` pods of `tpu` chips on the pool of TPU topology `coordinator`, no exclusive key."""
    return jobset(
        "mixed",
        rjob("workers", replicas=workers, node_selector=WORKERS),
        rjob(
            "coord",
            pods_per_job=pods,
            exclusive=None,
            tpu=tpu,
            node_selector={TPU_TOPOLOGY: coordinator},
        ),
    ).model_copy(
        update={
            "expected_duration_s": hours * H,
            "duration_source": "annotation",
            "creation_timestamp": NOW - timedelta(minutes=1),
        }
    )


def _fleet(workers_end_h: float | None, coordinator_end_h: float | None) -> ClusterSnapshot:
    """A workers' pool (`pool-0`, busy until `workers_end_h`, free if None) and the
    coordinator's 4x4 pool (`pool-c`, likewise)."""
    ends: dict[str, float] = {}
    pools = []
    for name, end, topology in [
        ("pool-0", workers_end_h, "2x4"),
        ("pool-c", coordinator_end_h, "4x4"),
    ]:
        if end is None:
            pools.append(pool(name, 2, topology=topology))
        else:
            pools.append(running_pool(name, 2, f"ns/run-{name}", topology=topology))
            ends[f"ns/run-{name}"] = end
    return _running(cluster(*pools), ends)


@pytest.mark.parametrize("solver", ["cpsat", "best-fit"])
def test_its_start_waits_for_room_for_the_coordinator(solver: str) -> None:
    # the workers' pool is free now, the coordinator's in 3 h
    plan = _solve(_fleet(None, 3), [_mixed()], solver)
    o = plan.outcome("team-a/mixed")
    assert (o.status, o.expected_start_seconds, o.waits_for) == (
        "unschedulable",
        3 * H,
        ["ns/run-pool-c"],
    )
    # its domains are found from its coordinator's start, and held from then (before, the pass
    # gave them from now, and from 3 h they were not asked again, so none was held)
    assert [d.value for d in o.reserved_domains] == ["pool-0"]


@pytest.mark.parametrize("solver", ["cpsat", "best-fit"])
def test_a_reservation_for_its_domains_stands_when_the_coordinator_has_room_by_then(
    solver: str,
) -> None:
    # the workers' pool frees in 2 h, the coordinator's in 1 h: the domains decide
    plan = _solve(_fleet(2, 1), [_mixed()], solver)
    o = plan.outcome("team-a/mixed")
    assert o.expected_start_seconds == 2 * H
    assert [d.value for d in o.reserved_domains] == ["pool-0"]
    assert o.waits_for == ["ns/run-pool-0", "ns/run-pool-c"]


@pytest.mark.parametrize("solver", ["cpsat", "best-fit"])
def test_a_coordinator_fitting_no_node_is_told_never_and_why(solver: str) -> None:
    plan = _solve(_fleet(None, None), [_mixed("9x9")], solver)
    o = plan.outcome("team-a/mixed")
    assert (o.expected_start_seconds, o.reserved_domains) == (None, [])
    assert f"nodeSelector {TPU_TOPOLOGY}=9x9" in o.reason
    # `placer explain` without time flags asks the same question
    snap = _fleet(1, 1)
    why = never_reason(snap, [_mixed("9x9")], SolveOptions(), _mixed("9x9"))
    assert why is not None and f"nodeSelector {TPU_TOPOLOGY}=9x9" in why
    assert never_reason(snap, [_mixed()], SolveOptions(), _mixed()) is None


def test_a_kueue_workload_without_quota_gets_the_same_start() -> None:
    [o] = expected_starts_behind(_fleet(None, 3), [_mixed()], HEAD)
    assert (o.expected_start_seconds, o.waits_for) == (3 * H, ["ns/run-pool-c"])


@st.composite
def _worlds(draw: st.DrawFn) -> tuple[ClusterSnapshot, JobSetRequest]:
    """Workers' pools (2x4) and the coordinator's pool (4x4), each busy until a drawn hour or
    free, and one JobSet of 1-2 workers and a coordinator of drawn pods and chips, on the 4x4
    pool or on a topology no pool has."""
    pools: list[object] = []
    ends: dict[str, float] = {}
    for i in range(draw(st.integers(1, 3))):
        name, hosts = f"pool-{i}", draw(st.integers(1, 3))
        if draw(st.booleans()):
            ends[f"ns/run-{i}"] = float(draw(st.integers(1, 6)))
            pools.append(running_pool(name, hosts, f"ns/run-{i}"))
        else:
            pools.append(pool(name, hosts))
    hosts = draw(st.integers(1, 2))
    if draw(st.booleans()):
        ends["ns/run-c"] = float(draw(st.integers(1, 6)))
        pools.append(running_pool("pool-c", hosts, "ns/run-c", topology="4x4"))
    else:
        pools.append(pool("pool-c", hosts, topology="4x4"))
    waiting = _mixed(
        draw(st.sampled_from(["4x4", "4x4", "4x4", "9x9"])),
        workers=draw(st.integers(1, 2)),
        pods=draw(st.integers(1, 4)),
        tpu=draw(st.sampled_from([1, 2, 4])),
        hours=draw(st.integers(1, 4)),
    )
    return _running(cluster(*pools), ends), waiting  # type: ignore[arg-type]


@settings(max_examples=60, deadline=None)
@given(_worlds())
def test_the_start_is_the_first_end_after_which_the_whole_jobset_fits(
    world: tuple[ClusterSnapshot, JobSetRequest],
) -> None:
    """The oracle: best-fit without time, on the snapshot once every JobSet ending by t ended,
    places the whole JobSet (workers and coordinator) at the expected start and at no earlier
    end; never placed: no start. Runs only end, so the first time both kinds fit is the later
    of each kind's first."""
    snap, waiting = world
    plan = _solve(snap, [waiting])
    assert plan.outcome(waiting.key).expected_start_seconds == first_end_it_fits(snap, waiting)


@pytest.mark.parametrize("solver", ["cpsat", "best-fit"])
def test_one_that_never_fits_holds_no_domains_for_the_jobsets_behind(solver: str) -> None:
    """`mixed` (two workers' pools, a coordinator on a topology no pool has) queued ahead of
    `next`: pool-0 frees in 1 h, so the pass reserved both pools for `mixed` from then, and
    `next` (one pool, 2 h) was kept off the free pool-1 for a start that never comes."""
    snap = _running(
        cluster(running_pool("pool-0", 2, "ns/run-a"), pool("pool-1", 2)), {"ns/run-a": 1}
    )
    mixed = _mixed("9x9", workers=2).model_copy(update={"priority": 10})
    after = jobset("next", rjob(node_selector=WORKERS)).model_copy(
        update={
            "expected_duration_s": 2 * H,
            "duration_source": "annotation",
            "creation_timestamp": NOW,
        }
    )
    plan = _solve(snap, [mixed, after], solver)
    o = plan.outcome("team-a/mixed")
    assert (o.expected_start_seconds, o.reserved_domains) == (None, [])
    assert plan.outcome("team-a/next").status == "placed"


@pytest.mark.parametrize("solver", ["cpsat", "best-fit"])
def test_its_domains_must_still_be_free_when_the_coordinator_has_room(solver: str) -> None:
    """`wide` (both workers' pools, queued ahead) is reserved from 2 h, when run-b's pool-1
    frees, to 4 h. `mixed` fits pool-0 now until then, but its coordinator waits for pool-c
    (3 h), when `wide` holds pool-0: it starts once `wide` ends, at 4 h. Before, told 3 h."""
    snap = _running(
        cluster(
            pool("pool-0", 2),
            running_pool("pool-1", 2, "ns/run-b"),
            running_pool("pool-c", 2, "ns/run-c", topology="4x4"),
        ),
        {"ns/run-b": 2, "ns/run-c": 3},
    )
    wide = jobset("wide", rjob(replicas=2, node_selector=WORKERS), priority=10).model_copy(
        update={
            "expected_duration_s": 2 * H,
            "duration_source": "annotation",
            "creation_timestamp": NOW - timedelta(minutes=2),
        }
    )
    plan = _solve(snap, [wide, _mixed()], solver)
    assert plan.outcome("team-a/wide").expected_start_seconds == 2 * H
    o = plan.outcome("team-a/mixed")
    # behind the head under `--reservations head`: an estimate, holding nothing
    assert (o.expected_start_seconds, o.reserved_domains) == (4 * H, [])


def _promised_elsewhere() -> ClusterSnapshot:
    """pool-0 free now but promised to a JobSet outside the queue from 3 h to 8 h; pool-1 and
    the coordinator's pool-c busy until 2 h."""
    snap = _running(
        cluster(
            pool("pool-0", 2),
            running_pool("pool-1", 2, "ns/run-1"),
            running_pool("pool-c", 2, "ns/run-c", topology="4x4"),
        ),
        {"ns/run-1": 2, "ns/run-c": 2},
    )
    promised = DomainReservation(
        jobset="other/elsewhere",
        key=NODEPOOL,
        path=((NODEPOOL, "pool-0"),),
        start_s=3 * H,
        end_s=8 * H,
    )
    return snap.model_copy(update={"reservations": (promised,)})


@pytest.mark.parametrize("schedule", ["greedy", "cpsat"])
@pytest.mark.parametrize("solver", ["cpsat", "best-fit"])
def test_its_domains_are_found_from_its_coordinators_start(solver: str, schedule: str) -> None:
    """The pass gave `mixed` pool-0, free now; its coordinator has room at 2 h, and from 2 h
    pool-0 is not free for its 2-hour run (promised from 3 h). Before, it waited for that
    promise to end: told 8 h, holding nothing. Found from 2 h, its domain is pool-1."""
    options = HEAD.model_copy(update={"time": HEAD.time.model_copy(update={"schedule": schedule})})
    snap = _promised_elsewhere()
    plan = get_solver(solver, time_policy=options.time).solve(snap, [_mixed()], options)
    assert check(plan, snap, [_mixed()], options) == []
    o = plan.outcome("team-a/mixed")
    assert o.expected_start_seconds == 2 * H
    assert [d.value for d in o.reserved_domains] == ["pool-1"]
    assert o.waits_for == ["ns/run-1", "ns/run-c"]


@pytest.mark.parametrize("solver", ["cpsat", "best-fit"])
def test_an_estimate_behind_the_head_is_found_from_its_coordinators_start(solver: str) -> None:
    """Under `--reservations head`, `head` (queued first, a 4-hour run) holds the one
    reservation, pool-2 from 1 h, and `mixed` gets an estimate, which the same pass finds:
    pool-0 from now, where its coordinator's start (2 h) leaves no 2-hour run before pool-0's
    promise. Before, it waited for the promise to end (8 h); found from 2 h it is pool-1."""
    snap = _promised_elsewhere()
    snap = snap.model_copy(
        update={
            "nodes": [*snap.nodes, *running_pool("pool-2", 2, "ns/run-2")],
            "running": {**snap.running, **_running(snap, {"ns/run-2": 1}).running},
        }
    )
    head = jobset("head", rjob(node_selector=WORKERS), priority=10).model_copy(
        update={
            "expected_duration_s": 4 * H,
            "duration_source": "annotation",
            "creation_timestamp": NOW - timedelta(minutes=2),
        }
    )
    plan = _solve(snap, [head, _mixed()], solver)
    h = plan.outcome("team-a/head")
    assert (h.expected_start_seconds, [d.value for d in h.reserved_domains]) == (H, ["pool-2"])
    o = plan.outcome("team-a/mixed")
    assert (o.expected_start_seconds, o.reserved_domains) == (2 * H, [])
    assert o.waits_for == ["ns/run-1", "ns/run-c"]


def test_a_kueue_workload_without_quota_is_found_from_its_coordinators_start() -> None:
    [o] = expected_starts_behind(_promised_elsewhere(), [_mixed()], HEAD)
    assert (o.expected_start_seconds, o.waits_for) == (2 * H, ["ns/run-1", "ns/run-c"])


@st.composite
def _promised_worlds(
    draw: st.DrawFn,
) -> tuple[ClusterSnapshot, JobSetRequest, DomainReservation]:
    """`_worlds`, with pool-0 (a workers' pool) promised to a JobSet outside the queue over
    drawn hours."""
    snap, waiting = draw(_worlds())
    start = float(draw(st.integers(0, 6)))
    promise = DomainReservation(
        jobset="other/elsewhere",
        key=NODEPOOL,
        path=((NODEPOOL, "pool-0"),),
        start_s=start * H,
        end_s=(start + draw(st.integers(1, 6))) * H,
    )
    return snap.model_copy(update={"reservations": (promise,)}), waiting, promise


def _first_time_it_fits(
    snap: ClusterSnapshot, waiting: JobSetRequest, promise: DomainReservation
) -> float | None:
    """The first of now, a run's end and the promise's end at which best-fit without time
    places `waiting` alone on `snap` with every run ended by then gone and, when the promise
    overlaps its run from then, without pool-0; None if at none."""
    duration = waiting.expected_duration_s or 0.0
    ends = {0.0, promise.end_s, *(r.expected_duration_s or 0.0 for r in snap.running.values())}
    plain = SolveOptions(workers=1)
    for t in sorted(ends):
        gone = [k for k, r in snap.running.items() if (r.expected_duration_s or 0.0) <= t]
        later, _, _ = without_jobsets(snap.model_copy(update={"reservations": ()}), gone)
        if promise.start_s < t + duration and promise.end_s > t:
            kept = [n for n in later.nodes if n.labels.get(NODEPOOL) != "pool-0"]
            later = later.model_copy(update={"nodes": kept})
        alone = get_solver("best-fit").solve(later, [waiting], plain)
        if alone.outcome(waiting.key).status == "placed":
            return t
    return None


@settings(max_examples=60, deadline=None)
@given(_promised_worlds())
def test_with_a_pool_promised_elsewhere_the_start_is_the_first_time_it_fits(
    world: tuple[ClusterSnapshot, JobSetRequest, DomainReservation],
) -> None:
    """The oracle of the property above, with pool-0 promised to a JobSet outside the queue:
    its domains are found from the time its coordinator has room, so it starts at the first
    time the whole JobSet fits for its run, wherever its domains were free first."""
    snap, waiting, promise = world
    plan = _solve(snap, [waiting])
    assert plan.outcome(waiting.key).expected_start_seconds == _first_time_it_fits(
        snap, waiting, promise
    )


@pytest.mark.parametrize("solver", ["cpsat", "best-fit"])
def test_the_pass_knows_where_a_coordinator_started_now_goes(solver: str) -> None:
    """Three free workers' pools and three JobSets of one pool each, `mixed` first: its
    coordinator, a whole host, closes one more pool to exclusive child Jobs, so only two start
    now. The pass did not pack the coordinator: it started all three now, the inner solve left
    `third` out (and was run again for it, for nothing), and `third` was then only estimated,
    holding no domain. Packed in the pass, `third` is the first to wait and holds its
    reservation."""
    snap = cluster(pool("pool-0", 2), pool("pool-1", 2), pool("pool-2", 2))
    queue = [
        _mixed("2x4").model_copy(update={"priority": 10}),
        *(
            jobset(name, rjob(node_selector=WORKERS), priority=p).model_copy(
                update={
                    "expected_duration_s": 2 * H,
                    "duration_source": "annotation",
                    "creation_timestamp": NOW,
                }
            )
            for name, p in [("next", 5), ("third", 0)]
        ),
    ]
    plan = _solve(snap, queue, solver)
    assert [plan.outcome(k).status for k in ("team-a/mixed", "team-a/next")] == ["placed"] * 2
    third = plan.outcome("team-a/third")
    assert third.expected_start_seconds == 2 * H
    assert len(third.reserved_domains) == 1
