"""Snapshots from kubectl-style objects: readiness, cordons, free capacity, holders, errors."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any, TypedDict

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from kubernetes.utils import parse_quantity

from placer.model.errors import InputError
from placer.model.scheduling import Taint
from placer.model.snapshots.load import (
    format_quantity,
    load_snapshot,
    snapshot_from_objects,
    snapshot_to_kubectl_list,
)
from tests.helpers.builders import node_manifest

JOBSET_LABEL = "jobset.sigs.k8s.io/jobset-name"
TpuAllocatable = TypedDict("TpuAllocatable", {"google.com/tpu": str})
"""`node`'s allocatable keyword for a resource whose name is no Python identifier."""


def node(
    name: str,
    *,
    ready: str | None = "True",
    unschedulable: bool = False,
    taints: list[dict[str, str]] | None = None,
    **allocatable: str,
) -> dict[str, Any]:
    """A node of pool `p` (4 TPU chips unless `allocatable` says otherwise); `ready` is its Ready
    condition's status, beside a MemoryPressure one (None: no conditions at all)."""
    conditions = None
    if ready is not None:
        conditions = [
            {"type": "MemoryPressure", "status": "False"},
            {"type": "Ready", "status": ready},
        ]
    return node_manifest(
        name,
        labels={"pool": "p"},
        allocatable=allocatable or {"cpu": "8", "google.com/tpu": "4", "pods": "110"},
        taints=taints or (),
        conditions=conditions,
        unschedulable=unschedulable,
    )


def pod(
    name: str,
    node_name: str | None,
    *,
    phase: str = "Running",
    namespace: str = "ns",
    jobset: str | None = None,
    requests: dict[str, str] | None = None,
    limits: dict[str, str] | None = None,
    host_network: bool = False,
    ports: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if requests:
        resources["requests"] = requests
    if limits:
        resources["limits"] = limits
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": "x", "resources": resources, "ports": ports or []}]
    }
    if node_name:
        spec["nodeName"] = node_name
    if host_network:
        spec["hostNetwork"] = True
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if jobset:
        meta["labels"] = {JOBSET_LABEL: jobset}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": spec,
        "status": {"phase": phase},
    }


def test_node_fields() -> None:
    snap = snapshot_from_objects(
        [
            node(
                "a", taints=[{"key": "google.com/tpu", "value": "present", "effect": "NoSchedule"}]
            ),
            node("b", ready="False"),
            node("c", ready="Unknown"),
            node("d", ready=None),
            node("e", unschedulable=True),
        ],
        [],
        source="s.json",
        levels=["pool"],
    )
    by = snap.by_name()
    assert by["a"].taints == (Taint(key="google.com/tpu", value="present", effect="NoSchedule"),)
    assert by["a"].allocatable == {"cpu": 8, "google.com/tpu": 4, "pods": 110}
    assert by["a"].labels == {"kubernetes.io/hostname": "a", "pool": "p"}
    assert [n.name for n in snap.nodes if n.usable] == ["a", "d"]
    assert not by["b"].ready and not by["c"].ready
    assert by["d"].ready, "a node object without conditions counts as ready"
    assert by["e"].ready and by["e"].unschedulable
    assert (snap.source, snap.levels) == ("s.json", ("pool",))


def test_free_capacity_counts_only_non_terminal_bound_pods() -> None:
    pods = [
        pod("run", "a", requests={"cpu": "2"}, limits={"google.com/tpu": "4"}, jobset="train"),
        pod("pend", "a", phase="Pending", requests={"cpu": "1"}),
        pod("done", "a", phase="Succeeded", requests={"cpu": "3"}),
        pod("failed", "a", phase="Failed", requests={"cpu": "3"}, jobset="old"),
        pod("unbound", None, phase="Pending", requests={"cpu": "3"}),
        pod("elsewhere", "b", requests={"cpu": "500m", "memory": "1Gi"}),
        pod("ghost", "missing-node", requests={"cpu": "1"}),
    ]
    snap = snapshot_from_objects([node("a"), node("b")], pods)
    a, b = snap.node("a"), snap.node("b")
    assert a.free == {"cpu": 5, "google.com/tpu": 0, "pods": 108}
    assert a.jobsets == ("ns/train",), "terminal pods hold no JobSet"
    # memory is not allocatable on b: nothing to subtract it from
    assert b.free == {"cpu": Decimal("7.5"), "google.com/tpu": 4, "pods": 109}
    assert b.jobsets == ()
    assert a.allocatable == {"cpu": 8, "google.com/tpu": 4, "pods": 110}


