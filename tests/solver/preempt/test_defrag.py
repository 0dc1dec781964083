"""Defragmentation: the fewest, cheapest moves of running JobSets that let blocked ones start.

Two blocks of pools (2 hosts x 4 chips each); a pending JobSet needing three pools in one block
(required topology). Running JobSets hold whole pools; those given in the queue may move. Every
plan goes through the independent checker.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

from placer.model.cluster import ClusterSnapshot, Node, RunningJobSet
from placer.model.preemption import NOT_MOVED, PreemptionPolicy
from placer.model.workload import JobSetRequest
from tests.solver.preempt.test_victims import ON, started
from tests.strategies import (
    BLOCK,
    HOSTNAME,
    NODEPOOL,
    PreemptionCase,
    jobset,
    pool,
    preemption_scenarios,
    rjob,
    running_pool,
    solve_checked,
)

DEFRAG = ON.model_copy(update={"preemption": PreemptionPolicy(mode="defrag")})


def blocks(held: dict[int, str], running: dict[str, RunningJobSet]) -> ClusterSnapshot:
    """Pools p0-p3 in block b0, p4-p7 in b1; pool i held by `held[i]` if given."""
    nodes: list[Node] = []
    for i in range(8):
        block = f"b{i // 4}"
        if i in held:
            nodes += running_pool(f"p{i}", 2, held[i], priority=50, block=block)
        else:
            nodes += pool(f"p{i}", 2, block=block)
    return ClusterSnapshot(nodes=tuple(nodes), levels=(BLOCK, NODEPOOL, HOSTNAME), running=running)


def movable(name: str, priority: int = 50) -> JobSetRequest:
    """The manifest of running `team-b/<name>`: one pool."""
    return jobset(name, rjob(replicas=1, pods_per_job=2), namespace="team-b", priority=priority)


BLOCKED = jobset("wide", rjob(replicas=3, pods_per_job=2, required=BLOCK), priority=10)


def test_one_cheap_move_starts_the_blocked_jobset() -> None:
    """Each block has two pools free; moving the younger of b0's runners to b1 frees a third."""
    cluster = blocks(
        {0: "team-b/old", 1: "team-b/young", 4: "team-b/x", 5: "team-b/y"},
        {
            "team-b/old": started(5),
            "team-b/young": started(0.5),
            "team-b/x": started(3),
            "team-b/y": started(4),
        },
    )
    queue = [BLOCKED, movable("old"), movable("young"), movable("x"), movable("y")]
    plan = solve_checked("cpsat", cluster, queue, DEFRAG)
    assert plan.outcome("team-a/wide").status == "placed"
    assert [p.key for p in plan.preempted] == ["team-b/young"]
    assert plan.preempted[0].makes_room_for == ["team-a/wide"]
    moved = plan.outcome("team-b/young")
    assert moved.status == "placed"
    assert {j.domain.value for j in moved.jobs if j.domain} <= {"p6", "p7"}
    for key in ("team-b/old", "team-b/x", "team-b/y"):
        assert plan.outcome(key).reason == NOT_MOVED
    assert plan.solver.objective == BLOCKED.accelerator_units  # a move is no admission


def test_no_move_when_the_jobset_fits_already() -> None:
    cluster = blocks({0: "team-b/a"}, {"team-b/a": started(1)})
    plan = solve_checked("cpsat", cluster, [BLOCKED, movable("a")], DEFRAG)
    assert plan.outcome("team-a/wide").status == "placed"
    assert plan.preempted == []
    assert plan.outcome("team-b/a").reason == NOT_MOVED


def test_a_protected_jobset_never_moves() -> None:
    cluster = blocks(
        {0: "team-b/a", 1: "team-b/b", 4: "team-b/c", 5: "team-b/d"},
        {k: started(1, preemptible=False) for k in ("team-b/a", "team-b/b", "team-b/c")}
        | {"team-b/d": started(1)},
    )
    queue = [BLOCKED, *(movable(n) for n in "abcd")]
    plan = solve_checked("cpsat", cluster, queue, DEFRAG)
    assert [p.key for p in plan.preempted] == ["team-b/d"]
    assert plan.outcome("team-a/wide").status == "placed"


def test_a_running_jobset_not_given_never_moves() -> None:
    cluster = blocks(
        {0: "team-b/a", 4: "team-b/c", 1: "team-b/b", 5: "team-b/d"},
        {k: started(1) for k in ("team-b/a", "team-b/b", "team-b/c", "team-b/d")},
    )
    plan = solve_checked("cpsat", cluster, [BLOCKED], DEFRAG)
    assert plan.preempted == []
    assert plan.outcome("team-a/wide").status == "unschedulable"


@settings(
    max_examples=30, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
@given(preemption_scenarios())
def test_every_move_starts_something_and_admission_never_drops(case: PreemptionCase) -> None:
    running = sorted({k for n in case.snapshot.nodes for k in n.jobsets})
    queue = [*case.jobsets, *(movable(k.split("/")[1]).model_copy(
        update={"namespace": "team-z", "replicated_jobs": (rjob(replicas=1, pods_per_job=2),)}
    ) for k in running)]  # fmt: skip
    plan = solve_checked("cpsat", case.snapshot, queue, DEFRAG)
    stay = solve_checked("cpsat", case.snapshot, case.jobsets, ON.model_copy(
        update={"preemption": PreemptionPolicy()}))  # fmt: skip
    pending = {js.key for js in case.jobsets}
    for p in plan.preempted:
        assert case.snapshot.running[p.key].preemption.preemptible
        assert plan.outcome(p.key).status == "placed"
        assert p.makes_room_for and set(p.makes_room_for) <= pending
        assert all(plan.outcome(k).status == "placed" for k in p.makes_room_for)
    for key in running:
        if key not in {p.key for p in plan.preempted}:
            assert plan.outcome(key).status == "unschedulable"
    admitted = sum(
        o.accelerators for o in plan.jobsets if o.status == "placed" and o.key in pending
    )
    assert admitted >= stay.accelerators_admitted or not plan.preempted
