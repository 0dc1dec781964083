"""Materialization's ways of packing Kueue-annotated pods, each pinned on its own.

`materialize` tries several ways (queue order inside the model's domains, required-first order,
the model's pod counts) and keeps the tightest plan that packs; when one way fails another
usually succeeds, so a rule broken inside one way does not show in the planner's plan. A
mutation sweep found exactly that: a required JobSet placed outside the model's domain, or the
required-first order dropped, left every planner test green. Each way is therefore asked alone
here, on a solution of the real model (both JobSets admitted), and the spread measure that
chooses between the ways is checked against a count made here.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal

from hypothesis import HealthCheck, given, settings
from ortools.sat.python import cp_model

from placer.model.cluster import ClusterSnapshot
from placer.model.options import SolveOptions
from placer.model.plan import Plan, SolverReport
from placer.model.resources import PODS
from placer.model.workload import JobSetRequest
from placer.solver.check.checker import check
from placer.solver.context import PlacementContext
from placer.solver.cpsat import AggregatedProblem, aggregate, build_model, make_solver
from placer.solver.cpsat.materialize import _kueue_spread, _materialize, _model_limits
from placer.solver.cpsat.solution import Solution
from tests.kueue_tas.cases import BLOCK, RACK, THREE, hosts, rack_hosts
from tests.kueue_tas.test_kueue_cases import queue_of
from tests.strategies import BLOCK as BLOCK_KEY
from tests.strategies import HOSTNAME, SUBBLOCK, kueue_clusters, kueue_jobsets, solve_checked

OPTIONS = SolveOptions(levels=THREE, workers=1, time_limit_s=10)
REPORT = SolverReport(name="cpsat", status="FEASIBLE")


def _solved_with_all_admitted(
    snapshot: ClusterSnapshot, queue: Sequence[JobSetRequest]
) -> tuple[PlacementContext, AggregatedProblem, Solution]:
    """The planner's model with every JobSet admitted, solved: a solution the model stands by."""
    ctx = PlacementContext(snapshot, queue, OPTIONS)
    built = build_model(aggregate(ctx))
    for js in queue:
        built.model.add(built.variables.admit[js.key] == 1)
    solver = make_solver(OPTIONS, "stage")
    assert solver.solve(built.model) in (cp_model.OPTIMAL, cp_model.FEASIBLE)
    return ctx, built.problem, Solution.read(solver, built.variables)


def _racks(plan: Plan, snapshot: ClusterSnapshot, name: str) -> set[str]:
    nodes = snapshot.by_name()
    outcome = next(o for o in plan.jobsets if o.name == name)
    assert outcome.status == "placed", outcome.reason
    return {nodes[p.node].labels[RACK] for j in outcome.jobs for p in j.pods}


def test_queue_order_packs_a_required_jobset_inside_the_domain_the_model_chose() -> None:
    """b1: r1 (2 hosts), r2 (3); b2: r3 (3). `rack` (first) needs 2 pods in one rack, `block` 5
    pods in one block. Kueue gives `rack` the tightest rack, r1, and `block` no longer fits in
    either block; the model puts `rack` in r3, the only choice that admits both. Packed in queue
    order, `rack` must go where the model said, not where Kueue alone would."""
    nodes = hosts(
        *rack_hosts("b1", "r1", 2), *rack_hosts("b1", "r2", 3), *rack_hosts("b2", "r3", 3)
    )
    snapshot = ClusterSnapshot(nodes=nodes)
    queue = queue_of(nodes, ("rack", 2, {"required": RACK}), ("block", 5, {"required": BLOCK}))
    kueue = solve_checked("best-fit", snapshot, queue, OPTIONS)
    assert [o.status for o in kueue.jobsets] == ["placed", "unschedulable"]  # the premise

    ctx, problem, solution = _solved_with_all_admitted(snapshot, queue)
    plan = _materialize(ctx, problem, solution, REPORT, follow=frozenset(), by_queue=True)
    assert plan is not None
    assert check(plan, snapshot, queue, OPTIONS) == []
    assert _racks(plan, snapshot, "rack") == {"r3"}
    assert _racks(plan, snapshot, "block") == {"r1", "r2"}