def test_host_ports_and_jobset_holders() -> None:
    pods = [
        pod(
            "p1",
            "a",
            host_network=True,
            ports=[{"containerPort": 8471}],
            jobset="z",
            namespace="n2",
        ),
        pod(
            "p2",
            "a",
            ports=[{"containerPort": 80, "hostPort": 9090, "protocol": "UDP"}],
            jobset="y",
            namespace="n1",
        ),
        pod("p3", "a", ports=[{"containerPort": 80}], phase="Succeeded", host_network=True),
    ]
    a = snapshot_from_objects([node("a")], pods).node("a")
    assert a.used_host_ports == ((8471, "TCP"), (9090, "UDP"))
    assert a.jobsets == ("n1/y", "n2/z")


def test_priority_classes() -> None:
    classes = [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": n},
            "value": v,
        }
        for n, v in (("low", 10), ("high", 1000))
    ]
    assert snapshot_from_objects([node("a")], [], classes).priority_classes == {
        "high": 1000,
        "low": 10,
    }


def _class(name: str, value: int, **more: Any) -> dict[str, Any]:
    meta = {"name": name}
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": meta,
            "value": value, **more}  # fmt: skip


@pytest.mark.parametrize(
    ("cls", "field", "message"),
    [
        pytest.param(
            _class("huge", 1_000_000_001),
            "value",
            "must be at most 1000000000, got 1000000001",
            id="above-user-values",
        ),
        pytest.param(
            _class("system-batch", 10),
            "metadata.name",
            "names starting 'system-' are kept for the system's own classes",
            id="reserved-prefix",
        ),
        pytest.param(
            _class("system-node-critical", 10),
            "value",
            "must be 2000001000 for system-node-critical, got 10",
            id="system-class-other-value",
        ),
        pytest.param(
            _class("system-node-critical", 2_000_001_000, globalDefault=True),
            "globalDefault",
            "system-node-critical cannot be the default class",
            id="system-class-default",
        ),
        pytest.param(
            _class("batch", 10, preemptionPolicy="Sometimes"),
            "preemptionPolicy",
            "must be PreemptLowerPriority or Never, got 'Sometimes'",
            id="other-policy",
        ),
    ],
)
def test_a_priority_class_the_api_server_would_not_store_is_refused(
    cls: dict[str, Any], field: str, message: str
) -> None:
    with pytest.raises(InputError) as refused:
        snapshot_from_objects([node("a")], [], [cls], source="c.json")
    name = cls["metadata"]["name"]
    assert (refused.value.obj, refused.value.field) == (f"PriorityClass/{name}", field)
    assert refused.value.message == message


def test_the_system_classes_and_the_highest_user_value_are_read() -> None:
    """What every cluster lists (`kubectl get priorityclasses`) and the edge of the user range;
    a class without a value has 0, as the API server stores it."""
    classes = [
        _class("system-cluster-critical", 2_000_000_000),
        _class("system-node-critical", 2_000_001_000, preemptionPolicy="PreemptLowerPriority"),
        _class("top", 1_000_000_000),
        {k: v for k, v in _class("zero", 5).items() if k != "value"},
    ]
    assert snapshot_from_objects([node("a")], [], classes).priority_classes == {
        "system-cluster-critical": 2_000_000_000,
        "system-node-critical": 2_000_001_000,
        "top": 1_000_000_000,
        "zero": 0,
    }


