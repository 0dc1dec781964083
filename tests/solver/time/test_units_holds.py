"""`Units.holds`: reservations named as a snapshot names them (another controller's, an
earlier round's, this plan's) as the reservation pass holds them, one method for the
reservation phase, the estimates after the solve and the estimates behind the head."""

from __future__ import annotations

from placer.model.cluster import DomainReservation
from placer.solver.registry import get_solver
from placer.solver.time.release import ReleaseTimeline
from placer.solver.time.units import Units
from tests.solver.time.test_shared_room import ALL
from tests.solver.time.test_timeaware import NOW, H
from tests.strategies import NODEPOOL, cluster, jobset, pool, rjob


def _reservation(domain: str, start_h: float, end_h: float) -> DomainReservation:
    return DomainReservation(
        jobset="other/js",
        key=NODEPOOL,
        path=((NODEPOOL, domain),),
        start_s=start_h * H,
        end_s=end_h * H,
    )


def test_a_reservation_is_held_over_its_run_and_one_of_a_gone_domain_holds_nothing() -> None:
    snap = cluster(pool("pool-0", 2), pool("pool-1", 2))
    queue = [jobset("a", rjob())]
    units = Units(snap, queue, ALL, ReleaseTimeline.of_policy(snap, ALL.time, NOW))
    holds = units.holds(
        [
            _reservation("pool-0", 1, 3),
            _reservation("pool-9", 0, 5),  # no such pool any more
            _reservation("pool-1", 2, 1),  # its end already passed its start: held at its start
        ]
    )
    pool0, pool1 = (
        units.unit_of(NODEPOOL, ((NODEPOOL, "pool-0"),)),
        units.unit_of(NODEPOOL, ((NODEPOOL, "pool-1"),)),
    )
    assert pool0 is not None and pool1 is not None
    assert holds == [(pool0, 1 * H, 3 * H), (pool1, 2 * H, 2 * H)]


def test_a_jobset_started_now_holds_its_domain_and_the_domains_of_its_shared_pods() -> None:
    """A child Job's domain, and the pool of each node a pod without an exclusive key runs on
    (it closes that pool to every exclusive child Job), both held until the JobSet's end."""
    snap = cluster(pool("pool-0", 2), pool("pool-1", 2), pool("pool-2", 2))
    queue = [
        jobset("a", rjob(), rjob("driver", pods_per_job=1, exclusive=None, tpu=1), order=0),
    ]
    plan = get_solver("best-fit").solve(snap, queue, ALL)
    (outcome,) = plan.jobsets
    assert outcome.status == "placed"
    units = Units(snap, queue, ALL, ReleaseTimeline.of_policy(snap, ALL.time, NOW))
    domain = next(j.domain for j in outcome.jobs if j.domain is not None)
    shared = next(p.node for j in outcome.jobs if j.domain is None for p in j.pods)
    expected = {units.unit_of(NODEPOOL, domain.path), *units.units_on(shared)}
    held = units.running(outcome, 5 * H)
    assert {u for u, _, _ in held} == expected and len(held) == len(expected)
    assert len(expected) == 2  # the driver's pool is not the child Job's
    assert {(start, end) for _, start, end in held} == {(0.0, 5 * H)}
