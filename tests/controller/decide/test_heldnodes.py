"""What a recorded placement holds, as the planner is told (`heldnodes.py`).

An exclusive child Job holds its whole domain: closed to every other JobSet's pods, as the
ledger closes it to every other record (before round 48 the planner put pods without an
exclusive key there, the record was refused, and the same plan came every cycle). A child Job
without an exclusive key holds only its pods' room: the next JobSet's coordinator may go
beside it, in what is left once the recorded pods, bound or not yet, are counted.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from placer.controller.decide.observe.domains import DomainIndex, hold_token
from placer.controller.decide.observe.survey import ManagedJobSet, PodEntry
from placer.controller.decide.plan.heldnodes import (
    HeldNodes,
    RecordedPods,
    held_from_now,
    held_nodes,
    held_snapshot,
    overlap,
    recorded_pods,
    shapes_without_a_key,
    victims_unbound,
    victims_whole,
)
from placer.controller.decide.preempting import Victim, evictable_snapshot
from placer.model.assignment import Assignment, JobAssignment
from placer.model.cluster import ClusterSnapshot, JobSetUsage, RunningJobSet
from placer.model.kube.pods import PodRef
from placer.model.options import SolveOptions, TimePolicy
from placer.model.plan import DomainRef, Plan
from placer.model.preemption import PreemptionFacts, PreemptionMode, PreemptionPolicy
from placer.model.whatif import without_jobsets
from placer.model.workload import JobSetRequest, PodShape
from placer.solver.check.checker import check
from placer.solver.registry import get_solver
from tests.solver.time.test_timeaware import NOW, H, _timed
from tests.strategies import HOSTNAME, NODEPOOL, cluster, jobset, node, resources, rjob

COORD = hold_token("team-a", "one-coord-0")
SLICE = hold_token("team-a", "big-w-0")
RECORDS = {
    "team-a/one": {"one-coord-0": JobAssignment(nodes={0: "cpu-0"})},
    "team-a/big": {
        "big-w-0": JobAssignment(
            domain=DomainRef(key=NODEPOOL, value="slice", path=[(NODEPOOL, "slice")])
        )
    },
}
SIX_CORES = {"team-a/one": {"one-coord-0": PodShape(requests=resources(cpu=6))}}
PLAIN = SolveOptions(workers=1, seed=1)
TIMED = SolveOptions(workers=1, seed=1, time=TimePolicy(now=NOW, reservations="all"))
SOLVERS = ["cpsat", "best-fit", "first-fit"]
LOWER: PreemptionMode = "lower-priority"


def _fleet(*, bound: bool) -> ClusterSnapshot:
    """cpu-0 (8 cores) is recorded for `one`'s six-core coordinator, its pod bound there or
    not yet; cpu-1 is full; `big`'s exclusive child Job holds both hosts of pool `slice`,
    whose cores are free."""
    coordinator = {"free": resources(cpu=2, pods=109), "jobsets": ["team-a/one"]} if bound else {}
    return cluster(
        node("cpu-0", tpu=0, cpu=8, **coordinator),  # type: ignore[arg-type]
        node("cpu-1", tpu=0, cpu=8, free=resources(cpu=0, pods=100), jobsets=["ns/full"]),
        [node(f"s-{i}", tpu=0, cpu=32, labels={NODEPOOL: "slice"}) for i in range(2)],
    )


def _pods(*, bound: bool) -> RecordedPods:
    settled = frozenset({("one-coord-0", 0)}) if bound else frozenset()
    return RecordedPods(shapes=SIX_CORES, settled={"team-a/one": settled})


def _planned_on(bound: bool, options: SolveOptions, shapes: list[PodShape]) -> ClusterSnapshot:
    """The snapshot the controller gives its planner (planning._solve_pass): every hold's
    token, the unbound pods' room, the whole holds' nodes reserved; `big` ends in an hour,
    everything else in five."""
    snap = _fleet(bound=bound)
    running = {
        key: RunningJobSet(
            started_at=NOW - timedelta(hours=1), expected_duration_s=(2 if "big" in key else 6) * H
        )
        for key in (COORD, SLICE, "team-a/one", "team-a/big", "ns/full")
    }
    snap = snap.model_copy(update={"running": running})
    held = held_nodes(RECORDS, {}, DomainIndex(snap), _pods(bound=bound))
    return held_from_now(held_snapshot(snap, held), held.whole, options, shapes)


def _plan(
    solver: str, *, bound: bool, cores: int, options: SolveOptions = PLAIN
) -> tuple[Plan, ClusterSnapshot, JobSetRequest]:
    two = _timed(
        jobset("two", rjob("main", pods_per_job=1, exclusive=None, tpu=0, cpu=cores)), 3, 1
    )
    snap = _planned_on(bound, options, [two.replicated_jobs[0].pod])
    plan = get_solver(solver, time_policy=options.time).solve(snap, [two], options)
    assert check(plan, snap, [two], options) == []
    return plan, snap, two


@pytest.mark.parametrize("bound", [True, False], ids=["bound", "not-bound-yet"])
@pytest.mark.parametrize("solver", SOLVERS)
def test_a_coordinator_goes_beside_another_jobsets_in_the_room_its_pods_leave(
    solver: str, bound: bool
) -> None:
    """Two cores are left on cpu-0 beside `one`'s six, whether its pod is bound (the snapshot
    counts it) or only recorded (the hold counts it): a two-core pod goes there, and the
    ledger's last check takes its record."""
    plan, snap, _ = _plan(solver, bound=bound, cores=2)
    outcome = plan.outcome("team-a/two")
    assert [p.node for j in outcome.jobs for p in j.pods] == ["cpu-0"]
    record = Assignment.from_outcome(outcome, pinned=False)
    held = held_nodes(RECORDS, {}, DomainIndex(snap), _pods(bound=bound))
    assert overlap(record, held, DomainIndex(snap)) == ""


