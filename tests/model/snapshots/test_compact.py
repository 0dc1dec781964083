"""The compact ClusterDescription: pool expansion, templates, overrides, running load, errors."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from placer.model.cluster import ClusterSnapshot
from placer.model.errors import InputError
from placer.model.scheduling import Taint
from placer.model.snapshots.compact import (
    add_pools,
    expand_pools,
    parse_description,
)
from placer.model.snapshots.templates import render_template

POOL = "cloud.google.com/gke-nodepool"
TPU_POOL = {
    "name": "v5e-{i}",
    "count": 3,
    "hosts": 2,
    "nodeName": "gke-{pool}-host-{h}",
    "labels": {"cloud.google.com/gke-tpu-topology": "2x4", "block": "b{i//2}"},
    "allocatable": {"cpu": "224", "memory": "400Gi", "google.com/tpu": 4, "pods": 110},
    "taints": [{"key": "google.com/tpu", "value": "present", "effect": "NoSchedule"}],
}


def describe(**extra: Any) -> dict[str, Any]:
    return {"kind": "ClusterDescription", "pools": [TPU_POOL], **extra}


def test_expand_pools_names_labels_and_capacity() -> None:
    nodes = expand_pools([TPU_POOL], source="d.yaml")
    assert [n.name for n in nodes] == [f"gke-v5e-{i}-host-{h}" for i in range(3) for h in range(2)]
    first = nodes[0]
    assert first.labels == {
        POOL: "v5e-0",
        "block": "b0",
        "cloud.google.com/gke-tpu-topology": "2x4",
        "kubernetes.io/hostname": "gke-v5e-0-host-0",
    }
    assert [n.labels["block"] for n in nodes] == ["b0", "b0", "b0", "b0", "b1", "b1"]
    assert first.allocatable == {
        "cpu": 224,
        "memory": 400 * 2**30,
        "google.com/tpu": 4,
        "pods": 110,
    }
    assert first.free == first.allocatable
    assert first.taints == (Taint(key="google.com/tpu", value="present", effect="NoSchedule"),)
    assert all(n.usable and n.jobsets == () for n in nodes)


def test_pool_defaults_and_options() -> None:
    [only] = expand_pools([{"name": "solo"}])
    assert (only.name, only.labels) == (
        "solo-0",
        {POOL: "solo", "kubernetes.io/hostname": "solo-0"},
    )
    nodes = expand_pools(
        [
            {
                "name": "gpu-{i}",
                "count": 2,
                "start": 5,
                "hosts": 3,
                "nodeName": "h{n:03d}",
                "poolLabel": None,
                "ready": False,
                "labels": {"kubernetes.io/hostname": "fixed", "flag": True, "num": 7},
            }
        ]
    )
    assert [n.name for n in nodes] == [f"h{k:03d}" for k in range(6)]
    assert nodes[3].labels == {"kubernetes.io/hostname": "fixed", "flag": "true", "num": "7"}
    assert not any(n.ready for n in nodes)


@pytest.mark.parametrize(
    ("template", "values", "expected"),
    [
        pytest.param("pool-{i}", {"i": 3}, "pool-3", id="plain"),
        pytest.param("b{i//4}-sb{i%4}", {"i": 9}, "b2-sb1", id="div-mod"),
        pytest.param("{h+1}", {"h": 0}, "1", id="plus"),
        pytest.param("{i//2*2}", {"i": 5}, "4", id="chain"),
        pytest.param("{ i // 2 }", {"i": 5}, "2", id="spaces"),
        pytest.param("n{h:02d}", {"h": 7}, "n07", id="format"),
        pytest.param("{pool}-x", {"pool": "p"}, "p-x", id="string"),
        pytest.param("no-fields", {}, "no-fields", id="literal"),
    ],
)
def test_render_template(template: str, values: dict[str, Any], expected: str) -> None:
    assert render_template(template, values) == expected


@pytest.mark.parametrize(
    ("template", "values", "words"),
    [
        pytest.param("{j}", {"i": 1}, "bad template field", id="unknown-var"),
        pytest.param("{i ** 2}", {"i": 1}, "bad template field", id="unsupported-op"),
        pytest.param("{i//0}", {"i": 1}, "division by zero", id="div-zero"),
        pytest.param("{pool+1}", {"pool": "p"}, "arithmetic", id="arith-on-name"),
        pytest.param("{i:q}", {"i": 1}, "bad format spec", id="bad-format"),
    ],
)
def test_render_template_errors(template: str, values: dict[str, Any], words: str) -> None:
    with pytest.raises(InputError, match=words) as e:
        render_template(template, values, source="d.yaml", field="pools[0].name")
    assert (e.value.source, e.value.field) == ("d.yaml", "pools[0].name")


@given(st.integers(0, 10_000), st.integers(1, 64))
def test_block_templates_partition_pools(i: int, k: int) -> None:
    assert render_template(f"{{i//{k}}}-{{i%{k}}}", {"i": i}) == f"{i // k}-{i % k}"


def test_description_levels_classes_and_source() -> None:
    snap = parse_description(
        describe(levels=[POOL, "kubernetes.io/hostname"], priorityClasses={"high": 1000}),
        source="d.yaml",
    )
    assert isinstance(snap, ClusterSnapshot)
    assert (snap.levels, snap.priority_classes, snap.source) == (
        (POOL, "kubernetes.io/hostname"),
        {"high": 1000},
        "d.yaml",
    )
    assert len(snap.nodes) == 6


def test_node_overrides() -> None:
    snap = parse_description(
        describe(
            nodes=[
                {"name": "gke-v5e-1-host-1", "ready": False},
                {
                    "name": "gke-v5e-2-host-0",
                    "unschedulable": True,
                    "labels": {"extra": "x"},
                    "taints": [{"key": "maint", "effect": "NoExecute"}],
                    "allocatable": {"google.com/tpu": 2},
                },
            ]
        )
    )
    assert [n.name for n in snap.nodes if not n.usable] == ["gke-v5e-1-host-1", "gke-v5e-2-host-0"]
    n = snap.node("gke-v5e-2-host-0")
    assert n.labels["extra"] == "x" and n.labels[POOL] == "v5e-2"
    assert n.taints[-1] == Taint(key="maint", effect="NoExecute")
    assert n.allocatable["google.com/tpu"] == 2 == n.free["google.com/tpu"]
    assert n.allocatable["cpu"] == 224


def test_an_override_may_not_repeat_its_pools_taint() -> None:
    """The API server stores a node's taints unique by key and effect, so an override adding the
    pool's own taint again describes a node no cluster holds; another effect is a new taint."""
    again = {"key": "google.com/tpu", "value": "other", "effect": "NoSchedule"}
    with pytest.raises(InputError, match="listed twice") as refused:
        parse_description(describe(nodes=[{"name": "gke-v5e-1-host-1", "taints": [again]}]))
    assert refused.value.field == "nodes[0].taints[0]"
    other = {**again, "effect": "NoExecute"}
    snap = parse_description(describe(nodes=[{"name": "gke-v5e-1-host-1", "taints": [other]}]))
    assert len(snap.node("gke-v5e-1-host-1").taints) == 2


