"""Snapshot objects (Nodes, PriorityClasses, Kueue Topologies) as the real API server reads them,
and as placer's snapshot loader does.

A snapshot is what a cluster holds, so placer should read every object the cluster can hold and
refuse what it cannot: a hand-written or rendered snapshot with a node no API server would store
is a plan for a cluster that cannot exist. Each case is created with `dryRun=All` (validated and
defaulted, stored nowhere; a Node may be created with its status, as the kubelet registers it) and
read by `snapshot_from_objects` or `topology_levels`. The verdicts must agree, and agree with the
one written beside the case; `STRICTER` lists what placer refuses on purpose, each with its reason.
"""

from __future__ import annotations

import copy
from typing import Any

from placer.model.errors import InputError
from placer.model.kueue.topology import topology_levels
from placer.model.snapshots.load import snapshot_from_objects
from tests.cluster.scenario import Scenario
from tests.cluster.verdicts import assert_agree, compare, raw_dry_run

HOST = "kubernetes.io/hostname"
RACK = "example.com/rack"


def _node(
    spec: Any = None,
    allocatable: Any = None,
    *,
    name: str = "n1",
    labels: Any = None,
    status: Any = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {RACK: "r1"} if labels is None else labels},
        "spec": {} if spec is None else spec,
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}
        if status is None
        else status,
    }
    if allocatable is not None:
        body["status"]["allocatable"] = allocatable
    return body


def _tainted(*taints: dict[str, Any]) -> dict[str, Any]:
    return _node({"taints": list(taints)})


NODES: list[tuple[str, dict[str, Any], bool]] = [
    # (case, node, the API server accepts it)
    ("plain", _node(), True),
    ("ready", _node(status={"conditions": [{"type": "Ready", "status": "True"}]}), True),
    ("dotted-name", _node(name="host-0.pool.example.com"), True),
    ("upper-case-name", _node(name="Host-0"), False),
    ("bad-label-value", _node(labels={RACK: "-r1"}), False),
    ("bad-label-key", _node(labels={"a/b/c": "x"}), False),
    ("taint", _tainted({"key": "a", "value": "x", "effect": "NoSchedule"}), True),
    ("taint-without-value", _tainted({"key": "a", "effect": "NoExecute"}), True),
    (
        "taint-with-time",
        _tainted({"key": "a", "effect": "NoExecute", "timeAdded": "2026-01-01T00:00:00Z"}),
        True,
    ),
    (
        "taint-one-key-two-effects",
        _tainted({"key": "a", "effect": "NoSchedule"}, {"key": "a", "effect": "NoExecute"}),
        True,
    ),
    (
        "taint-twice",
        _tainted({"key": "a", "effect": "NoSchedule"}, {"key": "a", "effect": "NoSchedule"}),
        False,
    ),
    (
        "taint-twice-other-values",
        _tainted(
            {"key": "a", "value": "x", "effect": "NoSchedule"},
            {"key": "a", "value": "y", "effect": "NoSchedule"},
        ),
        False,
    ),
    ("taint-empty-effect", _tainted({"key": "a", "effect": ""}), False),
    ("taint-no-effect", _tainted({"key": "a"}), False),
    ("taint-other-effect", _tainted({"key": "a", "effect": "NoRun"}), False),
    ("taint-bad-key", _tainted({"key": "-a", "effect": "NoSchedule"}), False),
    ("taint-bad-value", _tainted({"key": "a", "value": "x y", "effect": "NoSchedule"}), False),
    ("taint-no-key", _tainted({"effect": "NoSchedule"}), False),
    ("unschedulable", _node({"unschedulable": True}), True),
    ("gpus", _node(allocatable={"cpu": "4", "nvidia.com/gpu": "8"}), True),
    ("negative-cpu", _node(allocatable={"cpu": "-1"}), False),
    ("milli-cpu", _node(allocatable={"cpu": "1500m"}), True),
    ("fraction-of-a-gpu", _node(allocatable={"cpu": "4", "nvidia.com/gpu": "0.5"}), False),
    ("fraction-of-a-pod", _node(allocatable={"cpu": "4", "pods": "1500m"}), False),
    ("fraction-of-a-byte-of-hugepages", _node(allocatable={"hugepages-2Mi": "1.5"}), True),
    ("unprefixed-name", _node(allocatable={"cpu": "4", "gpu": "1"}), True),
    ("number", _node(allocatable={"cpu": 4, "memory": 8589934592}), True),
    ("bad-quantity", _node(allocatable={"cpu": "4 cores"}), False),
    ("null-quantity", _node(allocatable={"cpu": None, "memory": "8Gi"}), True),
    ("null-spec", {**_node(), "spec": None}, True),
    ("null-taints", _node({"taints": None}), True),
    ("null-unschedulable", _node({"unschedulable": None}), True),
    ("null-taint-value", _tainted({"key": "a", "value": None, "effect": "NoSchedule"}), True),
    ("null-labels", _node(labels={}) | {"metadata": {"name": "n1", "labels": None}}, True),
    ("null-label-value", _node(labels={RACK: None}), True),
    ("null-allocatable", _node(status={"allocatable": None}), True),
    ("null-conditions", _node(status={"conditions": None}), True),
]