@pytest.mark.parametrize("bound", [True, False], ids=["bound", "not-bound-yet"])
@pytest.mark.parametrize("solver", SOLVERS)
def test_a_pod_the_room_left_cannot_take_waits_and_the_exclusive_slice_stays_closed(
    solver: str, bound: bool
) -> None:
    """A three-core pod fits neither beside `one`'s coordinator (an unbound one's six cores
    count too: else the node would be overcommitted once it binds) nor on `big`'s slice,
    whose 64 free cores its exclusive child Job holds whole."""
    plan, _, _ = _plan(solver, bound=bound, cores=3)
    two = plan.outcome("team-a/two")
    assert two.status == "unschedulable"
    assert f"held by running {SLICE}" in two.reason, two.reason


@pytest.mark.parametrize("solver", ["cpsat", "best-fit"])
def test_over_time_it_starts_when_the_exclusive_hold_ends(solver: str) -> None:
    plan, _, _ = _plan(solver, bound=False, cores=3, options=TIMED)
    two = plan.outcome("team-a/two")
    assert (two.status, two.expected_start_seconds) == ("unschedulable", 1 * H)


def test_holds_are_whole_for_exclusive_jobs_foreign_holders_and_jobsets_not_sized() -> None:
    snap = _fleet(bound=False)
    index = DomainIndex(snap)
    held = held_nodes(RECORDS, {}, index, _pods(bound=False))
    assert held.whole == {"s-0": (SLICE,), "s-1": (SLICE,)}
    assert held.tokens["cpu-0"] == (COORD,)
    assert held.unbound == {"cpu-0": {COORD: (resources(cpu=6, pods=1), ())}}
    # the same coordinator unsized (its manifest did not parse), or another holder's: whole
    assert held_nodes(RECORDS, {}, index).whole["cpu-0"] == (COORD,)
    foreign = held_nodes({}, {"record.team-b.x": RECORDS["team-a/one"]}, index, _pods(bound=False))
    assert list(foreign.whole) == ["cpu-0"] and not foreign.unbound


