"""The ledger: exclusive domains, shared nodes, packing, and all-or-nothing rollback."""

from __future__ import annotations

from random import Random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from placer.model.cluster import ClusterSnapshot, DomainReservation
from placer.model.options import SolveOptions, TimePolicy
from placer.model.workload import JobSetRequest
from placer.solver.context import JobClass, PlacementContext
from placer.solver.ledger import PlacementLedger
from tests.strategies import (
    BLOCK,
    HOSTNAME,
    NODEPOOL,
    cluster,
    jobset,
    node,
    pool,
    rjob,
    scenarios,
)


def _ctx(snapshot: ClusterSnapshot, *jobsets: JobSetRequest) -> PlacementContext:
    return PlacementContext(snapshot, list(jobsets), SolveOptions())


def _jc(ctx: PlacementContext, jobset_name: str, rjob_name: str = "workers") -> JobClass:
    return next(
        c for c in ctx.job_classes if c.jobset.name == jobset_name and c.rjob.name == rjob_name
    )


def test_take_domain_packs_pods_in_node_order_and_reserves_the_domain() -> None:
    a = jobset("a", rjob(replicas=2, pods_per_job=2, tpu=4))
    ctx = _ctx(cluster(pool("p0", 2), pool("p1", 2)), a)
    ledger = PlacementLedger(ctx)
    jc = _jc(ctx, "a")
    d0, d1 = ctx.domains(NODEPOOL)
    job = ledger.take_domain(jc, 0, d0)
    assert job is not None
    assert job.name == "a-workers-0"
    assert job.domain is not None and job.domain.value == "p0"
    assert job.domain.path == [(NODEPOOL, "p0")]
    assert [(p.index, p.node) for p in job.pods] == [(0, "p0-host-0"), (1, "p0-host-1")]
    assert not ledger.domain_available(d0, a)
    assert ledger.domain_available(d1, a)
    assert ledger.taken_by() == {(NODEPOOL, ((NODEPOOL, "p0"),)): "team-a/a"}
    assert ledger.take_domain(jc, 1, d0) is None


def test_pods_pack_several_per_node_when_capacity_allows() -> None:
    a = jobset("a", rjob(pods_per_job=3, tpu=2))
    ctx = _ctx(cluster(pool("p0", 2, tpu=4)), a)
    job = PlacementLedger(ctx).take_domain(_jc(ctx, "a"), 0, ctx.domains(NODEPOOL)[0])
    assert job is not None
    assert [(p.index, p.node) for p in job.pods] == [
        (0, "p0-host-0"),
        (1, "p0-host-0"),
        (2, "p0-host-1"),
    ]


def test_too_small_domain_is_refused_and_changes_nothing() -> None:
    a = jobset("a", rjob(pods_per_job=3, tpu=4))
    ctx = _ctx(cluster(pool("p0", 2)), a)
    ledger = PlacementLedger(ctx)
    d0 = ctx.domains(NODEPOOL)[0]
    assert ledger.take_domain(_jc(ctx, "a"), 0, d0) is None
    assert ledger.taken_by() == {}
    assert ledger.domain_available(d0, a)


def test_domain_held_by_another_running_jobset_is_unavailable_but_open_to_its_owner() -> None:
    other = jobset("other", namespace="team-b")
    mine = jobset("a")
    ctx = _ctx(cluster(pool("p0", 2, jobsets=["team-b/other"])), mine, other)
    ledger = PlacementLedger(ctx)
    d0 = ctx.domains(NODEPOOL)[0]
    assert not ledger.domain_available(d0, mine)
    assert ledger.take_domain(_jc(ctx, "a"), 0, d0) is None
    assert ledger.domain_available(d0, other)


