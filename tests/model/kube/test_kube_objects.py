"""The snapshot structs read JSON bytes and Python mappings alike, on odd input too.

Each case is a valid object with up to two faults anywhere in it: a part dropped, a value of the
wrong type, or a non-string key (YAML allows those). Whatever the one-call JSON decoder accepts the
reader of mappings accepts with the same fields; whatever one refuses the other refuses, the reader
with an error naming the file, the object and the field. Footprints computed once per signature
must be what `pod_request` and `pod_host_ports` give, pod by pod.
"""

from __future__ import annotations

import copy
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from placer.model.errors import InputError
from placer.model.kube.go_json import as_go_reads
from placer.model.kube.objects import (
    NodeCondition,
    NodeObject,
    NodeSpec,
    NodeStatus,
    ObjectMeta,
    PodObject,
    TaintSpec,
    decode_kubectl_list,
    pod_footprint,
    pod_host_ports,
    read_as,
    read_object,
)
from placer.model.pod_requests import pod_request
from placer.model.resources import PODS
from placer.model.snapshots.load import load_snapshot, snapshot_from_objects
from placer.model.snapshots.pod_usage import footprints

ODD = st.sampled_from(
    [None, 1, 1.5, True, "", "x", "Sometimes", [], {}, ["x"], {"a": 1}, {"a": "b"}, {1: "x"}]
)


LABELS = st.dictionaries(st.sampled_from(["a", "b", "kubernetes.io/hostname"]), st.just("v"))
META = st.fixed_dictionaries(
    {"name": st.sampled_from(["n1", "n2"]), "labels": LABELS},
    optional={"namespace": st.just("team"), "uid": st.just("u")},
)
TAINT = st.fixed_dictionaries(
    {"key": st.just("google.com/tpu"), "effect": st.sampled_from(["NoSchedule", "NoExecute"])},
    optional={"value": st.just("present")},
)
CONDITION = st.fixed_dictionaries(
    {
        "type": st.sampled_from(["Ready", "DiskPressure"]),
        "status": st.sampled_from(["True", "False"]),
    },
    optional={"reason": st.just("KubeletReady")},
)
# Every part present: the faults drop parts, so absent ones are covered too.
VALID_NODE = st.fixed_dictionaries(
    {
        "kind": st.just("Node"),
        "metadata": META,
        "spec": st.fixed_dictionaries(
            {"taints": st.lists(TAINT, min_size=1, max_size=2)},
            optional={"unschedulable": st.booleans(), "podCIDR": st.just("10.0.0.0/24")},
        ),
        "status": st.fixed_dictionaries(
            {
                "allocatable": st.just({"cpu": "8", "pods": "110"}),
                "conditions": st.lists(CONDITION, min_size=1, max_size=2),
            }
        ),
    }
)
VALID_POD = st.fixed_dictionaries(
    {
        "kind": st.just("Pod"),
        "metadata": META,
        "spec": st.fixed_dictionaries({"nodeName": st.just("n1"), "containers": st.just([])}),
        "status": st.fixed_dictionaries({"phase": st.sampled_from(["Running", "Succeeded"])}),
    }
)