def test_an_unbound_pod_takes_its_room_as_its_holds_usage_and_a_bound_one_none() -> None:
    snap = _fleet(bound=False)
    index = DomainIndex(snap)
    cpu_0 = held_snapshot(snap, held_nodes(RECORDS, {}, index, _pods(bound=False))).node("cpu-0")
    assert cpu_0.free == resources(cpu=2, pods=109)
    assert cpu_0.jobsets == (COORD,)
    assert cpu_0.jobset_usage[COORD].requests == resources(cpu=6, pods=1)
    settled = held_snapshot(snap, held_nodes(RECORDS, {}, index, _pods(bound=True))).node("cpu-0")
    assert settled.free == snap.node("cpu-0").free
    assert settled.jobset_usage[COORD].requests == {}


def test_overlap_keeps_exclusive_jobs_off_every_hold_and_the_rest_off_whole_ones() -> None:
    index = DomainIndex(_fleet(bound=True))
    held = held_nodes(RECORDS, {}, index, _pods(bound=True))

    def record(job: JobAssignment) -> Assignment:
        return Assignment(jobset="team-a/two", jobs={"two-main-0": job})

    beside = record(JobAssignment(nodes={0: "cpu-0"}))
    assert overlap(beside, held, index) == ""
    assert "cpu-0 (held by placer:team-a/one-coord-0)" in overlap(beside, held, index, strict=True)
    on_slice = record(JobAssignment(nodes={0: "s-1"}))
    assert overlap(on_slice, held, index) == f"two-main-0 on s-1 (held by {SLICE})"
    host = DomainRef(key=HOSTNAME, value="cpu-0", path=[(HOSTNAME, "cpu-0")])
    assert "held by placer:team-a/one-coord-0" in overlap(
        record(JobAssignment(domain=host)), held, index
    )
    assert overlap(beside, HeldNodes(), index) == ""


def test_a_whole_held_node_without_room_for_such_a_pod_needs_no_reservation() -> None:
    """s-0 has 32 cores free: a one-core pod's shape gets it reserved, a 64-core one's does
    not (no such pod goes there now anyway); no hold, no change."""
    snap = _fleet(bound=True)
    whole = {"s-0": [SLICE]}
    one, big = (rjob("main", exclusive=None, tpu=0, cpu=c).pod for c in (1, 64))
    assert [r.path for r in held_from_now(snap, whole, PLAIN, [one]).reservations] == [
        (("placer.dev/node", "s-0"),)
    ]
    assert held_from_now(snap, whole, PLAIN, [big]) is snap
    assert held_from_now(snap, {}, PLAIN, [one]) is snap


def _entry(index: int, *, node: str = "", phase: str = "Pending", attempt: int = 1) -> PodEntry:
    pod = {
        "metadata": {"name": f"one-coord-0-{index}"},
        "spec": {"nodeName": node} if node else {},
        "status": {"phase": phase},
    }
    ref = PodRef("team-a", "one", "coord", 0, index, restart_attempt=attempt)
    return PodEntry(pod, ref)


def _managed(
    name: str, request: JobSetRequest | None, *, restarts: int, pods: tuple[PodEntry, ...]
) -> ManagedJobSet:
    return ManagedJobSet(
        obj={"metadata": {"namespace": "team-a", "name": name}},
        request=request,
        error="" if request is not None else "does not parse",
        assignment=None,
        annotation=None,
        finished=False,
        suspended=False,
        restarts=restarts,
        pods=pods,
    )


def test_recorded_pods_settles_the_current_attempts_bound_and_succeeded_pods() -> None:
    request = jobset(
        "one",
        rjob("w", exclusive=NODEPOOL),
        rjob("coord", pods_per_job=6, exclusive=None, tpu=0, cpu=1),
    )
    pods = (
        _entry(0, node="cpu-0", phase="Running"),
        _entry(1, phase="Succeeded"),
        _entry(2, node="cpu-0", phase="Failed"),
        _entry(3, node="cpu-0", phase="Running", attempt=0),
        _entry(4),
    )
    managed = _managed("one", request, restarts=1, pods=pods)
    found = recorded_pods([managed, _managed("bad", None, restarts=0, pods=())])
    assert list(found.shapes) == ["team-a/one"]
    assert list(found.shapes["team-a/one"]) == ["one-coord-0"]
    assert found.settled["team-a/one"] == {("one-coord-0", 0), ("one-coord-0", 1)}


