"""A JobSet's counts for its pods without an exclusive key, as `diagnose` makes them (the
outsider's view per pod shape, the nodes the JobSet sees otherwise judged once per kind of node:
`NodeClassifier.judged_as`), must be what judging every node for that JobSet one by one counts
(`Classifier.verdicts`), beside a time-aware plan whose reservations close nodes to some JobSets
and not to others."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from placer.model.cluster import ClusterSnapshot, DomainReservation
from placer.model.options import SolveOptions, TimePolicy
from placer.model.workload import JobSetRequest
from placer.solver.context import PlacementContext
from placer.solver.reasons import Classifier, occupancy_from_plan
from placer.solver.reasons.occupancy import Occupancy
from placer.solver.reasons.tally import Tallies
from placer.solver.registry import get_solver
from placer.solver.time.timeaware import planned_on
from tests.solver.time.test_timeaware import NOW, H
from tests.strategies import BLOCK, NODEPOOL, cluster, jobset, pool, rjob, scenarios

ALL = SolveOptions(workers=1, time=TimePolicy(now=NOW, reservations="all"))


def _with_durations(queue: list[JobSetRequest], hours: list[int]) -> list[JobSetRequest]:
    """Each JobSet its own expected run, so a reservation closes its nodes to some only."""
    return [
        js.model_copy(update={"expected_duration_s": h * 3600.0})
        for js, h in zip(queue, hours * len(queue), strict=False)
    ]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario=scenarios(), hours=st.lists(st.integers(1, 12), min_size=1, max_size=5))
def test_the_counts_of_pods_without_a_key_are_the_node_by_node_verdicts(
    scenario: tuple[ClusterSnapshot, list[JobSetRequest]], hours: list[int]
) -> None:
    snapshot, queue = scenario
    queue = _with_durations(queue, hours)
    plan = get_solver("best-fit", time_policy=ALL.time).solve(snapshot, queue, ALL)
    ctx = PlacementContext(planned_on(snapshot, plan, queue, ALL), queue, ALL)
    occupancy = occupancy_from_plan(ctx, plan)
    classifier = Classifier(ctx, occupancy)
    for js in ctx.jobsets:
        if plan.outcome(js.key).status == "placed":
            continue
        diagnosed = {d.name: d for d in classifier.diagnose(js)}
        for jc in ctx.classes_of(js):
            if jc.exclusive_key or jc.rjob.name not in diagnosed:
                continue
            one_by_one = Tallies()
            for v in Classifier(ctx, occupancy).verdicts(jc):
                one_by_one.add(v)
            assert diagnosed[jc.rjob.name].tallies == one_by_one.sorted()


def test_nodes_alike_but_for_the_reservations_that_close_them_are_told_apart() -> None:
    """Two hosts alike, each in a block reserved from 3 h (for wide-0, wide-1); pool-0's also
    for narrow from 1 h. A 2-hour JobSet of pods without a key ends before 3 h but not before
    1 h: pool-0 is closed to it by narrow, pool-1 open. Judging one host and reusing its verdict
    for the other would count both alike."""

    def reserved(jobset: str, key: str, value: str, start_h: float) -> DomainReservation:
        path = ((key, value),)
        return DomainReservation(
            jobset=jobset, key=key, path=path, start_s=start_h * H, end_s=(start_h + 2) * H
        )

    reservations = (
        reserved("team-a/wide-0", BLOCK, "b0", 3),
        reserved("team-a/wide-1", BLOCK, "b1", 3),
        reserved("team-a/narrow", NODEPOOL, "pool-0", 1),
    )
    snapshot = cluster(
        pool("pool-0", 1, block="b0", taints=[]), pool("pool-1", 1, block="b1", taints=[])
    ).model_copy(update={"reservations": reservations})
    shared = jobset("shared", rjob(pods_per_job=1, exclusive=None)).model_copy(
        update={"expected_duration_s": 2 * H}
    )
    queue = [
        jobset("wide-0", rjob(exclusive=BLOCK)),
        jobset("wide-1", rjob(exclusive=BLOCK)),
        jobset("narrow", rjob()),
        shared,
    ]
    ctx = PlacementContext(snapshot, queue, ALL)
    me = next(js for js in ctx.jobsets if js.name == "shared")
    (diagnosis,) = Classifier(ctx, Occupancy()).diagnose(me)
    assert (diagnosis.available, diagnosis.nodes_with_room) == (1, 1)
    (tally,) = diagnosis.tallies
    assert (tally.reason.kind, tally.count, tally.jobsets) == (
        "reserved-later",
        1,
        ("team-a/narrow",),
    )
    one_by_one = Tallies()
    for v in Classifier(ctx, Occupancy()).verdicts(ctx.classes_of(me)[0]):
        one_by_one.add(v)
    assert diagnosis.tallies == one_by_one.sorted()


def _two_hosts(reserved_for: str, *later: tuple[str, float]) -> ClusterSnapshot:
    """pool-0 and pool-1, one host each; pool-0 reserved for `reserved_for` from 2 h to 4 h,
    and for each of `later` (JobSet, start in hours) for an hour from then."""

    def reserved(jobset: str, start_h: float, end_h: float) -> DomainReservation:
        path = ((NODEPOOL, "pool-0"),)
        return DomainReservation(
            jobset=jobset, key=NODEPOOL, path=path, start_s=start_h * H, end_s=end_h * H
        )

    reservations = (reserved(reserved_for, 2, 4), *(reserved(k, h, h + 1) for k, h in later))
    snapshot = cluster(pool("pool-0", 1, taints=[]), pool("pool-1", 1, taints=[]))
    return snapshot.model_copy(update={"reservations": reservations})


def _without_key(name: str, hours: float) -> JobSetRequest:
    js = jobset(name, rjob(pods_per_job=1, exclusive=None))
    return js.model_copy(update={"expected_duration_s": hours * H})


def _available(
    snapshot: ClusterSnapshot, queue: list[JobSetRequest], order: list[str]
) -> dict[str, int]:
    """Each named JobSet's available pods, diagnosed in `order` by one classifier, each checked
    against judging its nodes one by one."""
    ctx = PlacementContext(snapshot, queue, ALL)
    classifier = Classifier(ctx, Occupancy())
    found = {}
    for name in order:
        me = next(js for js in ctx.jobsets if js.name == name)
        (diagnosis,) = classifier.diagnose(me)
        one_by_one = Tallies()
        for v in Classifier(ctx, Occupancy()).verdicts(ctx.classes_of(me)[0]):
            one_by_one.add(v)
        assert diagnosis.tallies == one_by_one.sorted()
        found[name] = diagnosis.available
    return found


def test_jobsets_of_one_shape_and_other_runs_are_counted_apart() -> None:
    """A 1-hour run ends before the reservation of pool-0 at 2 h, a 5-hour one does not: counted
    once for both, the second diagnosed would be told the first's."""
    queue = [jobset("excl", rjob()), _without_key("short", 1), _without_key("long", 5)]
    snapshot = _two_hosts("team-a/excl")
    for order in (["short", "long"], ["long", "short"]):
        assert _available(snapshot, queue, order) == {"short": 2, "long": 1}