def _places(o: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside `o`."""
    out = [path]
    items = o.items() if isinstance(o, dict) else enumerate(o) if isinstance(o, list) else ()
    for k, v in items:
        out += _places(v, (*path, k))
    return out


@st.composite
def faulty(draw: st.DrawFn, valid: st.SearchStrategy[dict[str, Any]]) -> dict[Any, Any]:
    """A valid object with up to two faults: a part dropped, a value of the wrong type or an
    unknown word, or a non-string key (YAML allows those; every schema level refuses them)."""
    o = copy.deepcopy(draw(valid))
    for _ in range(draw(st.sampled_from([0, 1, 1, 1, 2]))):
        places = _places(o)
        kind = draw(st.sampled_from(["drop", "odd", "word", "key"]))
        if kind == "key":
            target = _at(o, draw(st.sampled_from([p for p in places if type(_at(o, p)) is dict])))
            target[7] = "seven"
            continue
        inner = [p for p in places if p]
        if kind == "word":
            inner = [p for p in inner if type(_at(o, p)) is str] or inner
        if not inner:
            continue
        path = draw(st.sampled_from(inner))
        parent = _at(o, path[:-1])
        if kind == "drop" and type(parent) is dict:
            del parent[path[-1]]
        else:
            # a copy: ODD's lists and dicts are shared by every example, and a later fault
            # writing into one would change the strategy itself (or nest it in itself)
            parent[path[-1]] = "Sometimes" if kind == "word" else copy.deepcopy(draw(ODD))
    return o


def _at(o: Any, path: tuple[Any, ...]) -> Any:
    for k in path:
        o = o[k]
    return o


NODE = faulty(VALID_NODE)
POD = faulty(VALID_POD)


def decoded(o: Any) -> Any:
    """`o` as the one-call JSON decoder reads it inside a kubectl List, or None if it refuses."""
    items = decode_kubectl_list(json.dumps({"kind": "List", "items": [o]}).encode())
    return None if items is None else items[0]


def outcome(o: Any) -> Any:
    """`o` as the object-by-object reader reads it, or its error's parts."""
    try:
        return read_object(o, "f.json")
    except InputError as e:
        return (e.message, e.source, e.obj, e.field, e.code)


SETTINGS = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def string_keys(o: Any) -> bool:
    """No mapping anywhere in `o` has a non-string key (as after the JSON parser)."""
    if isinstance(o, dict):
        return all(isinstance(k, str) and string_keys(v) for k, v in o.items())
    if isinstance(o, list):
        return all(string_keys(v) for v in o)
    return True


def agrees(o: Any) -> None:
    """The JSON decoder and the reader of mappings (YAML, watch caches) are one schema: what the
    reader refuses the decoder refuses, the reader with an error naming the file, the object and
    a field; what the decoder accepts the reader accepts with the same fields. Only nulls part
    them: the decoder refuses them (its caller then reads object by object) and the reader takes
    them as Go's JSON decoding does, so it reads `o` as the decoder reads `as_go_reads(o)`."""
    read = outcome(o)
    if isinstance(read, tuple):
        message, source, obj, _field, code = read
        assert (source, code) == ("f.json", "schema") and obj and message
        assert "\n" not in message
        if string_keys(o):
            assert decoded(o) is None
    elif read is None:  # not a Node, Pod or PriorityClass: skipped, and no List of them
        assert decoded(o) is None
    elif string_keys(o):  # else JSON could not say it
        as_given = decoded(o)
        assert same(decoded(as_go_reads(o)) if as_given is None else as_given, read)


def same(a: Any, b: Any) -> bool:
    """The same struct type (a List's items are of subclasses that carry their `kind`), and the
    same fields."""
    return isinstance(a, type(b)) and msgspec.structs.astuple(a) == msgspec.structs.astuple(b)


@SETTINGS
@given(NODE)
def test_node_decoding_agrees_with_reading(o: dict[Any, Any]) -> None:
    agrees(o)


@SETTINGS
@given(POD)
def test_pod_decoding_agrees_with_reading(o: dict[Any, Any]) -> None:
    agrees(o)


FULL_NODE = {
    "kind": "Node",
    "metadata": {"name": "n1", "namespace": "x", "labels": {"a": "b"}, "uid": "u"},
    "spec": {"taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}], "unschedulable": True},
    "status": {
        "allocatable": {"cpu": "8"},
        "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
    },
}
FULL_POD = {
    "kind": "Pod",
    "metadata": {"name": "p", "namespace": "ns", "labels": {"a": "b"}},
    "spec": {"nodeName": "n1", "containers": [{"name": "c"}]},
    "status": {"phase": "Running"},
}
ABSENT = object()
"""Marks a part to drop."""
ODD_VALUES = [None, 1, 1.5, True, "", "Sometimes", [], {}, ["x"], {"a": 1}, {1: "x"}]


def single_faults(o: dict[str, Any]) -> list[Any]:
    """Every one-fault variant of `o`: each part dropped, set to each odd value, or given a
    non-string key."""
    out: list[Any] = []
    for path in _places(o):
        if type(_at(o, path)) is dict:
            variant = copy.deepcopy(o)
            _at(variant, path)[7] = "seven"
            out.append(variant)
        if not path or path == ("kind",):
            continue
        for value in [ABSENT, *ODD_VALUES]:
            variant = copy.deepcopy(o)
            parent = _at(variant, path[:-1])
            if value is ABSENT and type(parent) is dict:
                del parent[path[-1]]
            elif value is not ABSENT:
                parent[path[-1]] = value
            out.append(variant)
    return out


@pytest.mark.parametrize(
    "base", [pytest.param(FULL_NODE, id="node"), pytest.param(FULL_POD, id="pod")]
)
def test_every_single_fault_agrees(base: Any) -> None:
    variants = single_faults(base)
    assert len(variants) > 100
    for o in variants:
        agrees(o)


def test_typical_objects_read_only_what_placer_uses() -> None:
    node = read_object(FULL_NODE, "f.json")
    assert node == NodeObject(
        metadata=ObjectMeta(name="n1", namespace="x", labels={"a": "b"}),
        spec=NodeSpec(
            taints=(TaintSpec(key="k", value="v", effect="NoSchedule"),), unschedulable=True
        ),
        status=NodeStatus(
            allocatable={"cpu": "8"}, conditions=[NodeCondition(type="Ready", status="True")]
        ),
    )
    pod = read_object(FULL_POD, "f.json")
    assert isinstance(pod, PodObject)
    assert (pod.metadata.namespace, pod.spec.nodeName, pod.status.phase) == ("ns", "n1", "Running")
    assert read_object({"kind": "Service", "metadata": {"name": "s"}}, "f.json") is None


@pytest.mark.parametrize(
    ("obj", "key", "field"),
    [
        pytest.param(
            {"kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}, "spec": {"nodeName": 3}},
            "ns/p",
            "spec.nodeName",
            id="wrong-type",
        ),
        pytest.param({"kind": "Node", "metadata": {}}, "Node/?", "metadata.name", id="missing"),
        pytest.param(
            {"kind": "Node", "metadata": {"name": "n"}, "spec": {"taints": [{"key": "k"}]}},
            "Node/n",
            "spec.taints[0].effect",
            id="missing-nested",
        ),
        pytest.param(
            {"kind": "Node", "metadata": {"name": "n", "labels": {7: "x"}}},
            "Node/n",
            "metadata.labels",
            id="key",
        ),
    ],
)
def test_errors_name_the_object_and_field(obj: Any, key: str, field: str) -> None:
    with pytest.raises(InputError) as e:
        read_object(obj, "c.json")
    assert (e.value.source, e.value.obj, e.value.field, e.value.code) == (
        "c.json",
        key,
        field,
        "schema",
    )
    assert str(e.value).startswith(f"c.json: {key}: {field}: ")


def test_objects_handed_in_need_no_kind() -> None:
    """A watch cache's list items carry no `kind`: the caller names the struct."""
    node = {"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "1"}}}
    assert read_as(NodeObject, node, "cache").metadata.name == "n1"
    with pytest.raises(InputError) as e:
        read_as(NodeObject, {"metadata": {"name": 1}}, "cache")
    assert (e.value.obj, e.value.field) == ("Node/1", "metadata.name")


def test_a_list_with_other_kinds_is_not_decoded_in_one_call() -> None:
    """The loader then reads it object by object, and skips what it does not know."""
    items = [FULL_NODE, {"kind": "Service", "metadata": {"name": "s"}}]
    assert decode_kubectl_list(json.dumps({"kind": "List", "items": items}).encode()) is None
    assert decode_kubectl_list(json.dumps(FULL_NODE).encode()) is None
    assert decode_kubectl_list(b"{not json") is None
    deep = "[" * 100_000 + "]" * 100_000
    nested = f'{{"kind":"List","items":[{{"kind":"Node","metadata":{{"name":"n"}},"x":{deep}}}]}}'
    assert decode_kubectl_list(nested.encode()) is None
    listed = decode_kubectl_list(json.dumps({"kind": "NodeList", "items": [FULL_NODE]}).encode())
    assert listed is not None and same(listed[0], read_object(FULL_NODE, "f.json"))


RESOURCES = st.sampled_from(
    [
        {"requests": {"cpu": "1", "memory": "2Gi"}},
        {"requests": {"cpu": 1}},
        {"requests": {"cpu": 1.0}},
        {"requests": {"cpu": "500m"}, "limits": {"google.com/tpu": "4"}},
        {"limits": {"cpu": "2"}},
        {"requests": {"cpu": "0"}},
    ]
)
PORTS = st.sampled_from(
    [[], [{"containerPort": 8471}], [{"containerPort": 80, "hostPort": 80, "protocol": "UDP"}]]
)
RESTART = st.sampled_from(["Always", "Never"])
HOST_NETWORK = st.sampled_from([True, False, "true"])
OVERHEAD = st.sampled_from([{}, {"cpu": "100m"}, {"cpu": 1}])
CONTAINER = st.fixed_dictionaries(
    {"name": st.just("c")},
    optional={"resources": RESOURCES, "ports": PORTS, "restartPolicy": RESTART},
)
POD_SPEC = st.fixed_dictionaries(
    {"containers": st.lists(CONTAINER, min_size=1, max_size=2)},
    optional={
        "initContainers": st.lists(CONTAINER, min_size=1, max_size=2),
        "hostNetwork": HOST_NETWORK,
        "overhead": OVERHEAD,
        "nodeName": st.sampled_from(["n1", "n2"]),
    },
)
CONTAINER_FIELDS = {"resources": RESOURCES, "ports": PORTS, "restartPolicy": RESTART}
SPEC_FIELDS = {"hostNetwork": HOST_NETWORK, "overhead": OVERHEAD, "nodeName": st.just("n3")}


@st.composite
def near_duplicate_specs(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Pod specs that each differ from an earlier one in one thing: the memo's hard cases."""
    specs: list[dict[str, Any]] = [draw(POD_SPEC)]
    for _ in range(draw(st.integers(1, 10))):
        spec = copy.deepcopy(draw(st.sampled_from(specs)))
        containers = spec.get(draw(st.sampled_from(["containers", "initContainers"]))) or []
        if containers and draw(st.booleans()):
            container = draw(st.sampled_from(containers))
            name = draw(st.sampled_from(sorted(CONTAINER_FIELDS)))
            container[name] = draw(CONTAINER_FIELDS[name])
        else:
            name = draw(st.sampled_from(sorted(SPEC_FIELDS)))
            spec[name] = draw(SPEC_FIELDS[name])
        specs.append(spec)
    return specs


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(near_duplicate_specs())
def test_footprints_match_computing_each_pod(specs: list[dict[str, Any]]) -> None:
    """Pods with equal signatures have equal footprints, so computing one per signature (as the
    loader does) gives what computing each pod gives."""
    footprint = footprints()
    for i, spec in enumerate(specs):
        pod = read_as(PodObject, {"metadata": {"name": f"p{i}"}, "spec": spec}, "f.json")
        request, ports = footprint("f.json", pod)
        expected = {**pod_request(spec), PODS: Decimal(1)}
        assert (request, list(request)) == (expected, list(expected))
        assert ports == pod_host_ports(spec)
        assert pod_footprint(pod, "f.json") == (request, ports)


def test_footprint_errors_name_each_bad_pod() -> None:
    footprint = footprints()
    good = {"containers": [{"resources": {"requests": {"cpu": "1"}}}]}
    bad = {"containers": [{"resources": {"requests": {"cpu": True}}}]}

    def pod(name: str, spec: Any) -> PodObject:
        return read_as(
            PodObject, {"metadata": {"name": name, "namespace": "ns"}, "spec": spec}, "f"
        )

    assert footprint("f", pod("a", good))[0] == {"cpu": 1, PODS: 1}
    for name in ("b", "c"):
        with pytest.raises(InputError) as e:
            footprint("f", pod(name, bad))
        assert (e.value.obj, e.value.field) == (
            f"ns/{name}",
            "spec.containers[0].resources.requests.cpu",
        )


def test_loaders_check_keys_of_yaml_and_of_objects_handed_in(tmp_path: Path) -> None:
    """A YAML file may hold a non-string key, and objects handed in may too: the structs refuse
    them wherever they come from."""
    node = {"kind": "Node", "metadata": {"name": "n1", 7: "seven"}}
    path = tmp_path / "nodes.yaml"
    path.write_text(yaml.safe_dump({"kind": "List", "items": [node]}))
    with pytest.raises(InputError) as e:
        load_snapshot([path])
    assert (e.value.obj, e.value.field, e.value.code) == ("Node/n1", "metadata", "schema")
    with pytest.raises(InputError) as e:
        snapshot_from_objects([node], [], source="cluster.json")
    assert (e.value.obj, e.value.field) == ("Node/n1", "metadata")
    pod = {"kind": "Pod", "metadata": {"name": "p", 7: "x"}, "spec": {"nodeName": "n1"}}
    ok = {"kind": "Node", "metadata": {"name": "n1"}}
    with pytest.raises(InputError) as e:
        snapshot_from_objects([ok], [pod], source="cluster.json")
    assert (e.value.obj, e.value.field) == ("default/p", "metadata")


@pytest.mark.parametrize(
    ("labels", "field"),
    [
        pytest.param({"a": "x", "team": 3}, "metadata.labels.team", id="int-value"),
        pytest.param({"t": True}, "metadata.labels.t", id="bool-value"),
    ],
)
def test_a_bad_label_value_is_named_by_its_key(labels: dict[str, object], field: str) -> None:
    obj = {"kind": "Node", "metadata": {"name": "n1", "labels": labels}}
    with pytest.raises(InputError) as e:
        read_object(obj, "nodes.json")
    assert (e.value.source, e.value.obj, e.value.field) == ("nodes.json", "Node/n1", field)