def test_required_jobsets_are_packed_before_preferred_ones_outside_queue_order() -> None:
    """b1: r1 (4 hosts), r2 (2), r3 (2). `pref` (first) prefers one rack for 4 pods, `req` needs
    4 pods in one rack: only r1 holds 4. In queue order Kueue gives r1 to `pref` and `req` cannot
    pack; the required-first way packs `req` into r1 and lets `pref` spread over r2 and r3."""
    nodes = hosts(
        *rack_hosts("b1", "r1", 4), *rack_hosts("b1", "r2", 2), *rack_hosts("b1", "r3", 2)
    )
    snapshot = ClusterSnapshot(nodes=nodes)
    queue = queue_of(nodes, ("pref", 4, {"preferred": RACK}), ("req", 4, {"required": RACK}))
    ctx, problem, solution = _solved_with_all_admitted(snapshot, queue)

    assert _materialize(ctx, problem, solution, REPORT, follow=frozenset(), by_queue=True) is None
    plan = _materialize(ctx, problem, solution, REPORT, follow=frozenset(), by_queue=False)
    assert plan is not None
    assert check(plan, snapshot, queue, OPTIONS) == []
    assert _racks(plan, snapshot, "req") == {"r1"}
    assert _racks(plan, snapshot, "pref") == {"r2", "r3"}


def test_the_planner_places_both_where_kueue_places_one() -> None:
    """The two cases above through the planner: whichever way packs, both JobSets are placed."""
    racks = (rack_hosts("b1", "r1", 4), rack_hosts("b1", "r2", 2), rack_hosts("b1", "r3", 2))
    nodes = hosts(*(h for rack in racks for h in rack))
    queue = queue_of(nodes, ("pref", 4, {"preferred": RACK}), ("req", 4, {"required": RACK}))
    plan = solve_checked("cpsat", ClusterSnapshot(nodes=nodes), queue, OPTIONS)
    assert [o.status for o in plan.jobsets] == ["placed", "placed"]


def _spans_counted_here(plan: Plan, snapshot: ClusterSnapshot) -> tuple[int, int, int]:
    """Blocks, racks (a rack named under two blocks is two racks) and hosts used, per placed
    JobSet, summed."""
    nodes = snapshot.by_name()
    blocks = racks = hosts_used = 0
    for o in plan.jobsets:
        names = {p.node for j in o.jobs for p in j.pods}
        blocks += len({nodes[n].labels[BLOCK_KEY] for n in names})
        racks += len({(nodes[n].labels[BLOCK_KEY], nodes[n].labels[SUBBLOCK]) for n in names})
        hosts_used += len(names)
    return blocks, racks, hosts_used


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(snapshot=kueue_clusters(), js=kueue_jobsets())
def test_the_spread_that_chooses_between_ways_counts_blocks_then_racks_then_hosts(
    snapshot: ClusterSnapshot, js: JobSetRequest
) -> None:
    """The measure `materialize` keeps the smallest of: domains per level from the top, racks
    by their path (the strategy reuses rack names across blocks), hosts last."""
    assert snapshot.levels == (BLOCK_KEY, SUBBLOCK, HOSTNAME)
    plan = solve_checked("best-fit", snapshot, [js], SolveOptions(workers=1))
    ctx = PlacementContext(snapshot, [js], SolveOptions(workers=1))
    assert _kueue_spread(ctx, plan) == _spans_counted_here(plan, snapshot)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(snapshot=kueue_clusters(), first=kueue_jobsets(), second=kueue_jobsets())
def test_the_models_counts_are_handed_to_nodes_that_hold_them_all_at_once(
    snapshot: ClusterSnapshot, first: JobSetRequest, second: JobSetRequest
) -> None:
    """The last way follows the model's pod counts per group of nodes: each group's pods go to
    its nodes in name order, and a node's room is shared between the JobSets, so the pods the
    limits allow on a node fit it together (the model counted room per group, not per node)."""
    queue = [first, second.model_copy(update={"name": "tas-2", "order": 1})]
    options = SolveOptions(workers=1, time_limit_s=10)
    ctx = PlacementContext(snapshot, queue, options)
    built = build_model(aggregate(ctx))
    solver = make_solver(options, "stage")
    assert solver.solve(built.model) in (cp_model.OPTIMAL, cp_model.FEASIBLE)
    solution = Solution.read(solver, built.variables)
    classes = list(built.problem.shared)
    limits = _model_limits(built.problem, solution.shared_pods, classes)
    for name, node in snapshot.by_name().items():
        allowed = [(jc.rjob.pod, limits.get(jc.index, {}).get(name, 0)) for jc in classes]
        if not any(k for _, k in allowed):
            continue
        assert sum(k for _, k in allowed) <= node.free.get(PODS, Decimal(0))
        for resource, free in node.free.items():
            used = sum((p.requests.get(resource, Decimal(0)) * k for p, k in allowed), Decimal(0))
            assert used <= free, (name, resource)