def test_a_jobset_holding_a_reservation_is_not_counted_as_one_that_holds_none() -> None:
    """pool-0 is reserved for `mine`, so it stays open to `mine`'s pods and closed to `other`'s,
    though both have one pod shape and one run."""
    queue = [jobset("excl", rjob()), _without_key("mine", 5), _without_key("other", 5)]
    snapshot = _two_hosts("team-a/mine")
    for order in (["mine", "other"], ["other", "mine"]):
        assert _available(snapshot, queue, order) == {"mine": 2, "other": 1}


def test_a_holders_own_node_is_judged_again_beside_what_one_holding_nothing_sees() -> None:
    """pool-0 is reserved for `mine` from 2 h and for `late` from 6 h. A 5-hour JobSet holding
    nothing ends before 6 h, so `late` leaves pool-0 open to it and `mine` closes it; to `mine`
    it is open. `mine` is counted as one holding nothing with its own node judged again: that
    node's verdict for one holding nothing (closed by `mine`, not the outsider's closed by
    both) is what is replaced, and judged as a JobSet no reservation names, not as `mine`."""
    queue = [
        jobset("excl", rjob()),
        _without_key("mine", 5),
        _without_key("other", 5),
        _without_key("late", 1),
    ]
    snapshot = _two_hosts("team-a/mine", ("team-a/late", 6))
    for order in (["mine", "other"], ["other", "mine"]):
        assert _available(snapshot, queue, order) == {"mine": 2, "other": 1}
