"""Topology levels from a Kueue Topology object, and nodes missing a level's label.

A Topology given with --cluster declares the levels (as --levels would); a node lacking one of its
labels takes no pod, and plan and explain say why ("missing topology label <key>").
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from placer.cli import main
from placer.model.errors import InputError
from placer.model.snapshots.load import load_snapshot
from tests.helpers.cli import command

BLOCK = "cloud.com/topology-block"
RACK = "cloud.com/topology-rack"
HOST = "kubernetes.io/hostname"
FAST = ["--workers", "1", "--time-limit", "5"]


def topology(version: str = "v1beta2", levels: Any = None) -> dict[str, Any]:
    spec = {"levels": [{"nodeLabel": k} for k in (BLOCK, RACK, HOST)] if levels is None else levels}
    return {
        "apiVersion": f"kueue.x-k8s.io/{version}",
        "kind": "Topology",
        "metadata": {"name": "default"},
        "spec": spec,
    }


def kube_node(name: str, labels: dict[str, str], cpu: str = "4") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {HOST: name, **labels}},
        "status": {
            "allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def write(tmp_path: Path, name: str, *docs: dict[str, Any]) -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(docs))
    return path


def cluster(tmp_path: Path) -> Path:
    """Block b1: racks r1 (n1) and r2 (n2); n3 in b1 but without a rack label."""
    return write(
        tmp_path,
        "nodes.yaml",
        kube_node("n1", {BLOCK: "b1", RACK: "r1"}),
        kube_node("n2", {BLOCK: "b1", RACK: "r2"}),
        kube_node("n3", {BLOCK: "b1"}, cpu="64"),
    )


def jobset(name: str, pods: int, annotations: dict[str, str]) -> dict[str, Any]:
    pod = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": name, "namespace": "team"},
        "spec": {
            "replicatedJobs": [
                {
                    "name": "w",
                    "replicas": 1,
                    "template": {
                        "spec": {
                            "parallelism": pods,
                            "completions": pods,
                            "template": {"metadata": {"annotations": annotations}, "spec": pod},
                        }
                    },
                }
            ]
        },
    }


REQUIRED_BLOCK = {"kueue.x-k8s.io/podset-required-topology": BLOCK}


@pytest.mark.parametrize("version", ["v1beta1", "v1beta2"])
def test_a_topology_in_a_cluster_file_declares_the_levels(tmp_path: Path, version: str) -> None:
    snap = load_snapshot([cluster(tmp_path), write(tmp_path, "t.yaml", topology(version))])
    assert snap.levels == (BLOCK, RACK, HOST)


@pytest.mark.parametrize(
    ("levels", "field"),
    [
        pytest.param([], "spec.levels", id="empty"),
        pytest.param(None, "spec.levels", id="missing"),
        pytest.param([{"nodeLabel": BLOCK}, {}], "spec.levels[1].nodeLabel", id="no-label"),
        pytest.param([{"nodeLabel": BLOCK}] * 2, "spec.levels[1].nodeLabel", id="twice"),
        pytest.param(
            [{"nodeLabel": f"example.com/l{i}"} for i in range(17)], "spec.levels", id="seventeen"
        ),
        pytest.param(
            [{"nodeLabel": HOST}, {"nodeLabel": RACK}],
            "spec.levels[0].nodeLabel",
            id="hostname-above-a-rack",
        ),
    ],
)
def test_a_topology_without_levels_is_an_input_error(
    tmp_path: Path, levels: Any, field: str
) -> None:
    doc = topology(levels=levels or [])
    if levels is None:
        del doc["spec"]
    path = write(tmp_path, "t.yaml", doc)
    with pytest.raises(InputError) as e:
        load_snapshot([cluster(tmp_path), path])
    assert (e.value.source, e.value.obj, e.value.field) == (str(path), "Topology/default", field)


def test_a_topology_takes_sixteen_levels(tmp_path: Path) -> None:
    """Kueue's limit, not one less: the cluster stores a Topology of 16 levels."""
    levels = [f"example.com/l{i}" for i in range(15)] + [HOST]
    doc = topology(levels=[{"nodeLabel": key} for key in levels])
    snap = load_snapshot([cluster(tmp_path), write(tmp_path, "t.yaml", doc)])
    assert snap.levels == tuple(levels)


plan = command("plan")


def test_an_unknown_level_in_an_annotation_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    jobsets = write(
        tmp_path, "js.yaml", jobset("a", 1, {"kueue.x-k8s.io/podset-required-topology": "zone"})
    )
    topo = write(tmp_path, "t.yaml", topology())
    code, out, err = plan(capsys, "--cluster", cluster(tmp_path), "--cluster", topo, jobsets)
    assert code == 2 and out == ""
    line = err.strip()
    assert "\n" not in line and "Traceback" not in line
    for part in (
        str(jobsets),
        "team/a",
        "podset-required-topology",
        "unknown topology level 'zone'",
    ):
        assert part in line


