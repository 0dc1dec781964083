"""Pods without an exclusive key keep to reservations as child Jobs do: a JobSet may run them in a
domain reserved for another JobSet's later start only if it is expected to end by then.

Before, such pods ignored reservations: a 5-hour JobSet of shared pods was placed on a pool
reserved for a wide JobSet from 2 h, and the wide JobSet's start could not hold; the checker
had no rule for it.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from placer.model.options import SolveOptions, TimePolicy
from placer.model.plan import Plan
from placer.model.workload import JobSetRequest
from placer.solver.check.checker import check
from placer.solver.registry import get_solver
from tests.solver.time.test_timeaware import NOW, H, _fleet, _queue
from tests.strategies import jobset, rjob

HEAD = SolveOptions(workers=1, time=TimePolicy(now=NOW, reservations="head"))


def _shared(name: str, hours: float) -> JobSetRequest:
    """Two pods of four chips, no exclusive key, expected to run `hours`."""
    return jobset(name, rjob(replicas=1, pods_per_job=2, exclusive=None)).model_copy(
        update={
            "expected_duration_s": hours * H,
            "duration_source": "annotation",
            "creation_timestamp": NOW - timedelta(minutes=1),
        }
    )


def _plan(solver: str, queue: list[JobSetRequest]) -> Plan:
    # `_fleet`: pool-0 and pool-1 busy until 1 h and 2 h, pool-2 and pool-3 free; `_queue`'s
    # wide JobSet is reserved on all four pools from 2 h, its short one backfills on pool-2
    snap = _fleet()
    plan = get_solver(solver, time_policy=HEAD.time).solve(snap, queue, HEAD)
    assert check(plan, snap, queue, HEAD) == []
    # CP-SAT's model keeps them off too: its solution packs, no fallback to the greedy plan
    assert plan.solver.status == ("OPTIMAL" if solver == "cpsat" else "HEURISTIC")
    wide = plan.outcome("team-a/wide")
    assert (wide.expected_start_seconds, len(wide.reserved_domains)) == (2 * H, 4)
    return plan


@pytest.mark.parametrize("solver", ["cpsat", "best-fit"])
def test_a_run_past_the_reservation_stays_off_its_nodes(solver: str) -> None:
    plan = _plan(solver, [*_queue(), _shared("long-shared", 5)])
    o = plan.outcome("team-a/long-shared")
    assert o.status == "unschedulable"
    assert o.reason.endswith(
        "fits 0 on 0 of 8 nodes; excluded: 8 reserved for the later start of team-a/wide"
    )


@pytest.mark.parametrize("solver", ["cpsat", "best-fit"])
def test_a_run_ending_before_the_reservation_backfills_on_its_nodes(solver: str) -> None:
    plan = _plan(solver, [*_queue(), _shared("quick", 1)])
    o = plan.outcome("team-a/quick")
    assert (o.status, o.backfill) == ("placed", True)
    nodes = {p.node for j in o.jobs for p in j.pods}
    assert nodes <= {f"pool-{k}-host-{h}" for k in (2, 3) for h in (0, 1)}


def test_the_checker_refuses_pods_without_an_exclusive_key_running_into_a_reservation() -> None:
    quick = _shared("quick", 1)
    plan = _plan("best-fit", [*_queue(), quick])
    [pool] = {
        p.node.rsplit("-host-", 1)[0] for j in plan.outcome("team-a/quick").jobs for p in j.pods
    }
    # the same plan, judged against a JobSet expected to run 5 h: it now runs into the
    # reservation that starts at 2 h
    longer = quick.model_copy(update={"expected_duration_s": 5 * H})
    found = check(plan, _fleet(), [*_queue(), longer], HEAD)
    assert (
        f"team-a/quick: quick-workers-0 runs 18000 s on {pool}-host-0, a node of "
        f"cloud.google.com/gke-nodepool={pool}, reserved for team-a/wide from 7200 s"
    ) in found