def test_the_global_default_class_is_the_one_admission_gives() -> None:
    """The Priority admission plugin gives a pod naming no class the `globalDefault` one; of
    several (a race it can lose), the lowest value."""
    classes = [
        _class("high", 1000, globalDefault=True),
        _class("standard", 500, globalDefault=True),
    ]
    classes.append(_class("low", 10, globalDefault=False))
    assert snapshot_from_objects([node("a")], [], classes).default_priority_class == "standard"
    assert snapshot_from_objects([node("a")], [], classes[2:]).default_priority_class is None


def test_a_kubectl_list_keeps_the_default_and_the_non_preempting_classes() -> None:
    classes = [
        _class("standard", 500, globalDefault=True),
        _class("batch", 10, preemptionPolicy="Never"),
    ]
    before = snapshot_from_objects([node("a")], [], classes)
    items = snapshot_to_kubectl_list(before)["items"]
    after = snapshot_from_objects(
        [i for i in items if i["kind"] == "Node"],
        [],
        [i for i in items if i["kind"] == "PriorityClass"],
    )
    assert (after.default_priority_class, after.non_preempting_classes) == ("standard", ("batch",))


def test_kubectl_list_file(tmp_path: Path) -> None:
    doc = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            node("a"),
            node("b", ready="False"),
            node("c", unschedulable=True),
            pod("w-0", "a", limits={"google.com/tpu": "4"}, jobset="js"),
            pod("old", "c", phase="Succeeded", limits={"google.com/tpu": "4"}, jobset="old"),
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": "high"},
                "value": 100,
            },
            {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc", "namespace": "x"}},
        ],
    }
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(doc))
    snap = load_snapshot([path])
    assert [n.name for n in snap.nodes] == ["a", "b", "c"]
    assert [(n.ready, n.unschedulable) for n in snap.nodes] == [
        (True, False),
        (False, False),
        (True, True),
    ]
    assert snap.node("a").free["google.com/tpu"] == 0
    assert snap.node("c").free["google.com/tpu"] == 4
    assert snap.node("c").jobsets == ()
    assert snap.priority_classes == {"high": 100}
    assert snap.source == str(path)


def test_the_readmes_snapshot_command_output_loads_quietly(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """`kubectl get nodes,pods,priorityclasses,jobsets -A -o json`: one List, JobSets included."""
    jobset = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "js", "namespace": "team"},
        "spec": {"replicatedJobs": []},
    }
    priority_class = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "high"},
        "value": 100,
    }
    doc = {"apiVersion": "v1", "kind": "List", "items": [node("a"), priority_class, jobset]}
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(doc))
    with caplog.at_level("WARNING"):
        snap = load_snapshot([path])
    assert snap.priority_classes == {"high": 100}
    assert [n.name for n in snap.nodes] == ["a"]
    assert caplog.records == []


def test_separate_node_and_pod_lists(tmp_path: Path) -> None:
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(
        yaml.safe_dump({"apiVersion": "v1", "kind": "NodeList", "items": [node("a"), node("b")]})
    )
    pods = tmp_path / "pods.json"
    pods.write_text(
        json.dumps(
            {"apiVersion": "v1", "kind": "PodList", "items": [pod("p", "b", requests={"cpu": "8"})]}
        )
    )
    snap = load_snapshot([nodes, pods])
    assert snap.node("b").free["cpu"] == 0 and snap.node("a").free["cpu"] == 8


def test_pods_count_against_compact_nodes(tmp_path: Path) -> None:
    desc = tmp_path / "desc.yaml"
    desc.write_text(
        yaml.safe_dump(
            {
                "kind": "ClusterDescription",
                "pools": [{"name": "p", "hosts": 1, "nodeName": "n", "allocatable": {"cpu": "4"}}],
            }
        )
    )
    pods = tmp_path / "pods.yaml"
    pods.write_text(yaml.safe_dump(pod("x", "n", requests={"cpu": "1"}, jobset="j")))
    snap = load_snapshot([desc, pods])
    assert snap.node("n").free == {"cpu": 3}
    assert snap.node("n").jobsets == ("ns/j",)