def test_overlapping_domains_of_another_key_close_when_one_is_taken() -> None:
    # Two keys cutting the same nodes differently: block b0 = p0 + p1.
    a = jobset("a", rjob(pods_per_job=2))
    b = jobset("b", rjob(pods_per_job=4, exclusive=BLOCK))
    snap = cluster(
        pool("p0", 2, block="b0"),
        pool("p1", 2, block="b0"),
        pool("p2", 2, block="b1"),
        pool("p3", 2, block="b1"),
        levels=(BLOCK, NODEPOOL, HOSTNAME),
    )
    ctx = _ctx(snap, a, b)
    ledger = PlacementLedger(ctx)
    pools = ctx.domains(NODEPOOL)
    blocks = ctx.domains(BLOCK)
    assert ledger.take_domain(_jc(ctx, "a"), 0, pools[0]) is not None
    assert not ledger.domain_available(blocks[0], b)
    assert ledger.domain_available(blocks[1], b)
    assert ledger.take_domain(_jc(ctx, "b"), 0, blocks[1]) is not None
    assert not ledger.domain_available(pools[2], a)
    assert not ledger.domain_available(pools[3], a)
    assert ledger.domain_available(pools[1], a)


def test_shared_pods_avoid_exclusive_domain_nodes_and_close_domains_they_use() -> None:
    a = jobset("a", rjob(pods_per_job=1))
    s = jobset("s", rjob("cpu", pods_per_job=3, exclusive=None, tpu=0, cpu=8))
    snap = cluster(pool("p0", 1, cpu=16, taints=[]), node("cpu-0", tpu=0, cpu=16))
    ctx = _ctx(snap, a, s)
    ledger = PlacementLedger(ctx)
    job = ledger.place_shared(_jc(ctx, "s", "cpu"), 0)
    assert job is not None and job.domain is None
    # cpu-0 (outside every exclusive domain) first, then the pool's node
    assert [p.node for p in job.pods] == ["cpu-0", "cpu-0", "p0-host-0"]
    assert ledger.shared_by() == {"cpu-0": ("team-a/s",), "p0-host-0": ("team-a/s",)}
    assert str(ledger.free("cpu-0")["cpu"]) == "0"
    assert not ledger.domain_available(ctx.domains(NODEPOOL)[0], a)


def test_shared_pods_never_enter_a_reserved_domain() -> None:
    a = jobset("a", rjob(pods_per_job=1, cpu=1))
    s = jobset("s", rjob("cpu", pods_per_job=1, exclusive=None, tpu=0, cpu=1))
    ctx = _ctx(cluster(pool("p0", 1)), a, s)
    ledger = PlacementLedger(ctx)
    assert ledger.take_domain(_jc(ctx, "a"), 0, ctx.domains(NODEPOOL)[0]) is not None
    assert ledger.place_shared(_jc(ctx, "s", "cpu"), 0) is None
    assert ledger.shared_by() == {}


def test_shared_pods_respect_host_ports_and_pod_slots() -> None:
    ports = ((8080, "TCP"),)
    s = jobset("s", rjob("web", pods_per_job=2, exclusive=None, tpu=0, host_ports=ports))
    snap = cluster(
        node("n0", tpu=0),
        node("n1", tpu=0, used_host_ports=ports),
        node("n2", tpu=0, pods=1),
        node("n3", tpu=0),
    )
    ctx = _ctx(snap, s)
    ledger = PlacementLedger(ctx)
    jc = _jc(ctx, "s", "web")
    job = ledger.place_shared(jc, 0)
    assert job is not None
    assert [p.node for p in job.pods] == ["n0", "n2"]
    assert ledger.place_shared(jc, 1) is None  # n3 only: one pod per node with the port