@st.composite
def _recorded_worlds(
    draw: st.DrawFn,
) -> tuple[ClusterSnapshot, dict[str, dict[str, JobAssignment]], RecordedPods, list[JobSetRequest]]:
    """2-5 eight-core hosts and a two-host slice `big` holds whole; 1-4 recorded JobSets of
    one child Job without an exclusive key, their pods put where their cores fit (as the ledger
    would have committed them), each pod bound (in the snapshot) or not yet; 1-3 new JobSets of
    such pods to plan."""
    hosts = [f"cpu-{i}" for i in range(draw(st.integers(2, 5)))]
    left = {h: 8 for h in hosts}
    used = {h: 0 for h in hosts}
    on_host: dict[str, set[str]] = {h: set() for h in hosts}
    records: dict[str, dict[str, JobAssignment]] = {**RECORDS}
    records.pop("team-a/one")
    shapes: dict[str, Mapping[str, PodShape]] = {}
    settled: dict[str, frozenset[tuple[str, int]]] = {}
    for r in range(draw(st.integers(1, 4))):
        key, job = f"team-a/r{r}", f"r{r}-c-0"
        cores = draw(st.integers(1, 4))
        nodes: dict[int, str] = {}
        bound: set[tuple[str, int]] = set()
        for index in range(draw(st.integers(1, 3))):
            room = [h for h in hosts if left[h] >= cores]
            if not room:
                break
            host = draw(st.sampled_from(room))
            left[host] -= cores
            nodes[index] = host
            if draw(st.booleans()):
                bound.add((job, index))
                used[host] += cores
                on_host[host].add(key)
        if nodes:
            records[key] = {job: JobAssignment(nodes=nodes)}
            shapes[key] = {job: PodShape(requests=resources(cpu=cores))}
            settled[key] = frozenset(bound)
    snap = cluster(
        [
            node(h, tpu=0, cpu=8, free=resources(cpu=8 - used[h], pods=110), jobsets=on_host[h])
            for h in hosts
        ],
        [node(f"s-{i}", tpu=0, cpu=32, labels={NODEPOOL: "slice"}) for i in range(2)],
    )
    queue = [
        jobset(
            f"new{q}",
            rjob(
                "main",
                pods_per_job=draw(st.integers(1, 3)),
                exclusive=None,
                tpu=0,
                cpu=draw(st.integers(1, 4)),
            ),
            order=q,
        )
        for q in range(draw(st.integers(1, 3)))
    ]
    return snap, records, RecordedPods(shapes, settled), queue


def _as_planned(
    snap: ClusterSnapshot,
    records: Mapping[str, Mapping[str, JobAssignment]],
    pods: RecordedPods,
    queue: list[JobSetRequest],
    options: SolveOptions,
    victims: Mapping[str, Victim],
) -> ClusterSnapshot:
    """The snapshot the controller plans on (`planning._solve_pass`): the records that are not
    victims held, the whole holds' nodes reserved; with preemption, the victims offered to the
    solver, their recorded pods not bound yet counted as their own usage."""
    index = DomainIndex(snap)
    held = held_nodes({k: v for k, v in records.items() if k not in victims}, {}, index, pods)
    planned_on = held_from_now(
        held_snapshot(snap, held), held.whole, options, shapes_without_a_key(queue)
    )
    if not options.preemption.active:
        return planned_on
    offered = {k: records[k] for k in victims}
    planned_on = evictable_snapshot(planned_on, index, victims, records)
    planned_on = victims_unbound(planned_on, offered, pods)
    return held_from_now(
        planned_on, victims_whole(offered, index), options, shapes_without_a_key(queue)
    )


