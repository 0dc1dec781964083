"""A domain reserved for another JobSet's later start is closed to a JobSet that would not end
before it, and its reason says so; one that would end in time sees the domain as any other.

Before the classifier knew reservations, a JobSet kept out only by one read "1 available of 8",
then "each replicated job fits alone, but not all together" though it had one replicated job.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from placer.model.options import SolveOptions, TimePolicy
from placer.model.workload import JobSetRequest
from placer.solver.check.checker import check
from placer.solver.explain import ExplainSettings, explain_jobset
from placer.solver.registry import get_solver
from placer.solver.time.timeaware import planned_on
from tests.solver.time.test_timeaware import NOW, H, _fleet, _plan, _queue
from tests.strategies import jobset, rjob

HEAD = SolveOptions(workers=1, time=TimePolicy(now=NOW, reservations="head"))
HELD = "1 held by running ns/run-a, 1 held by running ns/run-b"


@pytest.mark.parametrize("solver", ["cpsat", "best-fit"])
def test_a_run_too_long_for_the_gap_is_told_the_domains_are_reserved(solver: str) -> None:
    # wide holds pool-0..3 from 2 h (when both runs end); short (0.5 h) backfills on pool-2 or
    # pool-3; long (5 h) would not end by 2 h, so both free pools are closed to it
    long = _plan(solver, "head").outcome("team-a/long")
    assert long.expected_start_seconds == 3 * H
    assert long.reason.endswith(
        f"; 0 available of 4: {HELD}, 2 reserved for the later start of team-a/wide"
    )


def _second_short() -> JobSetRequest:
    """Half an hour on two pools: it ends before wide's reservation, so both free pools are
    open to it, and short (placed first in queue order) takes one of them."""
    return jobset("short2", rjob(replicas=2)).model_copy(
        update={
            "expected_duration_s": 0.5 * H,
            "duration_source": "annotation",
            "creation_timestamp": NOW - timedelta(minutes=5),
        }
    )


def test_a_run_that_ends_in_time_sees_the_reserved_domain_as_free() -> None:
    snap, queue = _fleet(), [*_queue(), _second_short()]
    plan = get_solver("best-fit", time_policy=HEAD.time).solve(snap, queue, HEAD)
    assert check(plan, snap, queue, HEAD) == []
    short2 = plan.outcome("team-a/short2")
    assert short2.status == "unschedulable"
    assert "reserved for the later start" not in short2.reason
    assert short2.reason.endswith(
        f"; 1 available of 4: {HELD}, 1 taken by same-priority JobSets in this plan (team-a/short)"
    )


def test_explain_counts_the_reservations_the_plan_had() -> None:
    snap, queue = _fleet(), _queue()
    settings = ExplainSettings(solver="best-fit", remedies=False)
    e = explain_jobset(snap, queue, "team-a/long", HEAD, settings=settings)
    [d] = e.replicated_jobs
    reserved = [r for r in d.reasons if r.kind == "reserved-later"]
    assert [(r.count, r.text, r.jobsets) for r in reserved] == [
        (2, "reserved for the later start of team-a/wide", ["team-a/wide"])
    ]
    assert (d.available, d.total) == (0, 4)
    # the snapshot it counted on holds the plan's reservation, and only the plan's
    assert e.plan is not None
    seen = planned_on(snap, e.plan, queue, HEAD)
    assert {(r.jobset, r.start_s) for r in seen.reservations} == {("team-a/wide", 2 * H)}