def test_rollback_restores_everything_since_the_checkpoint() -> None:
    a = jobset("a", rjob(replicas=2, pods_per_job=1))
    s = jobset("s", rjob("cpu", pods_per_job=1, exclusive=None, tpu=0, cpu=4))
    ctx = _ctx(cluster(pool("p0", 1), pool("p1", 1), node("cpu-0", tpu=0)), a, s)
    ledger = PlacementLedger(ctx)
    d0, d1 = ctx.domains(NODEPOOL)
    assert ledger.take_domain(_jc(ctx, "a"), 0, d0) is not None
    token = ledger.checkpoint()
    before = (ledger.taken_by(), ledger.shared_by(), ledger.free("cpu-0"), ledger.free("p1-host-0"))
    assert ledger.take_domain(_jc(ctx, "a"), 1, d1) is not None
    assert ledger.place_shared(_jc(ctx, "s", "cpu"), 0) is not None
    ledger.rollback(token)
    after = (ledger.taken_by(), ledger.shared_by(), ledger.free("cpu-0"), ledger.free("p1-host-0"))
    assert after == before
    assert ledger.domain_available(d1, a)
    assert not ledger.domain_available(d0, a)
    with pytest.raises(ValueError):
        ledger.rollback(99)


def test_take_domain_of_the_wrong_key_is_a_bug() -> None:
    a = jobset("a", rjob(pods_per_job=1))
    snap = cluster(pool("p0", 1, block="b0"), levels=(BLOCK, NODEPOOL, HOSTNAME))
    ctx = _ctx(snap, a)
    with pytest.raises(ValueError):
        PlacementLedger(ctx).take_domain(_jc(ctx, "a"), 0, ctx.domains(BLOCK)[0])


def test_crossing_domains_of_keys_outside_the_levels_close_each_other() -> None:
    rack = "example.com/rack"
    a = jobset("a", rjob(pods_per_job=2))
    r = jobset("r", rjob(pods_per_job=2, exclusive=rack))
    snap = cluster(
        node("n0", labels={NODEPOOL: "p0"}),
        node("n1", labels={NODEPOOL: "p0", rack: "r0"}),
        node("n2", labels={NODEPOOL: "p1", rack: "r0"}),
        node("n3", labels={NODEPOOL: "p1"}),
        levels=(NODEPOOL, HOSTNAME),
    )
    ctx = _ctx(snap, a, r)
    ledger = PlacementLedger(ctx)
    (r0,) = ctx.domains(rack)
    assert r0.nodes == ("n1", "n2")
    assert ledger.take_domain(_jc(ctx, "r"), 0, r0) is not None
    assert [ledger.domain_available(d, a) for d in ctx.domains(NODEPOOL)] == [False, False]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(), st.randoms(use_true_random=False))
def test_random_decisions_then_rollback_leave_no_trace(
    scenario: tuple[ClusterSnapshot, list[JobSetRequest]], rnd: Random
) -> None:
    snap, queue = scenario
    ctx = _ctx(snap, *queue)
    ledger = PlacementLedger(ctx)
    fresh = PlacementLedger(ctx)
    token = ledger.checkpoint()
    placed_nodes: dict[str, int] = {}
    for jc in ctx.job_classes:
        for i in range(jc.rjob.replicas):
            if jc.exclusive_key:
                domains = ctx.domains(jc.exclusive_key)
                job = ledger.take_domain(jc, i, rnd.choice(domains)) if domains else None
            else:
                job = ledger.place_shared(jc, i)
            for p in job.pods if job else ():
                placed_nodes[p.node] = placed_nodes.get(p.node, 0) + 1
    for name, count in placed_nodes.items():
        if "pods" in snap.node(name).free:
            assert ledger.free(name)["pods"] == snap.node(name).free["pods"] - count
        assert all(v >= 0 for v in ledger.free(name).values())
    ledger.rollback(token)
    assert ledger.taken_by() == {} and ledger.shared_by() == {}
    for n in snap.nodes:
        assert ledger.free(n.name) == fresh.free(n.name)
    for d in ctx.exclusive_domains:
        assert ledger.domain_untouched(d)