@settings(max_examples=60, deadline=None)
@given(
    world=_recorded_worlds(),
    solver=st.sampled_from(SOLVERS),
    options=st.sampled_from([PLAIN, TIMED]),
    victims=st.none() | st.sets(st.integers(0, 3)),
)
def test_recorded_and_planned_pods_never_overcommit_a_host_nor_enter_a_whole_hold(
    world: tuple[
        ClusterSnapshot, dict[str, dict[str, JobAssignment]], RecordedPods, list[JobSetRequest]
    ],
    solver: str,
    options: SolveOptions,
    victims: set[int] | None,
) -> None:
    """What every plan on the controller's snapshot must keep, planning now or over time, with
    or without preemption: the checker passes, the ledger's last check (`overlap`) takes every
    new record (else the same plan comes every cycle), and on every host the recorded pods,
    bound or not, of every JobSet the plan does not evict, and the new ones fit its eight
    cores. With preemption (`victims` names the recorded JobSets offered to be evicted) the
    queue outranks them; not counting a victim's pods not bound yet, a host reached 11 of 8."""
    snap, records, pods, queue = world
    offered: dict[str, Victim] = {}
    if victims is not None:
        options = options.model_copy(update={"preemption": PreemptionPolicy(mode=LOWER)})
        offered = {
            k: Victim(uid=k, facts=PreemptionFacts())
            for i in victims
            if (k := f"team-a/r{i}") in records
        }
        queue = [js.model_copy(update={"priority": 10}) for js in queue]
    planned_on = _as_planned(snap, records, pods, queue, options, offered)
    plan = get_solver(solver, time_policy=options.time).solve(planned_on, queue, options)
    assert check(plan, planned_on, queue, options) == []
    evicted = {p.key for p in plan.preempted}
    assert evicted <= set(offered)
    index = DomainIndex(snap)
    staying = {k: v for k, v in records.items() if k not in evicted}
    held = held_nodes(staying, {}, index, pods)
    cores: dict[str, Decimal] = {}
    for key, jobs in staying.items():
        for name, job in jobs.items():
            shape = pods.shapes.get(key, {}).get(name)
            for host in job.nodes.values():
                if shape is not None:
                    cores[host] = cores.get(host, Decimal(0)) + shape.requests["cpu"]
    by_key = {js.key: js for js in queue}
    for outcome in plan.jobsets:
        if outcome.status != "placed":
            continue
        assert overlap(Assignment.from_outcome(outcome, pinned=False), held, index) == ""
        request = by_key[outcome.key].replicated_jobs[0].pod.requests["cpu"]
        for j in outcome.jobs:
            for p in j.pods:
                assert not p.node.startswith("s-"), p.node
                cores[p.node] = cores.get(p.node, Decimal(0)) + request
    assert all(c <= 8 for c in cores.values()), cores


VICTIM = {"team-a/one": Victim(uid="u-one", facts=PreemptionFacts())}
PREEMPTING = SolveOptions(workers=1, seed=1, preemption=PreemptionPolicy(mode=LOWER))


def test_a_victims_pod_not_bound_yet_takes_its_room_as_the_victims_and_eviction_frees_it() -> None:
    """`one` may be evicted, so its record is not held; its coordinator, recorded on cpu-0 and
    not bound yet, still takes six cores there, as `one`'s own usage: listed with its
    priority, and given back when a plan lets `one` go (`without_jobsets`)."""
    snap = _fleet(bound=False)
    seen = _as_planned(snap, RECORDS, _pods(bound=False), [], PREEMPTING, VICTIM)
    cpu_0 = seen.node("cpu-0")
    assert cpu_0.free == resources(cpu=2, pods=109)
    assert "team-a/one" in cpu_0.jobsets
    assert cpu_0.jobset_usage["team-a/one"].requests == resources(cpu=6, pods=1)
    assert seen.running["team-a/one"].preemption == VICTIM["team-a/one"].facts
    freed, _, _ = without_jobsets(seen, ["team-a/one"])
    assert freed.node("cpu-0").free == snap.node("cpu-0").free
    bound = _as_planned(_fleet(bound=True), RECORDS, _pods(bound=True), [], PREEMPTING, VICTIM)
    assert bound.node("cpu-0").free == resources(cpu=2, pods=109)  # counted once, by the snapshot


