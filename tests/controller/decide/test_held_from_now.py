"""Nodes a recorded placement holds are closed to the pods without an exclusive key of every
other JobSet, in the snapshot the planner is given (`planning.held_from_now`), as the ledger
closes them to every new record (`planning._overlap`).

Before, the planner put such a pod there, the record was refused, and the next cycle made the
same plan: the JobSet never started (tests/cluster/test_gate_binding.py shows it on the real
control plane).
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from placer.controller.decide.observe.domains import reserve
from placer.controller.decide.plan.planning import held_from_now
from placer.model.cluster import ClusterSnapshot, RunningJobSet
from placer.model.options import SolveOptions, TimePolicy
from placer.model.plan import Plan
from placer.model.workload import JobSetRequest
from placer.solver.check.checker import check
from placer.solver.registry import get_solver
from tests.solver.time.test_timeaware import NOW, H, _timed
from tests.strategies import cluster, jobset, node, resources, rjob

TOKEN = "placer:team-a/one-coord-0"
PLAIN = SolveOptions(workers=1, seed=1)
TIMED = SolveOptions(workers=1, seed=1, time=TimePolicy(now=NOW, reservations="all"))
SOLVERS = ["cpsat", "best-fit", "first-fit"]


def _fleet(cpu_1_free: bool) -> ClusterSnapshot:
    """cpu-0 holds `one`'s coordinator (one core of eight, Running for an hour of its two);
    cpu-1 is free, or full with a JobSet of its own."""
    free = None if cpu_1_free else resources(cpu=0, pods=100)
    return cluster(
        node("cpu-0", tpu=0, cpu=8, free=resources(cpu=7, pods=109), jobsets=["team-a/one"]),
        node("cpu-1", tpu=0, cpu=8, free=free, jobsets=[] if cpu_1_free else ["ns/full"]),
    )


def _plan(solver: str, cpu_1_free: bool, options: SolveOptions) -> tuple[Plan, JobSetRequest]:
    held = {"cpu-0": [TOKEN]}
    snap = reserve(_fleet(cpu_1_free), held)
    running = {
        key: RunningJobSet(started_at=NOW - timedelta(hours=1), expected_duration_s=2 * H)
        for key in (TOKEN, "team-a/one", "ns/full")
    }
    two = _timed(jobset("two", rjob("main", pods_per_job=1, exclusive=None, tpu=0, cpu=1)), 3, 1)
    shapes = [two.replicated_jobs[0].pod]
    snap = held_from_now(snap.model_copy(update={"running": running}), held, options, shapes)
    plan = get_solver(solver, time_policy=options.time).solve(snap, [two], options)
    assert check(plan, snap, [two], options) == []
    return plan, two


@pytest.mark.parametrize("solver", SOLVERS)
def test_a_pod_without_an_exclusive_key_goes_beside_the_held_node(solver: str) -> None:
    plan, _ = _plan(solver, cpu_1_free=True, options=PLAIN)
    two = plan.outcome("team-a/two")
    assert [p.node for j in two.jobs for p in j.pods] == ["cpu-1"]


@pytest.mark.parametrize("solver", SOLVERS)
def test_with_no_other_room_it_waits_and_says_the_node_is_held(solver: str) -> None:
    plan, _ = _plan(solver, cpu_1_free=False, options=PLAIN)
    two = plan.outcome("team-a/two")
    assert two.status == "unschedulable"
    assert f"1 held by running {TOKEN}" in two.reason, two.reason


@pytest.mark.parametrize("solver", ["cpsat", "best-fit"])
def test_over_time_it_starts_when_the_hold_ends(solver: str) -> None:
    """Both nodes busy for another hour: `two` is expected to start then, on either."""
    plan, _ = _plan(solver, cpu_1_free=False, options=TIMED)
    two = plan.outcome("team-a/two")
    assert (two.status, two.expected_start_seconds) == ("unschedulable", 1 * H)


def test_a_held_node_without_room_for_such_a_pod_needs_no_reservation() -> None:
    """cpu-0 has seven cores free: a one-core pod's shape gets it reserved, an eight-core
    one's does not (no such pod goes there now anyway); no hold, no change."""
    snap = _fleet(cpu_1_free=True)
    held = {"cpu-0": [TOKEN]}
    one, eight = (rjob("main", exclusive=None, tpu=0, cpu=c).pod for c in (1, 8))
    assert [r.path for r in held_from_now(snap, held, PLAIN, [one]).reservations] == [
        (("placer.dev/node", "cpu-0"),)
    ]
    assert held_from_now(snap, held, PLAIN, [eight]) is snap
    assert held_from_now(snap, {}, PLAIN, [one]) is snap