@pytest.mark.parametrize("solver", ["best-fit", "cpsat"])
def test_a_node_missing_a_level_label_takes_no_pod(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], solver: str
) -> None:
    """Two pods fit on n1 and n2 (racks r1, r2); n3 has room for all but no rack label."""
    jobsets = write(tmp_path, "js.yaml", jobset("fits", 8, REQUIRED_BLOCK))
    topo = write(tmp_path, "t.yaml", topology())
    argv = ["--cluster", cluster(tmp_path), "--cluster", topo, "--solver", solver, *FAST]
    code, out, err = plan(capsys, *argv, "-o", "json", jobsets)
    assert code == 0, err
    nodes = {p["node"] for j in json.loads(out)["jobsets"][0]["jobs"] for p in j["pods"]}
    assert nodes == {"n1", "n2"}


def test_plan_and_explain_name_the_missing_label(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    jobsets = write(tmp_path, "js.yaml", jobset("big", 12, REQUIRED_BLOCK))
    topo = write(tmp_path, "t.yaml", topology())
    argv = ["--cluster", cluster(tmp_path), "--cluster", topo, *FAST]
    code, out, err = plan(capsys, *argv, "-o", "json", jobsets)
    assert code == 0, err
    outcome = json.loads(out)["jobsets"][0]
    assert outcome["status"] == "unschedulable"
    assert f"missing topology label {RACK}" in outcome["reason"]
    code = main(["explain", *map(str, argv), str(jobsets), "team/big"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert f"missing topology label {RACK}" in out
    # without declared levels the same node is used: the rule comes with the Topology
    code, out, err = plan(capsys, "--cluster", cluster(tmp_path), *FAST, "-o", "json", jobsets)
    assert json.loads(out)["jobsets"][0]["status"] == "placed"


def no_hostname_cluster(tmp_path: Path) -> Path:
    """n1 (b1/r1) and n2 (b1/r2), 4 cpus each; n4 in b1/r1 with 64 cpus but no hostname label."""
    n4 = kube_node("n4", {BLOCK: "b1", RACK: "r1"}, cpu="64")
    del n4["metadata"]["labels"][HOST]
    return write(
        tmp_path,
        "nodes.yaml",
        kube_node("n1", {BLOCK: "b1", RACK: "r1"}),
        kube_node("n2", {BLOCK: "b1", RACK: "r2"}),
        n4,
    )


@pytest.mark.parametrize("solver", ["first-fit", "best-fit", "cpsat"])
def test_a_topology_listing_the_hostname_leaves_out_a_node_without_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], solver: str
) -> None:
    """Kueue's `NodeMatchesFlavor` asks every level's label of a node, the hostname too when the
    Topology lists it; when it does not, the hostname is no requirement."""
    jobsets = write(tmp_path, "js.yaml", jobset("big", 12, REQUIRED_BLOCK))
    nodes = no_hostname_cluster(tmp_path)
    listed = write(tmp_path, "t.yaml", topology())
    argv = ["--solver", solver, *FAST, "-o", "json", jobsets]
    code, out, err = plan(capsys, "--cluster", nodes, "--cluster", listed, *argv)
    assert code == 0, err
    outcome = json.loads(out)["jobsets"][0]
    assert outcome["status"] == "unschedulable"
    assert f"missing topology label {HOST}" in outcome["reason"]
    unlisted = write(
        tmp_path, "t2.yaml", topology(levels=[{"nodeLabel": BLOCK}, {"nodeLabel": RACK}])
    )
    for extra in (["--cluster", unlisted], ["--levels", f"{BLOCK},{RACK},{HOST}"]):
        code, out, err = plan(capsys, "--cluster", nodes, *extra, *argv)
        assert code == 0, err
        outcome = json.loads(out)["jobsets"][0]
        assert outcome["status"] == "placed", extra
        assert "n4" in {p["node"] for j in outcome["jobs"] for p in j["pods"]}


def test_explain_names_the_missing_hostname(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    jobsets = write(tmp_path, "js.yaml", jobset("big", 12, REQUIRED_BLOCK))
    argv = [
        "--cluster",
        no_hostname_cluster(tmp_path),
        "--cluster",
        write(tmp_path, "t.yaml", topology()),
    ]
    code = main(["explain", *map(str, argv), *FAST, str(jobsets), "team/big"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert f"1  missing topology label {HOST}" in out
