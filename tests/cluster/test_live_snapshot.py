"""`--kubeconfig`'s live snapshot read from the real API server, against the same objects read
from a file.

The live loader lists Nodes, non-terminal Pods (a field selector the real server applies),
PriorityClasses, Kueue Topologies (asking the versions Kueue serves) and JobSets, page by page.
A snapshot of a cluster must not depend on whether it came over the wire or from `kubectl get -o
json`: the bundled kubectl example's nodes, classes and pods are created (the pods bound by
`nodeName` and given a Running status, as a kubelet would report it), and the live snapshot must
equal the file snapshot of exactly those objects.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from placer.model.cluster import ClusterSnapshot
from placer.model.snapshots.live import load_live_snapshot
from placer.model.snapshots.load import load_snapshot
from tests.cluster.kube import NOT_READY, name_of
from tests.cluster.scenario import REPO, Scenario

STARTED = "2026-12-01T00:00:00Z"
LEVELS = ("cloud.google.com/gke-nodepool", "kubernetes.io/hostname")
TOPOLOGY: dict[str, Any] = {
    "apiVersion": "kueue.x-k8s.io/v1beta1",  # an older version: both are served
    "kind": "Topology",
    "metadata": {"name": "placer-live-snapshot"},
    "spec": {"levels": [{"nodeLabel": key} for key in LEVELS]},
}


def _example(namespace: str, system: str) -> list[dict[str, Any]]:
    """The kubectl example's objects as the cluster holds them once created: its JobSet pods
    moved to `namespace` and the filler pods (kube-system's, in the example) to `system`, each
    Running since STARTED, and its NotReady node tainted as the node lifecycle controller does."""
    listing = json.loads((REPO / "examples/clusters/tpu-kubectl.json").read_text())
    items = []
    for item in listing["items"]:
        item = copy.deepcopy(item)
        if item["kind"] == "Pod":
            labeled = "labels" in item["metadata"]
            item["metadata"]["namespace"] = namespace if labeled else system
            item["status"] = {"phase": "Running", "startTime": STARTED}
        conditions = item.get("status", {}).get("conditions", [])
        if item["kind"] == "Node" and {"type": "Ready", "status": "False"} in [
            {k: c[k] for k in ("type", "status")} for c in conditions
        ]:
            item.setdefault("spec", {}).setdefault("taints", []).append(NOT_READY)
        items.append(item)
    return items


def _node_facts(snapshot: ClusterSnapshot) -> list[tuple[Any, ...]]:
    return [
        (
            n.name,
            n.labels,
            n.taints,
            n.allocatable,
            n.free,
            n.ready,
            n.unschedulable,
            n.jobsets,
            n.used_host_ports,
        )
        for n in snapshot.nodes
    ]


def _node_of(pod: k8s.V1Pod) -> str:
    assert pod.spec is not None and pod.spec.node_name
    return str(pod.spec.node_name)


def _create(scenario: Scenario, items: list[dict[str, Any]]) -> None:
    scenario.use_nodes(i for i in items if i["kind"] == "Node")
    scheduling = k8s.SchedulingV1Api(scenario.core.api_client)
    for cls in (i for i in items if i["kind"] == "PriorityClass"):
        body = {**cls, "metadata": {"name": cls["metadata"]["name"]}}
        scheduling.create_priority_class(body)  # type: ignore[arg-type]  # a dict is sent as is
    for pod in (i for i in items if i["kind"] == "Pod"):
        namespace = pod["metadata"]["namespace"]
        body = {key: value for key, value in pod.items() if key != "status"}
        scenario.core.create_namespaced_pod(namespace, body)  # type: ignore[arg-type]
        scenario.core.patch_namespaced_pod_status(
            pod["metadata"]["name"], namespace, {"status": pod["status"]}
        )


@pytest.fixture
def example(scenario: Scenario, tmp_path: Path) -> tuple[Scenario, str, Path]:
    """The example created in the cluster, as its only nodes and only PriorityClasses but the
    system's own, and the same objects written as a kubectl file."""
    scenario.start_pod_reaper()
    system = scenario.add_namespace("system")
    items = _example(scenario.namespace, system)
    scheduling = k8s.SchedulingV1Api(scenario.core.api_client)
    for cls in scheduling.list_priority_class().items:
        if not name_of(cls).startswith("system-"):
            try:
                scheduling.delete_priority_class(name_of(cls))
            except ApiException as error:
                if error.status != 404:
                    raise
    _create(scenario, items)
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    return scenario, system, path


def test_the_live_snapshot_is_the_file_snapshot_of_the_same_objects(
    example: tuple[Scenario, str, Path],
) -> None:
    scenario, _, path = example
    live = load_live_snapshot(str(scenario.admin), levels=LEVELS)
    written = load_snapshot([path])
    assert len(written.nodes) == 36 and any(n.jobsets for n in written.nodes)
    assert _node_facts(live) == _node_facts(written)
    assert live.running == written.running
    # the cluster also holds the API server's own two classes
    assert live.priority_classes == {
        **written.priority_classes,
        "system-cluster-critical": 2_000_000_000,
        "system-node-critical": 2_000_001_000,
    }


def test_terminal_pods_and_other_namespaces_are_left_out(
    example: tuple[Scenario, str, Path],
) -> None:
    """The field selector keeps finished pods off the wire; `namespaces` keeps the pods of the
    others out of the count (their nodes then look freer, which the caller accepts)."""
    scenario, system, _ = example
    before = load_live_snapshot(str(scenario.admin), levels=LEVELS)
    pod = scenario.core.list_namespaced_pod(scenario.namespace).items[0]
    node = _node_of(pod)
    scenario.core.patch_namespaced_pod_status(
        name_of(pod), scenario.namespace, {"status": {"phase": "Succeeded"}}
    )
    after = load_live_snapshot(str(scenario.admin), levels=LEVELS)
    assert after.node(node).free["google.com/tpu"] == before.node(node).free["google.com/tpu"] + 4
    mine = load_live_snapshot(str(scenario.admin), namespaces=[scenario.namespace], levels=LEVELS)
    system_pods = scenario.core.list_namespaced_pod(system).items
    assert system_pods
    held = {_node_of(p) for p in system_pods}
    assert all(mine.node(n).free["pods"] > after.node(n).free["pods"] for n in held)


def test_the_kueue_topology_gives_the_levels(example: tuple[Scenario, str, Path]) -> None:
    """Without `--levels`, the cluster's one Kueue Topology names them, whichever served
    version it was written in."""
    scenario, _, _ = example
    custom = scenario.custom
    custom.create_cluster_custom_object("kueue.x-k8s.io", "v1beta1", "topologies", TOPOLOGY)
    try:
        live = load_live_snapshot(str(scenario.admin))
    finally:
        custom.delete_cluster_custom_object(
            "kueue.x-k8s.io", "v1beta1", "topologies", TOPOLOGY["metadata"]["name"]
        )
    assert (live.kueue_topology, live.levels) == ("Topology/placer-live-snapshot", LEVELS)


def test_topologies_that_disagree_give_no_levels_and_levels_given_win(
    example: tuple[Scenario, str, Path], caplog: pytest.LogCaptureFixture
) -> None:
    """Two Kueue Topologies naming different levels: placer cannot tell which one the JobSets
    mean, says so, and takes none; `--levels` is used as given whatever the cluster holds."""
    scenario, _, _ = example
    custom = scenario.custom
    other = {**TOPOLOGY, "metadata": {"name": "placer-live-racks"}}
    other["spec"] = {"levels": [{"nodeLabel": LEVELS[0]}]}
    created = []
    try:
        for topology in (TOPOLOGY, other):
            custom.create_cluster_custom_object("kueue.x-k8s.io", "v1beta1", "topologies", topology)
            created.append(topology["metadata"]["name"])
        assert load_live_snapshot(str(scenario.admin)).levels == ()
        names = ", ".join(sorted(created))
        assert f"Kueue Topologies {names} differ" in caplog.text
        given = load_live_snapshot(str(scenario.admin), levels=[LEVELS[1]])
        assert given.levels == (LEVELS[1],)
    finally:
        for name in created:
            custom.delete_cluster_custom_object("kueue.x-k8s.io", "v1beta1", "topologies", name)
