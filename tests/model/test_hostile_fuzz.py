"""Any value anywhere in a manifest, a Node or a description is a result or one InputError, never
a traceback (issue 22): hypothesis swaps one field of a valid object for a hostile value."""

from __future__ import annotations

import copy
import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from placer.controller.decide.prepare import prepare_jobset
from placer.model.errors import InputError
from placer.model.jobset.parse import parse_jobset, validate_jobset
from placer.model.snapshots.compact import parse_description
from placer.model.snapshots.load import snapshot_from_objects
from tests.cli.inputs import jobset_manifest

HOSTILE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.just(10**5000),
    st.sampled_from([math.nan, math.inf, -math.inf, 1e30, -1e30]),
    st.text(max_size=20),
    st.sampled_from(["", "..", "../x", "a/b", "x\x1b[2J", "NaN", "\u0661\u0662", "a" * 300]),
    st.lists(st.one_of(st.none(), st.integers(), st.text(max_size=5)), max_size=3),
    st.dictionaries(st.text(max_size=5), st.one_of(st.none(), st.integers()), max_size=3),
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for k, v in value.items():
            found += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found += _paths(v, (*prefix, i))
    return found


def _swap(obj: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    node: Any = out
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return out


JOBSET = jobset_manifest("x")
JOBSET["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["affinity"] = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
            ]
        }
    }
}
JOBSET["spec"]["replicatedJobs"][0]["template"]["spec"]["activeDeadlineSeconds"] = 60
NODE = {
    "kind": "Node",
    "metadata": {"name": "n1", "labels": {"pool": "p1", "kubernetes.io/hostname": "n1"}},
    "spec": {"taints": [{"key": "google.com/tpu", "value": "present", "effect": "NoSchedule"}]},
    "status": {"allocatable": {"cpu": "8", "pods": "110"}, "conditions": []},
}
POD = {
    "kind": "Pod",
    "metadata": {"name": "p", "namespace": "ml", "labels": {"jobset.sigs.k8s.io/jobset-name": "j"}},
    "spec": {"nodeName": "n1", "containers": [{"resources": {"requests": {"cpu": "1"}}}]},
    "status": {"phase": "Running", "startTime": "2026-01-01T00:00:00Z"},
}
DESCRIPTION = {
    "kind": "ClusterDescription",
    "levels": ["pool", "kubernetes.io/hostname"],
    "priorityClasses": {"high": 10},
    "pools": [{"name": "p-{i}", "count": 2, "hosts": 2, "labels": {"zone": "z{i}"},
               "allocatable": {"cpu": "8", "google.com/tpu": "4"},
               "taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]}],
    "nodes": [{"name": "p-0-0", "ready": False}],
    "running": [{"jobset": "ml/j", "pools": ["p-*"], "requests": {"cpu": "1"}, "priority": "high"}],
}  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(_paths(JOBSET)), HOSTILE)
def test_a_jobset_with_any_value_anywhere(path: tuple[Any, ...], value: Any) -> None:
    doc = _swap(JOBSET, path, value)
    try:
        parse_jobset(doc, source="x.yaml")
    except InputError as e:
        assert "\n" not in str(e) and len(str(e)) < 3000
    try:  # what `placer prepare` does with each JobSet
        validate_jobset(doc, source="x.yaml")
        prepare_jobset(doc, "gate", source="x.yaml")
        prepare_jobset(doc, "node-labels", exclusive_key="pool", source="x.yaml")
    except InputError:
        pass


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["node", "pod"]), st.data(), HOSTILE)
def test_a_snapshot_with_any_value_anywhere(which: str, data: st.DataObject, value: Any) -> None:
    base = NODE if which == "node" else POD
    obj = _swap(base, data.draw(st.sampled_from(_paths(base))), value)
    nodes, pods = ([obj], [POD]) if which == "node" else ([NODE], [obj])
    try:
        snapshot_from_objects(nodes, pods, source="s.json")
    except InputError as e:
        assert "\n" not in str(e)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(_paths(DESCRIPTION)), HOSTILE)
def test_a_description_with_any_value_anywhere(path: tuple[Any, ...], value: Any) -> None:
    try:
        parse_description(_swap(DESCRIPTION, path, value), source="d.yaml")
    except InputError as e:
        assert "\n" not in str(e)
