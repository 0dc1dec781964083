"""Rules of the classifier that no reason test had reached (found by mutating its lines).

Each case is built so that the rule decides the words: two domains that offer a shape the same
but differ in what is allocatable (one in use, one too small), a node whose limiting resource
changes once the plan's pods are on it, a podset group whose leader fits nowhere alone, and the
room beside a group's leader (its pod slot, the plan's pods, nodes the workers may not use).
"""

from __future__ import annotations

from placer.model.cluster import ClusterSnapshot, Node
from placer.model.options import SolveOptions
from placer.model.workload import JobSetRequest
from placer.solver.context import PlacementContext
from placer.solver.reasons import Classifier, Occupancy, RjobDiagnosis, diagnose, jobset_reason
from placer.solver.registry import get_solver
from tests.kueue_tas.cases import HOST, RACK, res_node
from tests.kueue_tas.test_groups import OPTIONS as GROUP_OPTIONS
from tests.kueue_tas.test_groups import leader_and_workers
from tests.strategies import NODEPOOL, cluster, jobset, node, pool, resources, rjob, solve_checked


def test_domains_alike_but_for_what_is_allocatable_get_their_own_reasons() -> None:
    """Both pools have 2 chips free per host, so they offer a 4-chip pod the same; one has 4
    chips allocatable (2 in use), the other only 2 (short). The classifier judges a kind of
    domain once, so what is allocatable must be part of the kind."""
    two_free = resources(cpu=32, pods=110, tpu=2)
    snap = cluster(pool("used", 2, free=two_free), pool("small", 2, tpu=2))
    plan = solve_checked("best-fit", snap, [jobset("a", rjob())])
    [outcome] = plan.jobsets
    assert outcome.reason == (
        f"workers: needs 1 domain of {NODEPOOL} for 2 pods of {{google.com/tpu: 4}}; "
        "0 available of 2: 1 too small: fits 0 of 2 pods (2 hosts with google.com/tpu in use), "
        "1 too small: fits 0 of 2 pods (2 hosts, short of google.com/tpu)"
    )


def test_no_room_names_the_resource_the_plans_pods_used_up() -> None:
    """Alone, the node fits two 4-CPU pods (CPU is what caps it); the plan's pods on it leave
    4 of 64 GiB of memory, so memory is what leaves no room for one pod."""
    snap = cluster(node("cpu-0", tpu=0, cpu=8, free=resources(cpu=8, pods=110, memory=64 * 2**30)))
    web = jobset("web", rjob(pods_per_job=1, exclusive=None, tpu=0, cpu=4, memory=8 * 2**30))
    ctx = PlacementContext(snap, [web], SolveOptions())
    planned = Occupancy(
        shared={"cpu-0": frozenset({"team-b/z"})},
        pods={"cpu-0": ({"memory": resources(memory=60 * 2**30)["memory"]},)},
    )
    assert jobset_reason(diagnose(ctx, web, planned)) == (
        "workers: needs 1 pod of {cpu: 4, memory: 8Gi}; fits 0 on 0 of 1 node; excluded: "
        "1 no room for one pod (memory)"
    )


def test_a_group_whose_leader_fits_nowhere_is_not_blamed_on_the_group() -> None:
    """The leader's nodeSelector matches no node; the workers fit alone. The leader's own
    shortfall is the reason: the group rule (members that each fit alone but not together)
    does not apply, and would wrongly say the workers do not fit beside the leader."""
    snapshot = ClusterSnapshot(
        nodes=tuple(
            res_node(f"h{i}", {RACK: "r1", HOST: f"h{i}"}, cpu="4", pods="10") for i in range(2)
        )
    )
    js = leader_and_workers(2, selector={"role": "head"})
    ctx = PlacementContext(snapshot, [js], GROUP_OPTIONS)
    leader, workers = Classifier(ctx).diagnose(js)
    assert not leader.fits and workers.fits and workers.group is None
    plan = get_solver("best-fit").solve(snapshot, [js], GROUP_OPTIONS)
    reason = plan.jobsets[0].reason or ""
    assert "nodeSelector role=head" in reason and "podset group" not in reason


def _rack_of(*nodes: Node) -> ClusterSnapshot:
    return ClusterSnapshot(nodes=nodes)


def _workers(
    snapshot: ClusterSnapshot, js: JobSetRequest, planned: Occupancy | None = None
) -> RjobDiagnosis:
    ctx = PlacementContext(snapshot, [js], GROUP_OPTIONS)
    leader, workers = Classifier(ctx, planned).diagnose(js)
    assert leader.fits
    return workers


def test_the_leader_takes_a_pod_slot_beside_the_workers() -> None:
    """One host with two pod slots holds the leader or both workers, not all three."""
    host = res_node("h1", {RACK: "r1", HOST: "h1"}, cpu="10", pods="2")
    workers = _workers(_rack_of(host), leader_and_workers(2, worker_cpu="1"))
    assert workers.group is not None and workers.group.most == 1 and not workers.fits


def test_the_leader_is_counted_beside_the_plans_pods() -> None:
    """Four CPUs, one taken by the plan's pods: three workers of one CPU fit alone, two beside
    the leader."""
    host = res_node("h1", {RACK: "r1", HOST: "h1"}, cpu="4", pods="10")
    planned = Occupancy(
        shared={"h1": frozenset({"team-b/z"})}, pods={"h1": (resources(cpu=1, pods=1),)}
    )
    workers = _workers(_rack_of(host), leader_and_workers(3, worker_cpu="1"), planned)
    assert workers.group is not None and workers.group.most == 2 and not workers.fits


def test_room_beside_the_leader_counts_only_nodes_the_workers_may_use() -> None:
    """The leader fits only on h1, which has no room besides; h2 in its rack has room but is
    cordoned; h3, in another rack, holds the workers alone. No rack holds the group."""
    head = res_node("h1", {RACK: "r1", HOST: "h1", "role": "head"}, cpu="1", pods="10")
    cordoned = res_node("h2", {RACK: "r1", HOST: "h2"}, cpu="8", pods="10")
    other = res_node("h3", {RACK: "r2", HOST: "h3"}, cpu="8", pods="10")
    snapshot = _rack_of(head, cordoned.model_copy(update={"unschedulable": True}), other)
    workers = _workers(snapshot, leader_and_workers(2, selector={"role": "head"}))
    assert workers.group is not None and workers.group.most == 0 and not workers.fits
