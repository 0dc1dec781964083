"""Kueue packing as a term of the CP-SAT model: preferred topology and the fewest racks, jointly.

Kueue places one PodSet at a time, so a JobSet earlier in the queue can take the one rack a
later preferred-topology JobSet needed whole. cpsat chooses every JobSet's racks together: the
cases below are built so that the order Kueue (and a materialization in queue order) would use
leaves the preferred JobSet split, while a joint choice fits it in one rack, or in the fewest.
Every host has room for one pod (cpu 1), so racks are counted in hosts.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

from placer.model.cluster import ClusterSnapshot
from placer.model.options import SolveOptions
from placer.model.plan import Plan
from placer.model.workload import JobSetRequest
from tests.kueue_tas.cases import BLOCK, RACK, THREE, hosts, rack_hosts
from tests.kueue_tas.test_kueue_cases import queue_of
from tests.strategies import BLOCK as BLOCK_KEY
from tests.strategies import SUBBLOCK, kueue_clusters, kueue_jobsets, solve_checked

OPTIONS = SolveOptions(levels=THREE, workers=1, time_limit_s=10)


def _racks(plan: Plan, snapshot: ClusterSnapshot, name: str) -> set[tuple[str, str]]:
    nodes = snapshot.by_name()
    outcome = next(o for o in plan.jobsets if o.name == name)
    assert outcome.status == "placed", outcome.reason
    return {
        (nodes[p.node].labels[BLOCK], nodes[p.node].labels[RACK])
        for j in outcome.jobs
        for p in j.pods
    }


def test_a_preferred_jobset_gets_the_one_rack_that_holds_it() -> None:
    """Block b1: r1 (4 hosts), r2 (3), r3 (2). First in the queue, `wide` needs 5 pods in one
    block; then `pref` prefers one rack for 4 pods. Kueue gives `wide` r1 whole plus one host of
    r3, so `pref` is split over r2 and r3; cpsat puts `wide` on r2 and r3 and `pref` on r1."""
    nodes = hosts(
        *rack_hosts("b1", "r1", 4), *rack_hosts("b1", "r2", 3), *rack_hosts("b1", "r3", 2)
    )
    snapshot = ClusterSnapshot(nodes=nodes)
    queue = queue_of(nodes, ("wide", 5, {"required": BLOCK}), ("pref", 4, {"preferred": RACK}))

    kueue = solve_checked("best-fit", snapshot, queue, OPTIONS)
    assert len(_racks(kueue, snapshot, "pref")) == 2  # what this case is about

    plan = solve_checked("cpsat", snapshot, queue, OPTIONS)
    assert plan.solver.status == "OPTIMAL"
    assert _racks(plan, snapshot, "pref") == {("b1", "r1")}
    assert _racks(plan, snapshot, "wide") == {("b1", "r2"), ("b1", "r3")}


def test_a_preferred_jobset_no_rack_holds_gets_the_fewest_racks() -> None:
    """Block b1: r1 and r2 (3 hosts each), r3 and r4 (2 each). `wide` (first) needs 4 pods in one
    block, `pref` prefers one rack for 6 pods: no rack holds 6, two can. Kueue gives `wide` r1
    and one host of r3, leaving `pref` three racks; cpsat keeps r1 and r2 for `pref`."""
    nodes = hosts(
        *rack_hosts("b1", "r1", 3),
        *rack_hosts("b1", "r2", 3),
        *rack_hosts("b1", "r3", 2),
        *rack_hosts("b1", "r4", 2),
    )
    snapshot = ClusterSnapshot(nodes=nodes)
    queue = queue_of(nodes, ("wide", 4, {"required": BLOCK}), ("pref", 6, {"preferred": RACK}))

    kueue = solve_checked("best-fit", snapshot, queue, OPTIONS)
    assert len(_racks(kueue, snapshot, "pref")) == 3

    plan = solve_checked("cpsat", snapshot, queue, OPTIONS)
    assert plan.solver.status == "OPTIMAL"
    assert _racks(plan, snapshot, "pref") == {("b1", "r1"), ("b1", "r2")}
    assert len(_racks(plan, snapshot, "wide")) == 2


def test_a_preferred_jobset_stays_in_one_block_before_counting_racks() -> None:
    """Kueue walks up one level at a time: with no rack holding 4 pods, one block with three racks
    (b1: 2 + 1 + 1 hosts) beats two blocks with two racks (b2 and b3: 2 hosts each)."""
    nodes = hosts(
        *rack_hosts("b1", "r1", 2),
        *rack_hosts("b1", "r2", 1),
        *rack_hosts("b1", "r3", 1),
        *rack_hosts("b2", "r4", 2),
        *rack_hosts("b3", "r5", 2),
    )
    snapshot = ClusterSnapshot(nodes=nodes)
    queue = queue_of(nodes, ("pref", 4, {"preferred": RACK}))
    plan = solve_checked("cpsat", snapshot, queue, OPTIONS)
    assert _racks(plan, snapshot, "pref") == {("b1", "r1"), ("b1", "r2"), ("b1", "r3")}


def _spans(plan: Plan, snapshot: ClusterSnapshot) -> tuple[int, int]:
    """(blocks, racks) the plan's one JobSet spans."""
    nodes = snapshot.by_name()
    used = [nodes[p.node] for j in plan.jobsets[0].jobs for p in j.pods]
    return len({n.labels[BLOCK_KEY] for n in used}), len(
        {(n.labels[BLOCK_KEY], n.labels[SUBBLOCK]) for n in used}
    )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(snapshot=kueue_clusters(), js=kueue_jobsets())
def test_cpsat_spans_no_more_racks_than_kueue_for_one_jobset(
    snapshot: ClusterSnapshot, js: JobSetRequest
) -> None:
    """One shared JobSet at a time, Kueue's own setting: wherever best-fit (Kueue's BestFit)
    places it, cpsat places it too, on no more blocks and no more racks."""
    options = SolveOptions(workers=1, time_limit_s=10)
    kueue = solve_checked("best-fit", snapshot, [js], options)
    plan = solve_checked("cpsat", snapshot, [js], options)
    if kueue.jobsets[0].status != "placed":
        return
    assert plan.jobsets[0].status == "placed"
    kueue_blocks, kueue_racks = _spans(kueue, snapshot)
    blocks, racks = _spans(plan, snapshot)
    assert blocks <= kueue_blocks
    assert racks <= kueue_racks
