"""The controller reads the cluster's Kueue Topology as `placer plan --kubeconfig` does.

Without it the controller would derive the levels from the JobSets' keys and use nodes that miss
a level's label, where `placer plan` on the same cluster leaves them out: the two would plan the
same cluster differently. Here a node without a rack label has room for the whole JobSet; with
the Topology both leave it out (and say why), without one both use it.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from benchmarks.simulate import cluster_sim as sim
from placer.controller.act.cache import ClusterCache
from placer.controller.act.kube_adapter import KubeAdapter
from placer.controller.act.memory_adapter import MemoryCluster
from placer.controller.decide.observe.snapshot import planning_snapshot
from placer.model.options import SolveOptions
from placer.model.snapshots.load import snapshot_from_objects
from placer.solver.check.checker import check
from placer.solver.registry import get_solver
from tests.controller.apiserver import ApiServer
from tests.controller.builders import assert_valid, controller, events
from tests.kueue_tas.test_kueue_cases import KUEUE

BLOCK = "cloud.com/topology-block"
RACK = "cloud.com/topology-rack"
HOST = "kubernetes.io/hostname"
LEVELS = (BLOCK, RACK, HOST)


def topology(version: str = "v1beta1") -> dict[str, Any]:
    return {
        "apiVersion": f"kueue.x-k8s.io/{version}",
        "kind": "Topology",
        "metadata": {"name": "default"},
        "spec": {"levels": [{"nodeLabel": k} for k in LEVELS]},
    }


def cluster(*, with_topology: bool) -> MemoryCluster:
    """n1 (b1/r1) and n2 (b1/r2) with 4 cpus each; n3 in b1, no rack label, 64 cpus; one
    JobSet of 12 one-cpu pods requiring a block, gated for placer."""
    c = MemoryCluster()
    c.create("nodes", sim.node_object("n1", {BLOCK: "b1", RACK: "r1"}, allocatable={"cpu": 4}))
    c.create("nodes", sim.node_object("n2", {BLOCK: "b1", RACK: "r2"}, allocatable={"cpu": 4}))
    c.create("nodes", sim.node_object("n3", {BLOCK: "b1"}, allocatable={"cpu": 64}))
    if with_topology:
        c.create("topologies", topology())
    js = sim.jobset_object("wide", replicated_jobs=[("w", 1, 12, {"cpu": "1"})])
    template = js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    template["metadata"] = {"annotations": {KUEUE + "podset-required-topology": BLOCK}}
    c.create("jobsets", js)
    sim.create_pods(c, "default", "wide")
    return c


def plan_status(c: MemoryCluster) -> tuple[str, str]:
    """What `placer plan` says of the JobSet on the same objects, with the Topology if there is
    one (its snapshot loader reads the Topology as the live loader does)."""
    topologies = c.objects("topologies")
    snapshot = snapshot_from_objects(
        c.objects("nodes"),
        [],
        [],
        source="cluster",
        levels=LEVELS if topologies else (),
        kueue_topology="Topology/default" if topologies else "",
    )
    from placer.model.jobset.parse import parse_jobset

    js = parse_jobset(c.objects("jobsets")[0])
    options = SolveOptions(workers=1)
    plan = get_solver("best-fit").solve(snapshot, [js], options)
    assert check(plan, snapshot, [js], options) == []
    return plan.jobsets[0].status, plan.jobsets[0].reason


@pytest.mark.parametrize("with_topology", [True, False], ids=["topology", "none"])
def test_the_controller_plans_as_placer_plan_does(with_topology: bool) -> None:
    c = cluster(with_topology=with_topology)
    report = assert_valid(controller(c).run_once())
    status, reason = plan_status(c)
    if with_topology:
        assert status == "unschedulable" and f"missing topology label {RACK}" in reason
        assert "default/wide" in report.planned.unschedulable
        [event] = events(c, "Unschedulable")
        assert f"missing topology label {RACK}" in event["message"]
    else:
        assert status == "placed"
        assert list(report.planned.placed) == ["default/wide"]


def test_the_planning_snapshot_carries_the_topology() -> None:
    c = cluster(with_topology=True)
    cache = ClusterCache(c)
    cache.relist()
    snapshot = planning_snapshot(cache.state(), binding="gate")
    assert (snapshot.levels, snapshot.kueue_topology) == (LEVELS, "Topology/default")
    # --levels wins, as for `placer plan --levels`: then no Topology is read
    given = planning_snapshot(cache.state(), binding="gate", levels=(BLOCK, HOST))
    assert (given.levels, given.kueue_topology) == ((BLOCK, HOST), "")


def test_topologies_that_may_not_be_listed_leave_the_levels_to_the_jobsets(
    caplog: pytest.LogCaptureFixture,
) -> None:
    c = cluster(with_topology=True)
    c.inject("list", "topologies", 403)
    with caplog.at_level(logging.WARNING):
        report = assert_valid(controller(c).run_once())
    assert list(report.planned.placed) == ["default/wide"]
    assert "Kueue Topologies are not read" in caplog.text


def test_the_topology_is_read_over_http_in_the_version_served() -> None:
    """The stand-in serves Topology only as v1beta1 (v1beta2 answers 404), as an older Kueue."""
    with ApiServer(cluster(with_topology=True)) as api:
        report = controller(KubeAdapter(api.client(), request_timeout_s=5)).run_once()
        assert "default/wide" in report.planned.unschedulable
        paths = [p for m, p in api.requests if m == "GET" and "topologies" in p]
        assert any("/v1beta2/" in p for p in paths) and any("/v1beta1/" in p for p in paths)
