"""The replanner: a change asked twice plans once, and the budget stops the search with a note."""

from __future__ import annotations

from placer.model.options import SolveOptions
from placer.solver.explain.replanner import Replanner
from tests.strategies import cluster, jobset, pool, rjob, solve_checked

OPTIONS = SolveOptions(workers=1, time_limit_s=5)


def test_a_change_asked_twice_is_planned_once() -> None:
    snap = cluster(pool("p0", 2), pool("p1", 2))
    queue = [jobset("t", rjob(replicas=2))]
    rp = Replanner(snap, queue, OPTIONS, budget=5)
    first = rp.try_plan("team-a/t", memo=("same",))
    again = rp.try_plan("team-a/t", memo=("same",))
    checked = solve_checked("cpsat", snap, queue, OPTIONS).outcome("team-a/t")
    assert first is not None and first == list(checked.jobs)
    assert again == first
    assert rp.used == 1


def test_a_jobset_left_out_of_the_replan_is_none() -> None:
    snap = cluster(pool("p0", 2), pool("p1", 2))
    rp = Replanner(snap, [jobset("t", rjob(replicas=3))], OPTIONS)
    assert rp.try_plan("team-a/t") is None
    assert rp.used == 1


def test_the_spent_budget_stops_with_one_note() -> None:
    snap = cluster(pool("p0", 2))
    rp = Replanner(snap, [jobset("t", rjob())], OPTIONS, budget=1)
    assert rp.try_plan("team-a/t") is not None
    assert rp.try_plan("team-a/t") is None
    assert rp.try_plan("team-a/t", memo=("other",)) is None
    assert rp.used == 1
    assert rp.notes == ["remedy search stopped after 1 re-plans"]
