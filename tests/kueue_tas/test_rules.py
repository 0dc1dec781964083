"""The Kueue rules beyond single cases: the checker catches violations, queues pack in order."""

from __future__ import annotations

from typing import Unpack

import pytest

from placer.model.cluster import ClusterSnapshot
from placer.model.options import SolveOptions
from placer.model.plan import Plan, PodPlacement
from placer.solver.check.checker import check
from placer.solver.greedy.tas import split_by_rank
from placer.solver.registry import get_solver
from tests.kueue_tas.cases import BLOCK, HOST, RACK, THREE, KueueCase, Topology, hosts
from tests.kueue_tas.test_kueue_cases import jobset_of

OPTIONS = SolveOptions(levels=THREE, workers=1, time_limit_s=5)


def _case(name: str, count: int, **kw: Unpack[Topology]) -> KueueCase:
    nodes = hosts(
        ("b1", "r1", "x1", "2"),
        ("b1", "r1", "x2", "2"),
        ("b1", "r2", "x3", "2"),
        ("b1", "r2", "x4", "2"),
    )
    return KueueCase(name, nodes, THREE, count, {}, **kw)


def test_the_checker_refuses_a_slice_split_across_racks() -> None:
    case = _case("slices", 4, required=BLOCK, slice_level=RACK, slice_size=2)
    js = jobset_of(case)
    snapshot = ClusterSnapshot(nodes=case.nodes)
    plan = get_solver("best-fit").solve(snapshot, [js], OPTIONS)
    assert check(plan, snapshot, [js], OPTIONS) == []
    # move the second pod of the first slice (child Job 0) to the other rack
    doc = plan.model_dump()
    job0 = doc["jobsets"][0]["jobs"][0]
    racks = {n.name: n.labels[RACK] for n in case.nodes}
    first = racks[job0["pods"][0]["node"]]
    other = next(n for n, r in racks.items() if r != first)
    job0["pods"][1] = PodPlacement(index=1, node=other).model_dump()
    broken = Plan.model_validate(doc)
    assert any(
        "slice of pods 0-1 needs one domain of" in p for p in check(broken, snapshot, [js], OPTIONS)
    )


@pytest.mark.parametrize("missing", [RACK, HOST])
def test_the_checker_refuses_pods_on_a_node_missing_a_kueue_level_label(missing: str) -> None:
    """The hostname too, when the Kueue Topology lists it (Kueue's `NodeMatchesFlavor`)."""
    case = _case("unlabeled", 2, required=BLOCK)
    js = jobset_of(case)
    snapshot = ClusterSnapshot(nodes=case.nodes, levels=THREE, kueue_topology="Topology/default")
    plan = get_solver("best-fit").solve(snapshot, [js], SolveOptions(workers=1))
    assert check(plan, snapshot, [js], SolveOptions()) == []
    used = plan.jobsets[0].jobs[0].pods[0].node
    node = next(n for n in case.nodes if n.name == used)
    unlabeled = node.model_copy(
        update={"labels": {k: v for k, v in node.labels.items() if k != missing}}
    )
    nodes = tuple(unlabeled if n.name == used else n for n in case.nodes)
    changed = snapshot.model_copy(update={"nodes": nodes})
    problems = check(plan, changed, [js], SolveOptions())
    assert f"node {used} lacks topology label {missing} but has planned pods" in problems


def test_a_queue_packs_each_jobset_into_the_tightest_rack_left() -> None:
    """Rack r1: x1 (room for 1 pod), x5 (2); rack r2: x2, x3 (2 each), x4 (1). Three JobSets of 2
    pods requiring a rack: BestFit sends the first to r1 (3 < 5) and onto x5 alone (filling by
    node name would split it over x1 and x5), the next two to r2, one host each."""
    nodes = hosts(
        ("b1", "r1", "x1", "1"),
        ("b1", "r1", "x5", "2"),
        ("b1", "r2", "x2", "2"),
        ("b1", "r2", "x3", "2"),
        ("b1", "r2", "x4", "1"),
    )
    snapshot = ClusterSnapshot(nodes=nodes)
    queue = []
    for i in range(3):
        js = jobset_of(KueueCase(f"c{i}", nodes, THREE, 2, {}, required=RACK))
        queue.append(js.model_copy(update={"name": f"js{i}", "order": i}))
    for solver in ("best-fit", "cpsat"):
        plan = get_solver(solver).solve(snapshot, queue, OPTIONS)
        assert check(plan, snapshot, queue, OPTIONS) == []
        assert all(o.status == "placed" for o in plan.jobsets), solver
        used = [{p.node.rsplit("-", 1)[1] for j in o.jobs for p in j.pods} for o in plan.jobsets]
        if solver == "best-fit":
            assert used == [{"x5"}, {"x2"}, {"x3"}]
        else:  # cpsat chooses jointly: any JobSet may take r1, each still on one host
            assert sorted(min(u) for u in used) == ["x2", "x3", "x5"]
            assert all(len(u) == 1 for u in used)


def test_pods_follow_kueues_rank_order_across_child_jobs() -> None:
    assert split_by_rank([("a", 3), ("b", 1)], 2, 2) == [[("a", 2)], [("a", 1), ("b", 1)]]