@pytest.mark.parametrize(
    ("objs", "obj", "field"),
    [
        pytest.param(
            [node("a", cpu="many")], "Node/a", "status.allocatable.cpu", id="bad-quantity"
        ),
        pytest.param(
            [{"kind": "Node", "metadata": {"labels": {}}}], "Node/?", "metadata.name", id="no-name"
        ),
        pytest.param(
            [node("a", taints=[{"key": "k", "effect": "Sometimes"}])],
            "Node/a",
            "spec.taints[0].effect",
            id="bad-taint",
        ),
        pytest.param([node("a"), node("a")], "Node/a", "", id="duplicate"),
        pytest.param(
            [node("a", cpu="-1")], "Node/a", "status.allocatable.cpu", id="negative-allocatable"
        ),
        pytest.param(
            [node("a", **TpuAllocatable({"google.com/tpu": "1500m"}))],
            "Node/a",
            "status.allocatable.google.com/tpu",
            id="fractional-extended-resource",
        ),
        pytest.param(
            [node("a", cpu="8", pods="1500m")],
            "Node/a",
            "status.allocatable.pods",
            id="fractional-pods",
        ),
        pytest.param(
            [node("a", taints=[{"key": "k", "effect": "NoSchedule"}] * 2)],
            "Node/a",
            "spec.taints[1]",
            id="taint-twice",
        ),
    ],
)
def test_node_errors(tmp_path: Path, objs: list[dict[str, Any]], obj: str, field: str) -> None:
    path = tmp_path / "nodes.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))
    with pytest.raises(InputError) as e:
        load_snapshot([path])
    assert (e.value.source, e.value.obj, e.value.field) == (str(path), obj, field)


def test_nulls_in_a_kubectl_list_are_read_as_the_api_server_reads_them(tmp_path: Path) -> None:
    """A null field is the field left out and a null label value empty, as Go's JSON decoding
    reads them (rendered YAML has them; the API server stores such a Node): the one-call decoding
    refuses them, and the object-by-object reading takes them."""
    written = node("a", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}])
    written["spec"]["taints"][0]["value"] = None
    written["metadata"]["labels"]["zone"] = None
    written["spec"]["unschedulable"] = None
    written["status"]["conditions"] = None
    written["status"]["allocatable"]["memory"] = None
    cls = {**_class("batch", 10), "globalDefault": None, "preemptionPolicy": None}
    path = tmp_path / "nulls.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [written, cls]}))
    snap = load_snapshot([path])
    read = snap.node("a")
    assert (read.labels["pool"], read.labels["zone"]) == ("p", "")
    assert read.taints == (Taint(key="k", value="", effect="NoSchedule"),)
    assert (read.ready, read.unschedulable) == (True, False)
    assert "memory" not in read.allocatable and read.allocatable["cpu"] == 8
    assert (snap.priority_classes, snap.default_priority_class) == ({"batch": 10}, None)


def test_pod_error_names_pod(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    bad = pod("p", "a", requests={"cpu": "x"})
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [node("a"), bad]}))
    with pytest.raises(InputError) as e:
        load_snapshot([path])
    assert (e.value.obj, e.value.field) == ("ns/p", "spec.containers[0].resources.requests.cpu")


def test_negative_pod_request_names_pod(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    bad = pod("p", "a", requests={"cpu": "-2"})
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [node("a"), bad]}))
    with pytest.raises(InputError, match="greater than or equal to 0") as e:
        load_snapshot([path])
    assert (e.value.source, e.value.obj, e.value.field) == (
        str(path),
        "ns/p",
        "spec.containers[0].resources.requests.cpu",
    )


def test_json_and_yaml_snapshots_load_the_same(tmp_path: Path) -> None:
    """A kubectl JSON List (decoded in one call) and the same objects in YAML (read one by one)
    give the same snapshot."""
    items = [
        node("a", taints=[{"key": "google.com/tpu", "value": "present", "effect": "NoSchedule"}]),
        node("b", ready="False"),
        pod("w-0", "a", limits={"google.com/tpu": "4"}, jobset="js", requests={"cpu": "1"}),
        pod("d-0", "b", requests={"cpu": "100m"}, host_network=True, ports=[{"containerPort": 9}]),
        {"kind": "PriorityClass", "metadata": {"name": "high"}, "value": 100},
    ]
    doc = {"apiVersion": "v1", "kind": "List", "items": items}
    as_json, as_yaml = tmp_path / "c.json", tmp_path / "c.yaml"
    as_json.write_text(json.dumps(doc))
    as_yaml.write_text(yaml.safe_dump(doc))
    from_json, from_yaml = load_snapshot([as_json]), load_snapshot([as_yaml])
    assert from_json.nodes == from_yaml.nodes
    assert from_json.priority_classes == from_yaml.priority_classes == {"high": 100}
    assert from_json.node("a").jobsets == ("ns/js",)


