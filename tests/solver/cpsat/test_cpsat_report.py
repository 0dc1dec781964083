"""What the CP-SAT planner reports is what CP-SAT proved: bound, gap, status, failures by name.

Also the time limit as a budget for the whole solve call: time spent before search (here: a
budget already used up when planning starts) leaves the stages unsearched, and the report says so.
"""

from __future__ import annotations

import time
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from ortools.sat.python import cp_model

from placer.model.cluster import ClusterSnapshot
from placer.model.options import SolveOptions
from placer.model.plan import Plan, relative_gap
from placer.model.workload import JobSetRequest
from placer.solver.check.checker import check
from placer.solver.context import PlacementContext
from placer.solver.cpsat import aggregate, build_model
from placer.solver.cpsat.planner import plan_with_context
from placer.solver.cpsat.settings import SolverPurpose
from placer.solver.cpsat.solve import NOT_SEARCHED, StageOutcome, StageRunner, solve_admission
from tests.strategies import cluster, jobset, node, pod, pool, rjob, scenarios, solve_checked

OPTIONS = SolveOptions(workers=1, time_limit_s=5, seed=0)


def _queue() -> tuple[ClusterSnapshot, list[JobSetRequest]]:
    snapshot = cluster(*(pool(f"p{i}", 2) for i in range(3)))
    jobsets = [
        jobset("high", rjob(replicas=2), priority=100),
        jobset("low", rjob(replicas=1), priority=0, order=1),
        jobset("low2", rjob(replicas=1), priority=0, order=2),
    ]
    return snapshot, jobsets


def test_proven_plan_is_optimal_with_bound_equal_to_objective() -> None:
    snapshot, jobsets = _queue()
    plan = solve_checked("cpsat", snapshot, jobsets, OPTIONS)
    assert plan.solver.status == "OPTIMAL"
    assert plan.solver.objective == 24
    assert plan.solver.bound == 24 and plan.solver.gap == 0


class _SkipTier(StageRunner):
    """A runner whose `tier 0` stage finds nothing, as when the time runs out there."""

    def run(
        self,
        model: cp_model.CpModel,
        name: str,
        deadline: float,
        purpose: SolverPurpose = "stage",
        *,
        export: bool = True,
    ) -> StageOutcome:
        if name == "tier 0":
            return StageOutcome(NOT_SEARCHED, None, f"{name}: not searched, time limit spent")
        return super().run(model, name, deadline, purpose, export=export)


def test_a_tier_that_proves_nothing_leaves_the_bound_unknown() -> None:
    snapshot, jobsets = _queue()
    ctx = PlacementContext(snapshot, jobsets, OPTIONS)
    built = build_model(aggregate(ctx))
    result = solve_admission(built, _SkipTier(OPTIONS), time.perf_counter() + 5)
    assert result.found  # tier 100 was solved: its solution stands
    assert result.solution is not None and "team-a/high" in result.solution.admitted
    assert not result.optimal
    assert result.bound is None  # never the objective copied in
    assert result.notes == ("tier 0: not searched, time limit spent",)


def test_a_plan_with_an_unproven_tier_is_feasible_with_no_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import placer.solver.cpsat.planner as planner

    monkeypatch.setattr(planner, "StageRunner", _SkipTier)
    # `low` cannot join `high` whatever tier 0's search would do: CP-SAT's plan is not worse
    # than greedy's, so it is kept, with tier 0 unproven
    snapshot = cluster(*(pool(f"p{i}", 2) for i in range(3)))
    high = jobset("high", rjob(replicas=2), priority=100)
    low = jobset("low", rjob(replicas=2), order=1)
    plan = solve_checked("cpsat", snapshot, [high, low], OPTIONS)
    assert plan.solver.status == "FEASIBLE"
    assert plan.outcome("team-a/high").status == "placed"
    assert plan.solver.objective == plan.accelerators_admitted == 16
    assert plan.solver.bound is None and plan.solver.gap is None
    assert "tier 0: not searched, time limit spent" in plan.solver.notes


def test_budget_spent_before_search_falls_back_with_no_bound() -> None:
    """The time limit counts everything from the start of the solve call: with the budget used
    up before planning, no stage searches and nothing is claimed as proven."""
    snapshot, jobsets = _queue()
    ctx = PlacementContext(snapshot, jobsets, OPTIONS)
    plan = plan_with_context(ctx, started=time.perf_counter() - OPTIONS.time_limit_s)
    assert check(plan, snapshot, jobsets, OPTIONS) == []
    assert plan.solver.status == "FALLBACK"
    assert plan.solver.bound is None and plan.solver.gap is None
    assert plan.solver.notes[0] == "no CP-SAT solution within the time limit"
    assert "tier 100: not searched, time limit spent" in plan.solver.notes


def test_invalid_parameters_are_named_model_invalid() -> None:
    snapshot, jobsets = _queue()
    options = OPTIONS.model_copy(update={"workers": 100_000})
    plan = solve_checked("cpsat", snapshot, jobsets, options)
    assert plan.solver.status == "FALLBACK"
    assert plan.solver.bound is None and plan.solver.gap is None
    assert "MODEL_INVALID" in plan.solver.notes[0]
    assert any("num_workers" in n for n in plan.solver.notes[1:])
    assert all("in time" not in n for n in plan.solver.notes)


def test_a_model_cp_sat_cannot_represent_is_named_in_the_notes() -> None:
    # quantities far beyond 64 bits in the shared-pod relaxation: OR-Tools refuses the constraint
    huge = Decimal(10**30)
    snap = cluster(
        pool("p0", 2),
        [node(f"cpu{i}", tpu=0, free={"cpu": Decimal(64), "memory": huge}) for i in range(3)],
    )
    js = jobset(
        "mixed",
        rjob("a", exclusive=None, tpu=0, pods_per_job=3, shape=pod(tpu=0, memory=huge / 4)),
        rjob("b", exclusive=None, tpu=0, pods_per_job=2, shape=pod(tpu=0, memory=huge / 3)),
    )
    plan = solve_checked("cpsat", snap, [js], OPTIONS)
    assert plan.solver.status == "FALLBACK"
    assert plan.solver.notes[0] == "CP-SAT raised an exception building or solving the model"
    assert plan.solver.notes[1].startswith("CP-SAT raised ")
    assert plan.jobsets[0].status == "placed"  # the greedy plan, checked


def _honest(plan: Plan) -> None:
    s = plan.solver
    if s.status == "OPTIMAL":
        assert s.bound == s.objective and s.gap == 0
    if s.bound is None:
        assert s.gap is None and s.status != "OPTIMAL"
    elif s.status != "FALLBACK":
        assert s.bound >= s.objective
        assert s.gap == relative_gap(s.objective, s.bound)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_reports_claim_only_what_was_proven(
    scenario: tuple[ClusterSnapshot, list[JobSetRequest]],
) -> None:
    snapshot, jobsets = scenario
    for limit in (0.02, 2.0):
        options = SolveOptions(time_limit_s=limit, workers=2, seed=0)
        _honest(solve_checked("cpsat", snapshot, jobsets, options))


@pytest.mark.parametrize(
    "objective, bound, gap",
    [
        pytest.param(8, 16, 0.5, id="half"),
        pytest.param(16, 16, 0.0, id="proven"),
        pytest.param(0, 0, 0.0, id="empty"),
        pytest.param(8, None, None, id="unknown"),
        pytest.param(20, 16, None, id="bound-below-a-fallback"),
    ],
)
def test_relative_gap(objective: float, bound: float | None, gap: float | None) -> None:
    assert relative_gap(objective, bound) == gap