class _Unremembering(PlacementLedger):
    """The ledger looking at every node for each child Job without an exclusive key: the
    oracle for what it learns of shapes that fit nowhere (`_known_unfit`)."""

    def _known_unfit(self, shape: tuple[int, int], run: float) -> bool:
        return False


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(), st.randoms(use_true_random=False))
def test_a_ledger_that_remembers_unfit_shapes_decides_as_one_that_looks_every_time(
    scenario: tuple[ClusterSnapshot, list[JobSetRequest]], rnd: Random
) -> None:
    """Random decisions, checkpoints and rollbacks on two ledgers, one of which remembers the
    shapes that fit no node: every placement, every refusal and the room left agree."""
    snap, queue = scenario
    ctx = _ctx(snap, *queue)
    remembering, looking = PlacementLedger(ctx), _Unremembering(ctx)
    tokens: list[tuple[object, object]] = []
    for _ in range(3):
        for jc in rnd.sample(ctx.job_classes, len(ctx.job_classes)):
            if rnd.random() < 0.3:
                tokens.append((remembering.checkpoint(), looking.checkpoint()))
            if tokens and rnd.random() < 0.2:
                mine, theirs = tokens.pop(rnd.randrange(len(tokens)))
                tokens = [t for t in tokens if t[0] <= mine]  # type: ignore[operator]
                remembering.rollback(mine)
                looking.rollback(theirs)
            for i in range(jc.rjob.replicas):
                if jc.exclusive_key:
                    domains = ctx.domains(jc.exclusive_key)
                    if not domains:
                        continue
                    domain = rnd.choice(domains)
                    got = remembering.take_domain(jc, i, domain)
                    want = looking.take_domain(jc, i, domain)
                else:
                    got = remembering.place_shared(jc, i)
                    want = looking.place_shared(jc, i)
                assert got == want
    assert remembering.shared_by() == looking.shared_by()
    for n in snap.nodes:
        assert remembering.free(n.name) == looking.free(n.name)


def test_a_shape_that_fit_nowhere_is_looked_for_again_after_a_rollback() -> None:
    s = jobset("s", rjob("cpu", pods_per_job=1, exclusive=None, tpu=0, cpu=16))
    ctx = _ctx(cluster(node("cpu-0", tpu=0, cpu=16)), s)
    ledger = PlacementLedger(ctx)
    jc = _jc(ctx, "s", "cpu")
    token = ledger.checkpoint()
    assert ledger.place_shared(jc, 0) is not None
    assert ledger.place_shared(jc, 1) is None  # the node is full: learned
    ledger.rollback(token)
    assert ledger.place_shared(jc, 1) is not None  # the room is back: looked for again


def test_a_shorter_run_of_a_shape_a_longer_one_found_no_room_for_is_looked_for_again() -> None:
    """`p0` is reserved for `r` from 1 h: closed to a 2-hour JobSet's pods, open to a 30-minute
    one's (it ends before). The long one fitting nowhere says nothing of the short one."""
    reservation = DomainReservation(
        jobset="team-a/r", key=NODEPOOL, path=((NODEPOOL, "p0"),), start_s=3600.0, end_s=7200.0
    )
    snap = cluster(pool("p0", 1, taints=[])).model_copy(update={"reservations": (reservation,)})

    def shared(name: str, hours: float) -> JobSetRequest:
        js = jobset(name, rjob("cpu", pods_per_job=1, exclusive=None, tpu=0, cpu=1))
        return js.model_copy(update={"expected_duration_s": hours * 3600})

    r = jobset("r", rjob(pods_per_job=1))
    long, short = shared("long", 2), shared("short", 0.5)
    ctx = PlacementContext(snap, [r, long, short], SolveOptions(time=TimePolicy()))
    ledger = PlacementLedger(ctx)
    assert ledger.place_shared(_jc(ctx, "long", "cpu"), 0) is None
    assert ledger.place_shared(_jc(ctx, "short", "cpu"), 0) is not None