@pytest.mark.parametrize("priority", [0, 10], ids=["its-priority", "above-it"])
@pytest.mark.parametrize("cores", [2, 3])
@pytest.mark.parametrize("solver", SOLVERS)
def test_a_coordinator_never_takes_the_room_of_a_victims_pod_not_bound_yet(
    solver: str, cores: int, priority: int
) -> None:
    """Two cores are left beside the victim's recorded six on cpu-0: a two-core pod goes there
    without evicting anyone, a three-core one waits for room (before, the victim's record was
    not held and its pod not counted, and the pod went there: 9 cores of 8 once both bound).
    Preemption makes room only for exclusive child Jobs, so a higher priority waits too."""
    two = jobset(
        "two", rjob("main", pods_per_job=1, exclusive=None, tpu=0, cpu=cores), priority=priority
    )
    snap = _as_planned(_fleet(bound=False), RECORDS, _pods(bound=False), [two], PREEMPTING, VICTIM)
    plan = get_solver(solver).solve(snap, [two], PREEMPTING)
    assert check(plan, snap, [two], PREEMPTING) == []
    outcome = plan.outcome("team-a/two")
    assert not plan.preempted
    if cores == 2:
        assert [p.node for j in outcome.jobs for p in j.pods] == ["cpu-0"]
    else:
        assert outcome.status == "unschedulable"
        assert "no room for one pod (cpu)" in outcome.reason, outcome.reason


ONE_WITH_SLICE = {
    "team-a/one": {
        "one-coord-0": JobAssignment(nodes={0: "cpu-0"}),
        "one-w-0": RECORDS["team-a/big"]["big-w-0"],
    }
}


def _one_on_the_slice() -> ClusterSnapshot:
    """`_fleet`, with `one` (priority 0) running its exclusive child Job on the slice, one core
    of each host, and its coordinator recorded on cpu-0, not bound yet."""
    snap = _fleet(bound=False)
    running = JobSetUsage(priority=0, requests=resources(cpu=1, pods=1))
    nodes = [
        n.model_copy(update={"jobsets": ("team-a/one",), "jobset_usage": {"team-a/one": running}})
        if n.name.startswith("s-")
        else n
        for n in snap.nodes
    ]
    return snap.model_copy(update={"nodes": tuple(nodes)})


@pytest.mark.parametrize("priority", [0, 10], ids=["its-priority", "above-it"])
@pytest.mark.parametrize("solver", SOLVERS)
def test_a_victims_slice_stays_closed_to_pods_without_a_key_while_it_runs(
    solver: str, priority: int
) -> None:
    """`one` may be evicted, so its records are not held; its slice (32 free cores a host)
    is still no place for a three-core pod of another JobSet while `one` runs there: placer
    holds an exclusive domain whole, and `overlap` would refuse the record, cycle after cycle
    (before, the pod went to s-0). Reasons name `one`. Evicted, `one` takes its hold along
    (`without_jobsets`), and the slice takes the pod."""
    two = jobset(
        "two", rjob("main", pods_per_job=1, exclusive=None, tpu=0, cpu=3), priority=priority
    )
    snap = _as_planned(
        _one_on_the_slice(), ONE_WITH_SLICE, _pods(bound=False), [two], PREEMPTING, VICTIM
    )
    plan = get_solver(solver).solve(snap, [two], PREEMPTING)
    assert check(plan, snap, [two], PREEMPTING) == []
    outcome = plan.outcome("team-a/two")
    assert (outcome.status, plan.preempted) == ("unschedulable", [])
    assert "2 held by running team-a/one" in outcome.reason, outcome.reason
    freed, _, _ = without_jobsets(snap, ["team-a/one"])
    assert not freed.reservations
    plan = get_solver(solver).solve(freed, [two], PREEMPTING)
    assert [p.node for j in plan.outcome("team-a/two").jobs for p in j.pods] == ["cpu-0"]
