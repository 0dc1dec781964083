"""A JobSet that never fits says why from the cluster it was judged on, not from this round's.

On a busy cluster every domain a JobSet could take is "held by a running JobSet" first (the rule
order); for a JobSet with no expected start even once those runs end, that reads as "wait" while
the rule ruling it out for good (a nodeSelector no pool matches, too few domains) goes unsaid.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from placer.model.cluster import ClusterSnapshot
from placer.model.options import SolveOptions, TimePolicy
from placer.model.plan import Plan
from placer.model.scheduling import Taint
from placer.model.workload import JobSetRequest
from placer.solver.check.checker import check
from placer.solver.greedy.baselines import BestFitSolver
from placer.solver.registry import get_solver, prepare_solver
from placer.solver.time.behind import expected_starts_behind
from placer.solver.time.never import NeverFitSolver
from placer.solver.time.timeaware import TimeAwareSolver
from tests.solver.time.test_timeaware import NOW, _fleet, _queue
from tests.strategies import TPU_TAINT, jobset, pool, rjob, scenarios

OPTIONS = SolveOptions(workers=1, time=TimePolicy(now=NOW, reservations="all"))
V6E = {"cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice"}


def _plan(snap: ClusterSnapshot, queue: list[JobSetRequest], solver: str) -> Plan:
    plan = TimeAwareSolver(get_solver(solver)).solve(snap, queue, OPTIONS)
    assert check(plan, snap, queue, OPTIONS) == []
    return plan


@pytest.mark.parametrize("solver", ["cpsat", "best-fit"])
def test_a_selector_no_pool_matches_is_named_not_the_running_jobsets(solver: str) -> None:
    # pool-0 and pool-1 are held by running JobSets; no pool has the v6e label
    queue = [*_queue(), jobset("v6e", rjob(replicas=2, node_selector=V6E))]
    plan = _plan(_fleet(), queue, solver)
    v6e = plan.outcome("team-a/v6e")
    assert (v6e.status, v6e.expected_start_seconds) == ("unschedulable", None)
    assert "4 not matching nodeSelector cloud.google.com/gke-tpu-accelerator=tpu-v6e-slice" in (
        v6e.reason
    )
    assert "held by running" not in v6e.reason
    # a JobSet that only waits keeps the round's reason, running holders named
    wide = plan.outcome("team-a/wide")
    assert wide.expected_start_seconds is not None
    assert "held by running ns/run-a" in wide.reason


def test_too_many_domains_counts_every_domain_as_available() -> None:
    queue = [jobset("huge", rjob(replicas=5))]
    huge = _plan(_fleet(), queue, "best-fit").outcome("team-a/huge")
    assert huge.expected_start_seconds is None
    # on the cluster once both runs end all four pools are free: five are needed
    assert huge.reason.startswith(
        "workers: needs 5 domains of cloud.google.com/gke-nodepool for 2 pods of "
    )
    assert huge.reason.endswith("; 4 available of 4")


def test_a_host_down_is_counted_back_as_the_pass_counts_it() -> None:
    """With a NotReady host the pass judges a JobSet last on the cluster with that host back,
    untainted (`Units.last_resort`): the reason is the one that holds there."""
    down = Taint(key="node.kubernetes.io/not-ready", effect="NoExecute")
    snap = _fleet()
    nodes = [n for n in snap.nodes if not n.name.startswith("pool-3")]
    nodes += pool("pool-3", 2, taints=(TPU_TAINT, down), ready=False)
    snap = snap.model_copy(update={"nodes": tuple(nodes)})
    huge = _plan(snap, [jobset("huge", rjob(replicas=5))], "best-fit").outcome("team-a/huge")
    assert huge.expected_start_seconds is None
    assert huge.reason.endswith("; 4 available of 4")


def test_a_jobset_behind_the_round_says_why_it_never_fits() -> None:
    """The estimate for a JobSet not planned this round (a Kueue Workload without quota)."""
    [v6e] = expected_starts_behind(
        _fleet(), [jobset("v6e", rjob(replicas=2, node_selector=V6E))], OPTIONS
    )
    assert v6e.expected_start_seconds is None
    assert "not matching nodeSelector" in v6e.reason


def test_too_small_says_what_runs_out_on_the_empty_cluster() -> None:
    """Pools of 2 hosts; a child Job of 3 pods of 4 chips needs 3 hosts."""
    queue = [jobset("big-slices", rjob(replicas=1, pods_per_job=3))]
    reason = _plan(_fleet(), queue, "best-fit").outcome("team-a/big-slices").reason
    assert "4 too small" in reason
    assert "held by running" not in reason


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_no_jobset_that_never_fits_is_told_it_waits_for_running_ones(
    scenario: tuple[ClusterSnapshot, list[JobSetRequest]],
) -> None:
    """Whatever runs: the reason of a JobSet with no expected start names no running JobSet and
    no JobSet of the plan, since it is counted where nothing runs and nothing is planned."""
    snap, queue = scenario
    plan = _plan(snap, queue, "best-fit")
    running = {k for n in snap.nodes for k in n.jobsets}
    for o in plan.jobsets:
        if o.status == "placed" or o.expected_start_seconds is not None:
            continue
        assert "held by" not in o.reason, o.reason
        assert "taken by" not in o.reason, o.reason
        assert not any(k in o.reason for k in running), o.reason


PLAIN = SolveOptions(workers=1)


@pytest.mark.parametrize("solver", ["cpsat", "best-fit"])
def test_without_time_aware_planning_the_rule_for_good_is_named_too(solver: str) -> None:
    """`placer plan` and the controller without time flags (`never_check`): the plan has no
    expected start to say a JobSet never fits, so its reason must."""
    snap = _fleet()
    queue = [*_queue(), jobset("v6e", rjob(replicas=2, node_selector=V6E))]
    plan = get_solver(solver, never_check=True).solve(snap, queue, PLAIN)
    assert check(plan, snap, queue, PLAIN) == []
    v6e = plan.outcome("team-a/v6e")
    assert v6e.status == "unschedulable"
    assert "4 not matching nodeSelector cloud.google.com/gke-tpu-accelerator=tpu-v6e-slice" in (
        v6e.reason
    )
    assert "held by running" not in v6e.reason
    assert "never" in plan.solver.phases
    # a JobSet that only waits keeps the round's reason, running holders named
    wide = plan.outcome("team-a/wide")
    assert wide.status == "unschedulable"
    assert "held by running ns/run-a" in wide.reason


def test_preparing_twice_checks_never_fitting_jobsets_once() -> None:
    """A prepared solver prepared again (the controller's stand-ins) is wrapped once; made
    time-aware, the time-aware pass says why instead (`annotate.Annotator`)."""
    once = prepare_solver(get_solver("best-fit"), never_check=True)
    twice = prepare_solver(once, never_check=True)
    assert isinstance(twice.inner, NeverFitSolver)
    assert isinstance(twice.inner.inner, BestFitSolver)
    timed = prepare_solver(twice, time_policy=OPTIONS.time, never_check=True)
    assert isinstance(timed.inner, TimeAwareSolver)
    assert isinstance(timed.inner.inner, BestFitSolver)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_plans_with_and_without_time_agree_on_who_never_fits_and_why(
    scenario: tuple[ClusterSnapshot, list[JobSetRequest]],
) -> None:
    """A JobSet left out of both a plain plan and a time-aware one: its plain reason is replaced
    exactly when the time-aware pass finds no expected start, and then by the same words."""
    snap, queue = scenario
    timed = _plan(snap, queue, "best-fit")
    bare = get_solver("best-fit").solve(snap, queue, PLAIN)
    plain = get_solver("best-fit", never_check=True).solve(snap, queue, PLAIN)
    assert check(plain, snap, queue, PLAIN) == []
    running = {k for n in snap.nodes for k in n.jobsets}
    for o in plain.jobsets:
        t = timed.outcome(o.key)
        if o.status != "unschedulable" or t.status != "unschedulable":
            continue
        if o.reason != bare.outcome(o.key).reason:
            assert (t.expected_start_seconds, t.reason) == (None, o.reason)
        if t.expected_start_seconds is None:
            assert o.reason == t.reason
            assert not any(k in o.reason for k in running), o.reason
