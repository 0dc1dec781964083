"""The fast Node/Pod readers agree with the pydantic schemas they shortcut, on odd input too.

Each case builds an object that is mostly valid with, here and there, a value of the wrong type, a
missing or null part, or a non-string key (YAML allows those). Whatever the fast path accepts the
schema must accept with the same fields; whatever it refuses must fail with the schema's error.
`PodFootprints` must give what `pod_request` and `pod_host_ports` give, pod by pod.
"""

from __future__ import annotations

import copy
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from placer.model import kube_objects as ko
from placer.model.errors import InputError
from placer.model.jobset import pod_host_ports
from placer.model.kube_objects import PodFootprints, read_node, read_pod
from placer.model.resources import PODS, pod_request

ABSENT = object()
"""Marks a key left out of the object."""

ODD = st.sampled_from([None, 1, 1.5, True, "", "x", [], {}, ["x"], {"a": 1}, {1: "x"}])


def maybe(good: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly the good value; sometimes absent or odd."""
    return st.one_of(good, good, good, st.just(ABSENT), ODD)


def obj(**fields: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    """A dict of the given fields, absent ones dropped."""
    return st.fixed_dictionaries(fields).map(
        lambda values: {k: v for k, v in values.items() if v is not ABSENT}
    )


def odd_keys(s: st.SearchStrategy[dict[Any, Any]]) -> st.SearchStrategy[dict[Any, Any]]:
    """Sometimes with a non-string key, which every schema level refuses."""
    return st.one_of(s, s, s, s.map(lambda d: {**d, 7: "seven"}))


LABELS = st.dictionaries(st.sampled_from(["a", "b", "kubernetes.io/hostname"]), st.just("v"))
META = odd_keys(
    obj(
        name=maybe(st.sampled_from(["n1", "n2"])),
        namespace=maybe(st.sampled_from(["default", "team"])),
        labels=maybe(odd_keys(LABELS) | st.just({"a": 1})),
        uid=st.just("u"),
    )
)
TAINT = odd_keys(
    obj(
        key=maybe(st.just("google.com/tpu")),
        value=maybe(st.just("present")),
        effect=maybe(st.sampled_from(["NoSchedule", "NoExecute", "Sometimes"])),
    )
)
CONDITION = odd_keys(
    obj(
        type=maybe(st.sampled_from(["Ready", "DiskPressure"])),
        status=maybe(st.sampled_from(["True", "False"])),
    )
)
NODE = odd_keys(
    obj(
        kind=st.just("Node"),
        metadata=maybe(META),
        spec=maybe(
            odd_keys(
                obj(
                    taints=maybe(st.lists(st.one_of(TAINT, TAINT, ODD), max_size=2)),
                    unschedulable=maybe(st.booleans()),
                    podCIDR=st.just("10.0.0.0/24"),
                )
            )
        ),
        status=maybe(
            odd_keys(
                obj(
                    allocatable=maybe(odd_keys(st.just({"cpu": "8", "pods": "110"}))),
                    conditions=maybe(st.lists(st.one_of(CONDITION, CONDITION, ODD), max_size=2)),
                )
            )
        ),
    )
)
POD = odd_keys(
    obj(
        kind=st.just("Pod"),
        metadata=maybe(META),
        spec=maybe(odd_keys(obj(nodeName=maybe(st.just("n1")), containers=st.just([])))),
        status=maybe(odd_keys(obj(phase=maybe(st.sampled_from(["Running", "Succeeded"]))))),
    )
)


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


SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(NODE)
def test_node_reader_agrees_with_the_schema(o: dict[Any, Any]) -> None:
    fast = ko._fast_node(o)
    try:
        expected: Any = schema_node(o)
    except ValidationError:
        assert fast is None, "the fast path accepted what the schema refuses"
        expected = None
    if fast is not None:
        assert fast == expected
    if expected is None:
        assert isinstance(outcome(read_node, o), tuple)
    else:
        assert read_node(o, "f.json") == expected


@SETTINGS
@given(POD)
def test_pod_reader_agrees_with_the_schema(o: dict[Any, Any]) -> None:
    fast = ko._fast_pod(o)
    try:
        expected: Any = schema_pod(o)
    except ValidationError:
        assert fast is None, "the fast path accepted what the schema refuses"
        expected = None
    if fast is not None:
        assert fast == expected
    if expected is None:
        assert isinstance(outcome(read_pod, o), tuple)
    else:
        assert read_pod(o, "f.json") == expected


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
    assert ko._fast_node(node) == ko.NodeFields(
        "n1", {"a": "b"}, (("k", "", "NoSchedule"),), False, {"cpu": "8"}, (("Ready", "True"),)
    )
    assert ko._fast_pod(pod) == ko.PodFields("default", {}, "n1", None)


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