def test_running_jobsets_take_capacity_and_hold_nodes() -> None:
    snap = parse_description(
        describe(
            running=[
                {"pools": ["*"], "requests": {"cpu": "1"}, "pods": 2},
                {"jobset": "team-b/other", "pools": ["v5e-0"], "hostPorts": [8471]},
                {
                    "jobset": "solo",
                    "nodes": ["gke-v5e-2-host-1"],
                    "requests": {"google.com/tpu": 1},
                },
            ]
        )
    )
    held = snap.node("gke-v5e-0-host-1")
    assert held.jobsets == ("team-b/other",)
    assert held.free == {
        "cpu": 223,
        "memory": Decimal(400 * 2**30),
        "google.com/tpu": 0,
        "pods": 107,
    }
    assert held.used_host_ports == ((8471, "TCP"),)
    partial = snap.node("gke-v5e-2-host-1")
    assert partial.jobsets == ("default/solo",)
    assert partial.free["google.com/tpu"] == 3
    untouched = snap.node("gke-v5e-1-host-0")
    assert untouched.jobsets == () and untouched.free["google.com/tpu"] == 4
    assert untouched.free["pods"] == 108 and untouched.free["cpu"] == 223


def test_add_pools() -> None:
    base = parse_description(describe())
    bigger = add_pools(
        base,
        [{"name": "extra-{i}", "count": 2, "hosts": 2, "allocatable": {"google.com/tpu": 4}}],
        source="--add-pool",
    )
    assert len(bigger.nodes) == len(base.nodes) + 4
    assert bigger.nodes[:6] == base.nodes
    with pytest.raises(InputError, match="already exists") as e:
        add_pools(base, [TPU_POOL], source="--add-pool")
    assert e.value.source == "--add-pool"


@pytest.mark.parametrize(
    ("doc", "field", "words"),
    [
        pytest.param(describe(pool=[]), "pool", "Extra inputs", id="typo-top-level"),
        pytest.param(
            {"kind": "ClusterDescription", "pools": [{**TPU_POOL, "hostz": 2}]},
            "pools[0].hostz",
            "Extra inputs",
            id="typo-in-pool",
        ),
        pytest.param(
            {"kind": "ClusterDescription", "pools": [{**TPU_POOL, "hosts": 0}]},
            "pools[0].hosts",
            "greater than or equal",
            id="zero-hosts",
        ),
        pytest.param(
            {"kind": "ClusterDescription", "pools": [{**TPU_POOL, "allocatable": {"cpu": "lots"}}]},
            "pools[0].allocatable.cpu",
            "invalid quantity",
            id="bad-quantity",
        ),
        pytest.param(
            {"kind": "ClusterDescription", "pools": [{**TPU_POOL, "nodeName": "same"}]},
            "pools[0].nodeName",
            "generated twice",
            id="duplicate-node",
        ),
        pytest.param(
            {"kind": "ClusterDescription", "pools": [{**TPU_POOL, "name": "p-{x}"}]},
            "pools[0].name",
            "bad template",
            id="bad-template",
        ),
        pytest.param(
            describe(nodes=[{"name": "nope", "ready": False}]),
            "nodes[0].name",
            "no node named",
            id="unknown-node-override",
        ),
        pytest.param(
            describe(running=[{"jobset": "a/b", "pools": ["v6e-*"]}]),
            "running[0].pools[0]",
            "no pool matches",
            id="unknown-pool",
        ),
        pytest.param(
            describe(running=[{"jobset": "a/b"}]),
            "running[0]",
            "no pools and no nodes",
            id="running-nowhere",
        ),
        pytest.param(
            describe(running=[{"nodes": ["x"]}]),
            "running[0].nodes[0]",
            "no node matches",
            id="running-unknown-node",
        ),
        pytest.param(
            describe(running=[{"pools": ["v5e-0"], "requests": {"cpu": "?"}}]),
            "running[0].requests.cpu",
            "invalid quantity",
            id="running-bad-quantity",
        ),
    ],
)
def test_description_errors(doc: dict[str, Any], field: str, words: str) -> None:
    with pytest.raises(InputError) as e:
        parse_description(doc, source="c.yaml")
    assert e.value.source == "c.yaml"
    assert e.value.field == field
    assert words in e.value.message
