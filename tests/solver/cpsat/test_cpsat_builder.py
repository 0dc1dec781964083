"""The one model builder: each constraint family with a tiny feasible and infeasible case, per mode.

Cases ask the model itself (`build_model` plus a constraint saying what is wanted, then one solve),
so a family that is dropped or weakened in one mode fails here even if the planner's greedy
fallback would hide it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Unpack

import pytest
from ortools.sat.python import cp_model

from placer.model.cluster import ClusterSnapshot, Node, RunningJobSet
from placer.model.options import SolveOptions, TimePolicy
from placer.model.preemption import PreemptionPolicy
from placer.model.workload import JobSetRequest
from placer.solver.context import PlacementContext
from placer.solver.cpsat import (
    AggregatedProblem,
    BuiltModel,
    Guards,
    ModelMode,
    aggregate,
    build_model,
    make_solver,
    placement_of,
)
from placer.solver.cpsat.preemption import evicting_context
from tests.strategies import (
    BLOCK,
    HOSTNAME,
    NODEPOOL,
    PoolOptions,
    cluster,
    jobset,
    node,
    pod,
    pool,
    rjob,
    running_pool,
)

OPTIONS = SolveOptions(workers=1, time_limit_s=5, seed=0)

Want = Callable[[BuiltModel], None]


def build(
    snapshot: ClusterSnapshot,
    jobsets: Sequence[JobSetRequest],
    mode: ModelMode = "admission",
    guards: Guards | None = None,
    options: SolveOptions = OPTIONS,
) -> BuiltModel:
    return build_model(aggregate(PlacementContext(snapshot, jobsets, options)), mode, guards)


def feasible(built: BuiltModel, *wants: Want) -> bool:
    for want in wants:
        want(built)
    status = make_solver(OPTIONS, "stage").solve(built.model)
    assert status in (cp_model.OPTIMAL, cp_model.FEASIBLE, cp_model.INFEASIBLE)
    return bool(status != cp_model.INFEASIBLE)


def admitted(*names: str, namespace: str = "team-a") -> Want:
    def want(built: BuiltModel) -> None:
        for name in names:
            built.model.add(built.variables.admit[f"{namespace}/{name}"] == 1)

    return want


def pools(n: int, hosts: int = 2, **kw: Unpack[PoolOptions]) -> ClusterSnapshot:
    return cluster(*(pool(f"p{i}", hosts, **kw) for i in range(n)))


@pytest.mark.parametrize("domains, ok", [pytest.param(2, True, id="2-domains"), (1, False)])
def test_all_or_nothing_needs_every_child_job(domains: int, ok: bool) -> None:
    built = build(pools(domains), [jobset("pair", rjob(replicas=2))])
    assert feasible(built, admitted("pair")) is ok


def test_all_or_nothing_leaves_a_rejected_jobset_with_nothing_placed() -> None:
    built = build(pools(3), [jobset("pair", rjob(replicas=2))])
    jc = built.problem.exclusive[0]

    def some_placed_but_out(b: BuiltModel) -> None:
        b.model.add(b.variables.admit["team-a/pair"] == 0)
        b.model.add(placement_of(b.variables, b.problem, jc) >= 1)

    assert not feasible(built, some_placed_but_out)


@pytest.mark.parametrize("domains, ok", [(2, True), (1, False)])
def test_domain_exclusivity_one_child_job_per_domain(domains: int, ok: bool) -> None:
    built = build(pools(domains), [jobset("a"), jobset("b", order=1)])
    assert feasible(built, admitted("a", "b")) is ok


def _blocks(*sizes: int) -> ClusterSnapshot:
    nodes = [
        pool(f"b{b}p{p}", 2, block=f"b{b}") for b, size in enumerate(sizes) for p in range(size)
    ]
    return cluster(*nodes, levels=(BLOCK, NODEPOOL, HOSTNAME))


@pytest.mark.parametrize("sizes, ok", [((2, 1), True), ((1,), False)])
def test_overlapping_domains_are_never_both_taken(sizes: tuple[int, ...], ok: bool) -> None:
    # a whole block and a node pool: only a second block leaves a pool outside the block taken
    whole = jobset("block", rjob(pods_per_job=2 * sizes[0], exclusive=BLOCK))
    built = build(_blocks(*sizes), [whole, jobset("slice", order=1)])
    assert feasible(built, admitted("block", "slice")) is ok


def _cpu_nodes(n: int, cpu: int) -> list[Node]:
    return [node(f"cpu-{i}", tpu=0, cpu=cpu) for i in range(n)]


@pytest.mark.parametrize("cpus, ok", [(8, True), (4, False)])
def test_shared_fit_counts_every_shape_against_free_resources(cpus: int, ok: bool) -> None:
    # two shapes without an exclusive key on one 8- or 4-CPU node: 2x2 + 4x1 CPUs need 8
    js = jobset(
        "shared",
        rjob("a", pods_per_job=2, exclusive=None, shape=pod(tpu=0, cpu=2)),
        rjob("b", pods_per_job=4, exclusive=None, shape=pod(tpu=0, cpu=1)),
    )
    built = build(cluster(_cpu_nodes(1, cpus)), [js])
    assert feasible(built, admitted("shared")) is ok


@pytest.mark.parametrize("n_pools, ok", [(1, False), (2, True)])
def test_shared_pods_stay_out_of_domains_taken_by_child_jobs(n_pools: int, ok: bool) -> None:
    # the child Job uses two chips of each host of its pool: a one-chip driver would fit the
    # rest, but the pool is the child Job's alone; a second pool takes the driver
    js = jobset("mixed", rjob(tpu=2), rjob("driver", exclusive=None, tpu=1, pods_per_job=1))
    assert feasible(build(pools(n_pools), [js]), admitted("mixed")) is ok


@pytest.mark.parametrize("chips, ok", [(2, True), (3, False)])
def test_shared_fit_counts_every_shape_against_a_domains_room(chips: int, ok: bool) -> None:
    # two shapes without an exclusive key in one pool of two 4-chip hosts: each shape alone fits
    # (a pod per host), both need 4 x `chips` of its 8 chips
    js = jobset(
        "shared",
        rjob("a", exclusive=None, pods_per_job=2, tpu=chips),
        rjob("b", exclusive=None, pods_per_job=2, tpu=chips),
    )
    other = jobset("other", order=1)  # gives the pool a domain class (not admitted)
    assert feasible(build(pools(1), [js, other]), admitted("shared")) is ok


@pytest.mark.parametrize("sizes, ok", [((1, 1), False), ((1, 1, 1), True)])
def test_shared_pods_stay_out_of_a_pool_inside_a_taken_block(
    sizes: tuple[int, ...], ok: bool
) -> None:
    # `whole` takes a block (its pool's hosts half used), `slice` another block's pool: the
    # driver's chip fits in either pool but both are taken, the first through its block; a
    # third block leaves a pool free
    whole = jobset(
        "whole",
        rjob(pods_per_job=2, exclusive=BLOCK, tpu=2),
        rjob("driver", exclusive=None, tpu=1, pods_per_job=1),
    )
    piece = jobset("slice", rjob(tpu=2), order=1)
    assert feasible(build(_blocks(*sizes), [whole, piece]), admitted("whole", "slice")) is ok


@pytest.mark.parametrize("sizes, ok", [((1, 2), True), ((1, 1, 1), False)])
def test_required_locality_keeps_child_jobs_in_one_block(sizes: tuple[int, ...], ok: bool) -> None:
    js = jobset("local", rjob(replicas=2, required=BLOCK))
    assert feasible(build(_blocks(*sizes), [js]), admitted("local")) is ok


@pytest.mark.parametrize("split, ok", [(True, False), (False, True)])
def test_a_jobset_across_two_blocks_spans_both(split: bool, ok: bool) -> None:
    # the locality objective counts the blocks a JobSet's child Jobs occupy: a pair split over
    # two blocks raises two span indicators, a pair in one block one
    built = build(_blocks(2, 2), [jobset("pair", rjob(replicas=2))])
    jc = built.problem.exclusive[0]

    def placed_and_one_span(b: BuiltModel) -> None:
        for block, n in (("b0", 1), ("b1", 1)) if split else (("b0", 2),):
            inside = [c for c in b.problem.classes_for(jc) if c.parents.get(BLOCK) == block]
            b.model.add(sum(b.variables.count[(jc.index, c.id)] for c in inside) == n)
        b.model.add(sum(b.variables.span.values()) <= 1)

    assert feasible(built, admitted("pair"), placed_and_one_span) is ok


def test_strict_fifo_admits_no_later_jobset_past_a_rejected_one() -> None:
    head = jobset("head", rjob(replicas=3), order=0)
    tail = jobset("tail", order=1)
    fifo = OPTIONS.model_copy(update={"queue": "strict-fifo"})
    assert feasible(build(pools(2), [head, tail]), admitted("tail"))
    assert not feasible(build(pools(2), [head, tail], options=fifo), admitted("tail"))


def test_impossible_locality_keeps_the_jobset_out() -> None:
    # required topology at the node pool level, finer than the exclusive key (a block)
    js = jobset("odd", rjob(replicas=2, pods_per_job=4, exclusive=BLOCK, required=NODEPOOL))
    built = build(_blocks(2, 2), [js])
    assert "team-a/odd" in built.problem.impossible
    assert not feasible(built, admitted("odd"))


def _max_copies(built: BuiltModel, key: str) -> int:
    built.model.maximize(built.variables.admit[key])
    solver = make_solver(OPTIONS, "count")
    assert solver.solve(built.model) == cp_model.OPTIMAL
    return int(solver.value(built.variables.admit[key]))


def test_copies_mode_counts_whole_copies() -> None:
    built = build(pools(5), [jobset("pair", rjob(replicas=2))], "copies")
    assert _max_copies(built, "team-a/pair") == 2


def test_copies_mode_keeps_required_locality_per_copy() -> None:
    # blocks of 3 pools: a pair per block, never a pair split across two blocks
    js = jobset("pair", rjob(replicas=2, required=BLOCK))
    assert _max_copies(build(_blocks(3, 3), [js], "copies"), "team-a/pair") == 2
    free = jobset("pair", rjob(replicas=2))
    assert _max_copies(build(_blocks(3, 3), [free], "copies"), "team-a/pair") == 3


def test_partial_mode_has_no_admission_and_places_any_part() -> None:
    built = build(pools(1), [jobset("four", rjob(replicas=4))], "partial")
    assert built.variables.admit == {}
    jc = built.problem.exclusive[0]
    placed = placement_of(built.variables, built.problem, jc)

    def one(b: BuiltModel) -> None:
        b.model.add(placed == 1)

    assert feasible(built, one)
    assert not feasible(build(pools(1), [jobset("four", rjob(replicas=4))], "partial"), _at(2))


def _at(n: int) -> Want:
    def want(b: BuiltModel) -> None:
        b.model.add(placement_of(b.variables, b.problem, b.problem.exclusive[0]) == n)

    return want


def _assume(built: BuiltModel, ids: Sequence[str]) -> bool:
    literals = built.literals()
    built.model.clear_assumptions()
    built.model.add_assumptions([literals[i] for i in ids])
    status = make_solver(OPTIONS, "conflict").solve(built.model)
    return bool(status != cp_model.INFEASIBLE)


def test_guards_put_each_requirement_behind_its_literal() -> None:
    # `high` takes one of block b0's two pools; the target wants 2 pools inside one block
    snap = _blocks(2, 1)
    high = jobset("high", rjob(node_selector={BLOCK: "b0"}), priority=10)
    target = jobset("t", rjob(replicas=2, required=BLOCK), order=1)
    guards = Guards(target=target.key, admitted=(high.key,))
    built = build(snap, [high, target], guards=guards)
    ids = list(built.literals())
    assert ids == ["replicas:workers", "locality:workers", "admitted:team-a/high"]
    assert not _assume(built, ids)
    for dropped in ids:
        assert _assume(built, [i for i in ids if i != dropped]), dropped


def test_a_guarded_locality_that_cannot_hold_conflicts_with_the_replicas() -> None:
    # node pools do not hold whole blocks: two block-exclusive child Jobs cannot share one pool.
    # Behind guards (what explain asks) that is a conflict of the replicas and the locality,
    # each satisfiable without the other
    js = jobset("odd", rjob(replicas=2, pods_per_job=4, exclusive=BLOCK, required=NODEPOOL))
    built = build(_blocks(2, 2), [js], guards=Guards(target=js.key))
    ids = list(built.literals())
    assert ids == ["replicas:workers", "locality:workers"]
    assert not _assume(built, ids)
    for dropped in ids:
        assert _assume(built, [i for i in ids if i != dropped]), dropped


def test_guards_need_admission_mode() -> None:
    problem = aggregate(PlacementContext(pools(1), [jobset("a")], OPTIONS))
    with pytest.raises(ValueError):
        build_model(problem, "copies", Guards(target="team-a/a"))


def test_aggregated_problem_is_frozen_and_indexed() -> None:
    snap = cluster(pool("small", 2), pool("big", 4, tpu=8))
    jobsets = [jobset("a", rjob(pods_per_job=4)), jobset("b", rjob(tpu=8), order=1)]
    problem: AggregatedProblem = aggregate(PlacementContext(snap, jobsets, OPTIONS))
    with pytest.raises(dataclasses.FrozenInstanceError):
        problem.impossible = {}  # type: ignore[misc]  # on purpose: a frozen field refuses it
    for jc in problem.exclusive:
        scanned = tuple(c for c in problem.domain_classes if jc.index in c.fits)
        assert problem.classes_for(jc) == scanned
    assert {c.id: c for c in problem.domain_classes} == {
        c.id: problem.class_by_id(c.id) for c in problem.domain_classes
    }


def _evicting(priority: int = 10) -> BuiltModel:
    """One pool held by low-priority team-b/low, one JobSet of `priority` wanting a pool."""
    now = datetime(2026, 12, 1, 12, tzinfo=UTC)
    snapshot = ClusterSnapshot(
        nodes=tuple(running_pool("p0", 2, "team-b/low")),
        running={"team-b/low": RunningJobSet(started_at=now)},
    )
    options = OPTIONS.model_copy(
        update={"time": TimePolicy(now=now), "preemption": PreemptionPolicy(mode="lower-priority")}
    )
    ctx = evicting_context(PlacementContext(snapshot, [jobset("big", priority=priority)], options))
    return build_model(aggregate(ctx))


def evicted(key: str, value: int) -> Want:
    def want(built: BuiltModel) -> None:
        built.model.add(built.variables.evict[key] == value)

    return want


def not_admitted(name: str) -> Want:
    def want(built: BuiltModel) -> None:
        built.model.add(built.variables.admit[f"team-a/{name}"] == 0)

    return want


@pytest.mark.parametrize(
    "wants, ok",
    [
        pytest.param((admitted("big"), evicted("team-b/low", 1)), True, id="evict-to-admit"),
        pytest.param((admitted("big"), evicted("team-b/low", 0)), False, id="held-not-evicted"),
        pytest.param((not_admitted("big"), evicted("team-b/low", 1)), False, id="evict-for-none"),
    ],
)
def test_eviction_opens_a_held_domain_only_whole_and_only_when_used(
    wants: tuple[Want, ...], ok: bool
) -> None:
    assert feasible(_evicting(), *wants) is ok


def test_without_a_lower_priority_holder_there_is_nothing_to_evict() -> None:
    built = _evicting(priority=0)
    assert built.variables.evict == {}
    assert feasible(built, admitted("big")) is False