def test_no_nodes_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "pods.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [pod("p", "a")]}))
    with pytest.raises(InputError, match="no Node objects") as e:
        load_snapshot([path])
    assert str(path) in str(e.value)


def test_missing_and_broken_files(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        load_snapshot([tmp_path / "gone.json"])
    broken = tmp_path / "broken.yaml"
    broken.write_text("kind: ClusterDescription\npools:\n  - name: [x\n")
    with pytest.raises(InputError, match=r"invalid YAML at line \d+") as e:
        load_snapshot([broken])
    assert e.value.source == str(broken)


def test_kubectl_rendering_round_trips() -> None:
    pods = [
        pod(
            "w",
            "a",
            requests={"cpu": "1500m", "memory": "3Gi"},
            limits={"google.com/tpu": "4"},
            jobset="js",
            host_network=True,
            ports=[{"containerPort": 8471}],
        ),
        pod("sys", "a", requests={"cpu": "100m"}, namespace="kube-system"),
        pod("sys2", "b", requests={"cpu": "100m"}, namespace="kube-system", jobset="j2"),
    ]
    classes = [{"kind": "PriorityClass", "metadata": {"name": "hi"}, "value": 9}]
    snap = snapshot_from_objects(
        [
            node("a", memory="16Gi", cpu="8", pods="110"),
            node("b", ready="False", unschedulable=True),
        ],
        pods,
        classes,
    )
    doc = snapshot_to_kubectl_list(snap)
    assert doc["kind"] == "List"
    again = snapshot_from_objects(
        [i for i in doc["items"] if i["kind"] == "Node"],
        [i for i in doc["items"] if i["kind"] == "Pod"],
        [i for i in doc["items"] if i["kind"] == "PriorityClass"],
    )
    assert again.nodes == snap.nodes
    assert again.priority_classes == {"hi": 9}
    assert json.dumps(doc, sort_keys=True) == json.dumps(
        snapshot_to_kubectl_list(again), sort_keys=True
    )


@pytest.mark.parametrize(
    ("value", "text"),
    [
        pytest.param(Decimal(400 * 2**30), "400Gi", id="Gi"),
        pytest.param(Decimal("0.5"), "500m", id="milli"),
        pytest.param(Decimal(110), "110", id="plain"),
        pytest.param(Decimal(3 * 2**20), "3Mi", id="Mi"),
        pytest.param(Decimal(1000), "1000", id="not-binary"),
    ],
)
def test_format_quantity(value: Decimal, text: str) -> None:
    assert format_quantity(value) == text


@given(st.decimals(min_value=0, max_value=10**15, places=3, allow_nan=False, allow_infinity=False))
def test_format_quantity_parses_back(value: Decimal) -> None:
    # unannotated in the client
    assert Decimal(parse_quantity(format_quantity(value))) == value  # type: ignore[no-untyped-call]


def test_running_jobsets_are_dated_by_their_earliest_live_pod(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    def started(p: dict[str, Any], when: str) -> dict[str, Any]:
        p["status"]["startTime"] = when
        return p

    pods = [
        started(pod("p1", "a", jobset="train"), "2026-12-01T05:00:00Z"),
        started(pod("p2", "a", jobset="train"), "2026-12-01T04:30:00Z"),
        started(pod("p3", "a", jobset="train", phase="Failed"), "2026-12-01T01:00:00Z"),
        started(pod("p4", "a", jobset="odd"), "not a time"),
        pod("p5", "a", jobset="undated"),
    ]
    snap = snapshot_from_objects([node("a")], pods)
    assert set(snap.running) == {"ns/train"}
    assert snap.running["ns/train"].started_at == datetime(2026, 12, 1, 4, 30, tzinfo=UTC)
    path = tmp_path / "snap.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [node("a"), *pods]}))
    assert load_snapshot([path]).running == snap.running


def test_running_jobsets_take_their_expected_duration_from_jobset_objects(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    def jobset_object(name: str, duration: str) -> dict[str, Any]:
        return {
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "metadata": {
                "name": name,
                "namespace": "ns",
                "annotations": {"placer.dev/expected-duration": duration},
            },
            "spec": {"replicatedJobs": []},
        }

    p1 = pod("p1", "a", jobset="train")
    p1["status"]["startTime"] = "2026-12-01T04:30:00Z"
    items = [
        node("a"),
        p1,
        pod("p2", "a", jobset="odd"),
        jobset_object("train", "90m"),
        jobset_object("odd", "soon"),
        jobset_object("pending", "1h"),
    ]
    for suffix in (".json", ".yaml"):
        path = tmp_path / f"snap{suffix}"
        path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
        running = load_snapshot([path]).running
        assert set(running) == {"ns/train"}  # not "pending": it holds no node
        assert running["ns/train"].expected_duration_s == 5400
        assert running["ns/train"].duration_source == "annotation"
        assert running["ns/train"].started_at is not None
        # a dump of what runs, not the user's request: logged (file, JobSet, field), not exit 2
        assert f"{path}: ns/odd: metadata.annotations[placer.dev/expected-duration]" in caplog.text
        assert "ns/odd" not in running or running["ns/odd"].expected_duration_s is None


def test_a_pod_labeled_for_no_valid_jobset_uses_capacity_but_holds_no_domain() -> None:
    """Issue 22: anyone may label a pod; a JobSet label naming no valid JobSet (upper case, `_`)
    must not become a JobSet key, nor stop a controller that reads the cluster every cycle."""
    node = {
        "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}},
        "status": {"allocatable": {"cpu": "8", "pods": "110"}},
    }

    def pod(name: str, jobset: str) -> dict[str, object]:
        return {
            "metadata": {
                "name": name,
                "namespace": "ml",
                "labels": {"jobset.sigs.k8s.io/jobset-name": jobset},
            },
            "spec": {"nodeName": "n1", "containers": [{"resources": {"requests": {"cpu": "1"}}}]},
            "status": {"phase": "Running", "startTime": "2026-01-01T00:00:00Z"},
        }

    snapshot = snapshot_from_objects([node], [pod("a", "Not_A_JobSet"), pod("b", "train")])
    [n1] = snapshot.nodes
    assert n1.free["cpu"] == Decimal(6)
    assert n1.jobsets == ("ml/train",)
    assert set(snapshot.running) == {"ml/train"}


def test_a_running_jobsets_priority_on_a_node_is_its_highest_pods() -> None:
    """A pod's priority is `spec.priority` (set at admission), else JobSet's priority label on
    the pod, else its PriorityClass: per node, the JobSet's usage carries its pods' highest."""
    admitted = pod("a-0", "a", jobset="a", limits={"google.com/tpu": "1"})
    admitted["spec"]["priority"] = 20
    labelled = pod("a-1", "a", jobset="a", limits={"google.com/tpu": "1"})
    labelled["metadata"]["labels"]["jobset.sigs.k8s.io/priority"] = "5"
    only_label = pod("b-0", "a", jobset="b", limits={"google.com/tpu": "1"})
    only_label["metadata"]["labels"]["jobset.sigs.k8s.io/priority"] = "-7"
    by_class = pod("c-0", "a", jobset="c", limits={"google.com/tpu": "1"})
    by_class["spec"]["priorityClassName"] = "high"
    high: dict[str, Any] = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass"}
    high |= {"metadata": {"name": "high"}, "value": 100}
    snap = snapshot_from_objects([node("a")], [admitted, labelled, only_label, by_class], [high])
    usage = snap.node("a").jobset_usage
    assert {k: u.priority for k, u in usage.items()} == {"ns/a": 20, "ns/b": -7, "ns/c": 100}
