"""Domains named under other levels than this round's still mean the same nodes.

Levels come from the queue's keys, coarse to fine. With blocks of one node pool each, a queue
using both keys names pool `B0/p0`, one using only pools names it `p0`; and until ties went by
key name, the inner solve (JobSets starting now first) could name it `p0` where the reservation
units named `B0/p0`. Found by a property test: a JobSet started now on a pool ahead of its
block's reservation was not marked backfill, since the annotator looked the pool up by the
other name.
"""

from __future__ import annotations

import pytest

from placer.model.cluster import ClusterSnapshot, DomainReservation
from placer.model.options import ScheduleMode, SolveOptions
from placer.model.workload import JobSetRequest
from tests.solver.time.test_schedule import H, _plan, _starts
from tests.solver.time.test_schedule_overlap import _blocks, _per_block, _per_pool
from tests.strategies import BLOCK, NODEPOOL, jobset, rjob, solve_checked


def test_a_short_pool_jobset_ahead_of_its_blocks_reservation_is_backfill() -> None:
    """Block B0 is pool p0. The 1 h block JobSet came first, yet the schedule starts the
    15-minute pool one now (it ends as the block's reservation begins): that is backfill."""
    snap = _blocks({"B0": ["p0"]}, {})
    queue = [_per_block("block", 1, 1), _per_pool("pool", 0.25, 0)]
    plan = _plan(snap, queue, "cpsat")  # runs the checker
    assert _starts(plan) == {"block": 0.25 * H, "pool": 0}
    outcome = {o.key.split("/")[1]: o for o in plan.jobsets}
    assert outcome["pool"].backfill
    assert [d.value for d in outcome["block"].reserved_domains] == ["B0"]


def _queue(pool_first: bool) -> list[JobSetRequest]:
    """A pool JobSet, and a block JobSet wanting three blocks of two (never placed, but its
    key is in use: the two keys tie, and the queue's order says which level is coarser)."""
    pool_js = jobset("pool", rjob(replicas=1, exclusive=NODEPOOL))
    block_js = jobset("block", rjob(replicas=3, exclusive=BLOCK))
    return [pool_js, block_js] if pool_first else [block_js, pool_js]


@pytest.mark.parametrize("pool_first", [True, False])
@pytest.mark.parametrize(
    "path", [((NODEPOOL, "p0"),), ((BLOCK, "B0"), (NODEPOOL, "p0"))], ids=["alone", "in-block"]
)
def test_a_reservation_under_either_name_keeps_its_pool_from_a_longer_jobset(
    pool_first: bool, path: tuple[tuple[str, str], ...]
) -> None:
    """Another JobSet holds pool p0 from 1 h on, written either way; the pool JobSet, which
    states no run time (the default, `DEFAULT_DURATION_S`, runs past 1 h), goes to p1."""
    snap: ClusterSnapshot = _blocks({"B0": ["p0"], "B1": ["p1"]}, {})
    held = DomainReservation(jobset="ns/other", key=NODEPOOL, path=path, start_s=H, end_s=3 * H)
    snap = snap.model_copy(update={"reservations": (held,)})
    plan = solve_checked("best-fit", snap, _queue(pool_first), SolveOptions(workers=1, seed=0))
    placed = {o.key.split("/")[1]: o for o in plan.jobsets if o.status == "placed"}
    assert set(placed) == {"pool"}
    assert [j.domain.value for j in placed["pool"].jobs if j.domain] == ["p1"]


@pytest.mark.parametrize("schedule", ["greedy", "cpsat"])
def test_an_earlier_rounds_reservation_under_the_other_name_is_kept(
    schedule: ScheduleMode,
) -> None:
    """Pools p0 and p1 (one per block) both run for another hour. The waiting pool JobSet was
    reserved p1 last round, by a queue that named it `p1` alone; this queue names it `B1/p1`.
    It keeps p1, though p0 comes first and frees as early."""
    snap = _blocks({"B0": ["p0"], "B1": ["p1"]}, {"p0": 1, "p1": 1})
    earlier = DomainReservation(
        jobset="team-a/pool", key=NODEPOOL, path=((NODEPOOL, "p1"),), start_s=H, end_s=3 * H
    )
    snap = snap.model_copy(update={"reservations": (earlier,)})
    queue = [_per_pool("pool", 2, 1), _per_block("blocks", 1, 2)]
    queue[1] = queue[1].model_copy(update={"replicated_jobs": (rjob(replicas=3, exclusive=BLOCK),)})
    plan = _plan(snap, queue, schedule)
    pool = next(o for o in plan.jobsets if o.name == "pool")
    assert pool.expected_start_seconds == H
    assert [(d.value, d.path[0][1]) for d in pool.reserved_domains] == [("p1", "B1")]