def _class(name: str = "batch", value: Any = 1000, **fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
    }
    if value is not ...:
        body["value"] = value
    return body | fields


PRIORITY_CLASSES: list[tuple[str, dict[str, Any], bool]] = [
    ("plain", _class(), True),
    ("negative", _class(value=-5), True),
    ("no-value", _class(value=...), True),
    ("null-value", _class(value=None), True),
    ("highest-user-value", _class(value=1_000_000_000), True),
    ("above-user-values", _class(value=1_000_000_001), False),
    ("reserved-prefix", _class("system-batch", 1000), False),
    ("system-class-other-value", _class("system-cluster-critical", 1000), False),
    ("never-preempts", _class(preemptionPolicy="Never"), True),
    ("preempts-lower", _class(preemptionPolicy="PreemptLowerPriority"), True),
    ("other-policy", _class(preemptionPolicy="Sometimes"), False),
    ("null-policy", _class(preemptionPolicy=None), True),
    ("global-default", _class(globalDefault=True), True),
    ("null-global-default", _class(globalDefault=None), True),
    ("bad-name", _class("Batch"), False),
    ("fractional-value", _class(value=1.5), False),
]


def _topology(*labels: Any, version: str = "v1beta2") -> dict[str, Any]:
    return {
        "apiVersion": f"kueue.x-k8s.io/{version}",
        "kind": "Topology",
        "metadata": {"name": "default"},
        "spec": {"levels": [{"nodeLabel": label} for label in labels]},
    }


TOPOLOGIES: list[tuple[str, dict[str, Any], bool]] = [
    ("block-rack-host", _topology("example.com/block", RACK, HOST), True),
    ("one-level", _topology(RACK), True),
    ("v1beta1", _topology(RACK, HOST, version="v1beta1"), True),
    ("no-levels", _topology(), False),
    ("sixteen-levels", _topology(*(f"example.com/l{i}" for i in range(16))), True),
    ("seventeen-levels", _topology(*(f"example.com/l{i}" for i in range(17))), False),
    ("level-twice", _topology(RACK, RACK), False),
    ("hostname-not-lowest", _topology(HOST, RACK), False),
    ("empty-label", _topology(""), False),
    ("bad-label", _topology("-rack"), False),
    ("null-label", _topology(None), False),
]

STRICTER: list[tuple[str, dict[str, Any]]] = [
    # A level whose key no node label can have (its name part over 63 characters): Kueue's schema
    # bounds the whole key only, but a level no node carries would leave every node outside every
    # domain; placer names the key instead of planning nothing.
    ("topology-unlabelable-level", _topology("example.com/" + "r" * 64)),
]


def _placer_reads_node(body: dict[str, Any]) -> bool:
    try:
        snapshot_from_objects([copy.deepcopy(body)], [], source="case.json")
    except InputError:
        return False
    return True


def _placer_reads_class(body: dict[str, Any]) -> bool:
    try:
        snapshot_from_objects([], [], [copy.deepcopy(body)], source="case.json")
    except InputError:
        return False
    return True


def _placer_reads_topology(body: dict[str, Any]) -> bool:
    try:
        topology_levels(copy.deepcopy(body), source="case.json")
    except InputError:
        return False
    return True


def test_placer_reads_exactly_the_nodes_the_api_server_stores(scenario: Scenario) -> None:
    api = scenario.custom.api_client
    said, written = compare(
        NODES, [], lambda body: raw_dry_run(api, "/api/v1/nodes", body), _placer_reads_node
    )
    assert_agree(said, written)


def test_placer_reads_exactly_the_priority_classes_the_api_server_stores(
    scenario: Scenario,
) -> None:
    api = scenario.custom.api_client
    path = "/apis/scheduling.k8s.io/v1/priorityclasses"
    said, written = compare(
        PRIORITY_CLASSES, [], lambda body: raw_dry_run(api, path, body), _placer_reads_class
    )
    assert_agree(said, written)


def test_placer_reads_exactly_the_topologies_kueue_stores(scenario: Scenario) -> None:
    api = scenario.custom.api_client

    def cluster_accepts(body: dict[str, Any]) -> bool:
        version = body["apiVersion"].split("/")[1]
        return raw_dry_run(api, f"/apis/kueue.x-k8s.io/{version}/topologies", body)

    said, written = compare(TOPOLOGIES, STRICTER, cluster_accepts, _placer_reads_topology)
    assert_agree(said, written)
