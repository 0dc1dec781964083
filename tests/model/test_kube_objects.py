"""The fast Node/Pod readers agree with the pydantic schemas they shortcut, on odd input too.

Each case is a valid object with up to two faults anywhere in it: a part dropped, a value of the
wrong type, or a non-string key (YAML allows those). Whatever the fast path accepts the
schema must accept with the same fields; whatever it refuses must fail with the schema's error.
`PodFootprints` must give what `pod_request` and `pod_host_ports` give, pod by pod.
"""

from __future__ import annotations

import copy
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from placer.model import kube_objects as ko
from placer.model.errors import InputError
from placer.model.jobset import pod_host_ports
from placer.model.kube_objects import PodFootprints, read_node, read_pod
from placer.model.resources import PODS, pod_request
from placer.model.snapshot import load_snapshot, snapshot_from_objects

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
            parent[path[-1]] = "Sometimes" if kind == "word" else draw(ODD)
    return o


def _at(o: Any, path: tuple[Any, ...]) -> Any:
    for k in path:
        o = o[k]
    return o


NODE = faulty(VALID_NODE)
POD = faulty(VALID_POD)


def schema_node(o: Any) -> ko.NodeFields:
    n = ko._NodeObj.model_validate(o)
    return ko.NodeFields(
        name=n.metadata.name,
        labels=n.metadata.labels,
        taints=tuple((t.key, t.value, t.effect) for t in n.spec.taints),
        unschedulable=n.spec.unschedulable,
        allocatable=n.status.allocatable,
        conditions=tuple((c.type, c.status) for c in n.status.conditions),
    )


def schema_pod(o: Any) -> ko.PodFields:
    p = ko._PodObj.model_validate(o)
    return ko.PodFields(p.metadata.namespace, p.metadata.labels, p.spec.nodeName, p.status.phase)


def outcome(read: Any, o: Any) -> Any:
    try:
        return read(o, "f.json")
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


def agrees(fast: Any, read: Any, schema: Any, o: Any) -> None:
    """The fast path (keys checked, and unchecked where they are all strings) and the reader
    agree with the schema; a refused object is the schema's InputError."""
    try:
        expected: Any = schema(o)
    except ValidationError:
        expected = None
    checked = fast(o, True)
    assert checked is None or checked == expected, "the fast path accepted what the schema refuses"
    if string_keys(o):
        unchecked = fast(o, False)
        assert unchecked is None or unchecked == expected
        assert outcome(lambda x, s: read(x, s, keys_are_strings=True), o) == outcome(read, o)
    if expected is None:
        assert isinstance(outcome(read, o), tuple)
    else:
        assert read(o, "f.json") == expected


@SETTINGS
@given(NODE)
def test_node_reader_agrees_with_the_schema(o: dict[Any, Any]) -> None:
    agrees(ko._fast_node, read_node, schema_node, o)


@SETTINGS
@given(POD)
def test_pod_reader_agrees_with_the_schema(o: dict[Any, Any]) -> None:
    agrees(ko._fast_pod, read_pod, schema_pod, o)


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
        if not path:
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
    ("base", "fast", "read", "schema"),
    [
        pytest.param(FULL_NODE, ko._fast_node, read_node, schema_node, id="node"),
        pytest.param(FULL_POD, ko._fast_pod, read_pod, schema_pod, id="pod"),
    ],
)
def test_every_single_fault_agrees_with_the_schema(
    base: Any, fast: Any, read: Any, schema: Any
) -> None:
    variants = single_faults(base)
    assert len(variants) > 100
    for o in variants:
        agrees(fast, read, schema, o)


def test_typical_objects_take_the_fast_path() -> None:
    node = {
        "kind": "Node",
        "metadata": {"name": "n1", "labels": {"a": "b"}},
        "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]},
        "status": {
            "allocatable": {"cpu": "8"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }
    pod = {"kind": "Pod", "metadata": {"name": "p"}, "spec": {"nodeName": "n1"}, "status": {}}
    for check_keys in (True, False):
        assert ko._fast_node(node, check_keys) == ko.NodeFields(
            "n1", {"a": "b"}, (("k", "", "NoSchedule"),), False, {"cpu": "8"}, (("Ready", "True"),)
        )
        assert ko._fast_pod(pod, check_keys) == ko.PodFields("default", {}, "n1", None)


def test_schema_errors_name_the_object_and_field() -> None:
    bad = {"kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}, "spec": {"nodeName": 3}}
    with pytest.raises(InputError) as e:
        read_pod(bad, "c.json")
    assert (e.value.source, e.value.obj, e.value.field, e.value.code) == (
        "c.json",
        "ns/p",
        "spec.nodeName",
        "schema",
    )


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
    specs = [draw(POD_SPEC)]
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
    footprint = PodFootprints()
    for i, spec in enumerate(specs):
        pod = {"metadata": {"name": f"p{i}"}, "spec": spec}
        request, ports = footprint(pod, "f.json")
        expected = {**pod_request(spec), PODS: Decimal(1)}
        assert (request, list(request)) == (expected, list(expected))
        assert ports == pod_host_ports(spec)


def test_footprint_errors_name_each_bad_pod() -> None:
    footprint = PodFootprints()
    good = {"containers": [{"resources": {"requests": {"cpu": "1"}}}]}
    bad = {"containers": [{"resources": {"requests": {"cpu": True}}}]}
    assert footprint({"metadata": {"name": "a"}, "spec": good}, "f")[0] == {"cpu": 1, PODS: 1}
    for name in ("b", "c"):
        with pytest.raises(InputError) as e:
            footprint({"metadata": {"name": name, "namespace": "ns"}, "spec": bad}, "f")
        assert (e.value.obj, e.value.field) == (
            f"ns/{name}",
            "spec.containers[0].resources.requests.cpu",
        )


def test_loaders_check_keys_unless_the_json_parser_made_the_objects(tmp_path: Path) -> None:
    """A YAML file may hold a non-string key, and objects handed in may too, whatever their
    source is called: both still go through the schema's check."""
    node = {"kind": "Node", "metadata": {"name": "n1", 7: "seven"}}
    path = tmp_path / "nodes.yaml"
    path.write_text(yaml.safe_dump({"kind": "List", "items": [node]}))
    with pytest.raises(InputError) as e:
        load_snapshot([path])
    assert (e.value.obj, e.value.field, e.value.code) == ("Node/n1", "metadata[7]", "schema")
    with pytest.raises(InputError) as e:
        snapshot_from_objects([node], [], source="cluster.json")
    assert (e.value.obj, e.value.field) == ("Node/n1", "metadata[7]")
    pod = {"kind": "Pod", "metadata": {"name": "p", 7: "x"}, "spec": {"nodeName": "n1"}}
    ok = {"kind": "Node", "metadata": {"name": "n1"}}
    with pytest.raises(InputError) as e:
        snapshot_from_objects([ok], [pod], source="cluster.json")
    assert (e.value.obj, e.value.field) == ("default/p", "metadata[7]")
