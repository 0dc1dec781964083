"""`placer plan` end to end, in process through `placer.cli.main` (plus one real subprocess)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from placer.cli import main
from placer.model.jobset.parse import load_jobsets
from placer.model.options import SolveOptions
from placer.model.plan import Plan
from placer.model.snapshots.load import load_snapshot
from placer.solver.check.checker import check
from placer.solver.registry import SOLVER_NAMES
from tests.cli.inputs import NODEPOOL, jobset_manifest, write_cluster, write_jobsets
from tests.helpers.cli import command

REPO = Path(__file__).resolve().parents[2]
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
FAST = ["--workers", "1", "--time-limit", "5"]

SOLVERS = list(SOLVER_NAMES)


run = command("plan")


def assert_one_line_error(err: str, *fragments: str) -> None:
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("placer: error: ")
    for f in fragments:
        assert f in lines[0], (f, lines[0])


def check_plan(doc: dict[str, Any], cluster: Path, jobsets: Path) -> None:
    """Run the independent checker on what the CLI printed."""
    snapshot = load_snapshot([cluster])
    requests = load_jobsets([jobsets], priorities=snapshot.priorities)
    assert check(Plan.model_validate(doc), snapshot, requests, SolveOptions()) == []


# -- bad input: exit 2, one line naming the file, no traceback -----------------------------------


def test_yaml_syntax_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cluster = write_cluster(tmp_path)
    bad = tmp_path / "broken.yaml"
    bad.write_text("apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: [x\n")
    code, out, err = run(capsys, "--cluster", cluster, bad)
    assert code == 2
    assert out == ""
    assert_one_line_error(err, str(bad))


def test_missing_jobset_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope.yaml"
    code, _, err = run(capsys, "--cluster", write_cluster(tmp_path), missing)
    assert code == 2
    assert_one_line_error(err, str(missing), "no such file")


def test_missing_cluster_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "cluster-nope.json"
    jobsets = write_jobsets(tmp_path, jobset_manifest("a"))
    code, _, err = run(capsys, "--cluster", missing, jobsets)
    assert code == 2
    assert_one_line_error(err, str(missing), "no such file")


def test_negative_replicas(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    jobsets = write_jobsets(tmp_path, jobset_manifest("neg", namespace="team-a", replicas=-1))
    code, _, err = run(capsys, "--cluster", write_cluster(tmp_path), jobsets)
    assert code == 2
    assert_one_line_error(err, str(jobsets), "team-a/neg", "replicas")


@pytest.mark.parametrize(
    ("container", "field"),
    [
        pytest.param({"name": "c", "resources": 5}, "containers[0].resources", id="resources"),
        pytest.param("c", "containers[0]", id="container"),
    ],
)
def test_malformed_running_pod_in_snapshot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], container: Any, field: str
) -> None:
    """A bad pod in a kubectl snapshot is named like a bad JobSet: one line, no traceback."""
    cluster = write_cluster(tmp_path)
    snapshot = json.loads(cluster.read_text())
    snapshot["items"].append(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "namespace": "x"},
            "spec": {"nodeName": "tpu-pool-0-host-0", "containers": [container]},
            "status": {"phase": "Running"},
        }
    )
    cluster.write_text(json.dumps(snapshot))
    jobsets = write_jobsets(tmp_path, jobset_manifest("ok", namespace="team-a"))
    code, _, err = run(capsys, "--cluster", cluster, jobsets)
    assert code == 2
    assert_one_line_error(err, str(cluster), "x/p", field)


def test_file_without_jobsets(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {}}
    path = write_jobsets(tmp_path, cm, name="configmap.yaml")
    code, _, err = run(capsys, "--cluster", write_cluster(tmp_path), path)
    assert code == 2
    assert_one_line_error(err, str(path), "no JobSet")


def test_usage_error_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["plan", "--time-limit", "-1", "--cluster", "c.json", "j.yaml"])
    assert e.value.code == 2
    assert "--time-limit" in capsys.readouterr().err


def test_cluster_and_kubeconfig_are_exclusive(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["plan", "--cluster", "c.json", "--kubeconfig", "k", "j.yaml"])
    assert e.value.code == 2
    assert "not allowed with" in capsys.readouterr().err


def test_subprocess_bad_input_prints_no_traceback(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "placer.cli",
            "plan",
            "--cluster",
            str(write_cluster(tmp_path)),
            str(tmp_path / "missing.yaml"),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert_one_line_error(proc.stderr, "missing.yaml")


# -- plans -----------------------------------------------------------------------------------


def _inputs(tmp_path: Path, *, node_selector_strategy: bool = False) -> tuple[Path, Path]:
    """4 pools: team-a/multislice (2 slices) fits; team-b/big (5 slices) can never fit."""
    cluster = write_cluster(tmp_path, pools=4)
    jobsets = write_jobsets(
        tmp_path,
        jobset_manifest(
            "multislice",
            namespace="team-a",
            replicas=2,
            node_selector_strategy=node_selector_strategy,
        ),
        jobset_manifest("big", namespace="team-b", replicas=5),
    )
    return cluster, jobsets


@pytest.mark.parametrize("solver", SOLVERS)
def test_json_output_shape(solver: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cluster, jobsets = _inputs(tmp_path)
    code, out, err = run(
        capsys, "--cluster", cluster, "--solver", solver, *FAST, "--format", "json", jobsets
    )
    assert code == 0, err
    doc = json.loads(out)
    assert set(doc) == {"solver", "jobsets", "preempted"}  # preempted: issue 20
    assert doc["preempted"] == []
    assert doc["solver"]["name"] == solver
    assert {"name", "status", "objective", "bound", "wall_seconds"} <= set(doc["solver"])
    assert "load" in doc["solver"]["phases"]
    by_key = {f"{j['namespace']}/{j['name']}": j for j in doc["jobsets"]}
    assert sorted(by_key) == ["team-a/multislice", "team-b/big"]
    assert len(doc["jobsets"]) == 2
    ms = by_key["team-a/multislice"]
    assert ms["status"] == "placed"
    assert ms["reason"] == ""
    assert sorted(j["name"] for j in ms["jobs"]) == ["multislice-workers-0", "multislice-workers-1"]
    pools = set()
    for job in ms["jobs"]:
        assert job["domain"]["key"] == NODEPOOL
        pools.add(job["domain"]["value"])
        assert sorted(p["index"] for p in job["pods"]) == [0, 1]
        assert all(p["node"].startswith(job["domain"]["value"] + "-host-") for p in job["pods"])
    assert len(pools) == 2, "each child Job gets its own node pool"
    big = by_key["team-b/big"]
    assert big["status"] in ("unschedulable", "partial")
    assert big["reason"]
    check_plan(doc, cluster, jobsets)


@pytest.mark.parametrize("solver", SOLVERS[:2])
def test_table_mentions_each_jobset(
    solver: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster, jobsets = _inputs(tmp_path)
    code, out, _ = run(capsys, "--cluster", cluster, "--solver", solver, *FAST, jobsets)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split()[:2] == ["JOBSET", "STATUS"]
    row = next(line for line in lines if line.startswith("team-a/multislice "))
    assert row.split()[1:4] == ["placed", "0", "2/2"]
    assert any(line.startswith("team-b/big ") for line in lines[1:3])
    assert any(
        line.startswith("team-b/big unschedulable: ") or line.startswith("team-b/big partial: ")
        for line in lines
    )
    # the solver line comes last, wrapped to the terminal's width after its first line
    footer = next(i for i, line in enumerate(lines) if line.startswith("solver "))
    assert lines[footer].startswith(f"solver {solver}: ")
    assert all(line.startswith("  ") for line in lines[footer + 1 :])


@pytest.mark.parametrize("solver", SOLVERS[:1])
def test_yaml_output_equals_json_output(
    solver: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster, jobsets = _inputs(tmp_path)
    args = ("--cluster", cluster, "--solver", solver, *FAST, jobsets)
    _, as_json, _ = run(capsys, *args, "--format", "json")
    _, as_yaml, _ = run(capsys, *args, "--format", "yaml")
    a, b = json.loads(as_json), yaml.safe_load(as_yaml)
    for doc in (a, b):  # wall times differ between runs
        doc["solver"].pop("wall_seconds")
        doc["solver"].pop("phases")
    assert a == b


@pytest.mark.parametrize("solver", SOLVERS[:1])
def test_emit_writes_affinity_patches(
    solver: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster, jobsets = _inputs(tmp_path, node_selector_strategy=True)
    out_dir = tmp_path / "patches"
    code, out, err = run(
        capsys,
        "--cluster",
        cluster,
        "--solver",
        solver,
        *FAST,
        "--format",
        "json",
        "--emit",
        out_dir,
        jobsets,
    )
    assert code == 0, err
    doc = json.loads(out)
    check_plan(doc, cluster, jobsets)
    ms = next(j for j in doc["jobsets"] if j["name"] == "multislice")
    for job in ms["jobs"]:
        path = out_dir / "jobs" / "team-a" / f"{job['name']}.yaml"
        patch = yaml.safe_load(path.read_text())
        terms = patch["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][REQUIRED][
            "nodeSelectorTerms"
        ]
        assert terms == [
            {
                "matchExpressions": [
                    {"key": NODEPOOL, "operator": "In", "values": [job["domain"]["value"]]}
                ]
            }
        ]
    assert not (out_dir / "jobs" / "team-b").exists(), "nothing to pin for an unplaced JobSet"
    assert os.access(out_dir / "jobs.sh", os.X_OK)
    # node-selector strategy: every node of both chosen pools gets the child Job's label
    nodes = {
        n["node"]: n["patch"]["metadata"]["labels"]["alpha.jobset.sigs.k8s.io/namespaced-job"]
        for n in yaml.safe_load((out_dir / "nodes.yaml").read_text())
    }
    expected = {
        f"{job['domain']['value']}-host-{h}": f"team-a_{job['name']}"
        for job in ms["jobs"]
        for h in range(2)
    }
    assert nodes == expected
    assert "kubectl taint node" in (out_dir / "nodes.sh").read_text()
    assert "wrote" in err


def test_a_jobset_naming_no_class_is_planned_at_the_clusters_default_priority(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two pools, two JobSets of two slices each: the one without a class has the cluster's
    `globalDefault` class (500), above the one that names `low` (100) though queued after it,
    so it is the one placed."""
    cluster = write_cluster(tmp_path, pools=2)
    listing = json.loads(cluster.read_text())
    listing["items"] += [
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
         "metadata": {"name": name}, "value": value, "globalDefault": default}
        for name, value, default in (("low", 100, False), ("standard", 500, True))
    ]  # fmt: skip
    cluster.write_text(json.dumps(listing))
    named = jobset_manifest("named")
    named["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"][
        "priorityClassName"
    ] = "low"
    jobsets = write_jobsets(tmp_path, named, jobset_manifest("plain"))
    code, out, _ = run(capsys, "--cluster", cluster, jobsets, "-o", "json", *FAST)
    assert code == 0
    outcomes = {o["name"]: (o["priority"], o["status"]) for o in json.loads(out)["jobsets"]}
    assert outcomes == {"plain": (500, "placed"), "named": (100, "unschedulable")}
