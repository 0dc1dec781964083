"""Hostile and out-of-range input through `placer.cli.main`, in process: one input class per test,
each an exit 2 with one line naming the file, the object and the field (issue 10, item 4).

Before these limits, each of these inputs ended in a traceback (RecursionError, MemoryError after
half a minute, an overflow inside CP-SAT), ran for minutes, or was planned although the API
server would refuse it.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from placer.cli import main
from placer.model.read.limits import MAX_PODS_PER_JOBSET, MAX_PODS_PER_PLAN
from tests.cli.inputs import jobset_manifest, write_cluster, write_jobsets

REPO = Path(__file__).resolve().parents[2]
CATALOG = REPO / "examples" / "catalog.yaml"
FAST = ["--workers", "1", "--time-limit", "5"]
CONTAINER = "spec.replicatedJobs[0].template.spec.template.spec.containers[0]"


def run(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert out == ""
    return code, err


def plan(capsys: pytest.CaptureFixture[str], tmp_path: Path, jobsets: Path) -> tuple[int, str]:
    return run(capsys, "plan", "--cluster", write_cluster(tmp_path), *FAST, jobsets)


def with_resources(resources: dict[str, Any], name: str = "x") -> dict[str, Any]:
    manifest = jobset_manifest(name)
    pod = manifest["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    pod["containers"][0]["resources"] = resources
    return manifest


# --- nesting depth ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "text"),
    [
        pytest.param("deep.yaml", "a: " + "[" * 200_000 + "]" * 200_000, id="yaml-flow"),
        pytest.param("deep2.yaml", "- " * 150 + "x", id="yaml-block"),
        pytest.param("deep.json", '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}", id="json"),
    ],
)
def test_deeply_nested_files(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str, text: str
) -> None:
    path = tmp_path / name
    path.write_text(text)
    code, err = plan(capsys, tmp_path, path)
    assert (code, err) == (2, f"placer: error: {path}: nested deeper than 100 levels\n")


def test_a_jobset_nested_past_the_limit_inside_the_parser_guard(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    manifest = jobset_manifest("deep")
    value: list[Any] = []
    manifest["spec"]["extra"] = value
    for _ in range(150):
        value.append([])
        value = value[0]
    path = tmp_path / "deep.json"
    path.write_text(json.dumps(manifest))
    code, err = plan(capsys, tmp_path, path)
    expected = f"placer: error: {path}: default/deep: nested deeper than 100 levels\n"
    assert (code, err) == (2, expected)


# --- pods per JobSet and per plan --------------------------------------------------------------


def test_replicas_beyond_int32(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write_jobsets(tmp_path, jobset_manifest("huge", replicas=10**12))
    code, err = plan(capsys, tmp_path, path)
    assert code == 2
    assert err == (
        f"placer: error: {path}: default/huge: spec.replicatedJobs[0].replicas: "
        "Expected `int` <= 2147483647\n"
    )


def test_pods_per_jobset(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    replicas = MAX_PODS_PER_JOBSET // 2 + 1  # two pods per child Job
    path = write_jobsets(tmp_path, jobset_manifest("big", replicas=replicas))
    code, err = plan(capsys, tmp_path, path)
    assert code == 2
    assert err == (
        f"placer: error: {path}: default/big: spec.replicatedJobs[0].replicas: asks for "
        f"{2 * replicas} pods; at most {MAX_PODS_PER_JOBSET} per JobSet\n"
    )


def test_pods_per_plan(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    each = MAX_PODS_PER_JOBSET // 2  # child Jobs of two pods: the per-JobSet maximum
    count = MAX_PODS_PER_PLAN // MAX_PODS_PER_JOBSET + 1
    manifests = [jobset_manifest(f"js-{i}", replicas=each) for i in range(count)]
    path = write_jobsets(tmp_path, *manifests)
    code, err = plan(capsys, tmp_path, path)
    assert code == 2
    assert err == (
        f"placer: error: {path}: default/js-{count - 1}: the JobSets ask for "
        f"{count * MAX_PODS_PER_JOBSET} pods together; at most {MAX_PODS_PER_PLAN} per plan\n"
    )


# --- integers in range ---------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [str(2**64), str(2**31), "-1"])
def test_seed_out_of_range(capsys: pytest.CaptureFixture[str], tmp_path: Path, seed: str) -> None:
    jobsets = write_jobsets(tmp_path, jobset_manifest("a"))
    with pytest.raises(SystemExit) as exited:
        main(["plan", "--cluster", str(write_cluster(tmp_path)), "--seed", seed, str(jobsets)])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    problem = "must be >= 0" if seed == "-1" else "must be at most 2147483647"
    problem += f", got {seed}"
    assert err == (f"placer plan: error: argument --seed: {problem} (see 'placer plan --help')\n")


def test_priority_beyond_int32(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    manifest = jobset_manifest("p")
    manifest["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["priority"] = (
        2**40
    )
    path = write_jobsets(tmp_path, manifest)
    code, err = plan(capsys, tmp_path, path)
    assert code == 2
    assert err == (
        f"placer: error: {path}: default/p: spec.replicatedJobs[0].template.spec.template.spec."
        "priority: Expected `int` <= 2147483647\n"
    )


# --- Kubernetes' rules for requests ------------------------------------------------------------


@pytest.mark.parametrize(
    ("resources", "field", "message"),
    [
        pytest.param(
            {"requests": {"cpu": "-1"}},
            "resources.requests.cpu",
            "must be greater than or equal to 0, got '-1'",
            id="negative-cpu",
        ),
        pytest.param(
            {"limits": {"google.com/tpu": "0.5"}},
            "resources.limits.google.com/tpu",
            "must be a whole number (an extended resource), got '0.5'",
            id="fractional-tpu",
        ),
        pytest.param(
            {"limits": {"nvidia.com/gpu": "500m"}},
            "resources.limits.nvidia.com/gpu",
            "must be a whole number (an extended resource), got '500m'",
            id="milli-gpu",
        ),
        pytest.param(
            {"requests": {"google.com/tpu": "2"}, "limits": {"google.com/tpu": "4"}},
            "resources.requests.google.com/tpu",
            "must equal the limit 4 (extended resources are not overcommitted)",
            id="tpu-request-below-limit",
        ),
        pytest.param(
            {"requests": {"memory": "2Gi"}, "limits": {"memory": "1Gi"}},
            "resources.requests.memory",
            "must be less than or equal to the limit 1073741824",
            id="request-over-limit",
        ),
        pytest.param(
            {"requests": {"cpu": "1e30"}},
            "resources.requests.cpu",
            "must be at most 9223372036854775807, got '1e30'",
            id="quantity-over-int64",
        ),
    ],
)
def test_requests_follow_the_api_server(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    resources: dict[str, Any],
    field: str,
    message: str,
) -> None:
    path = write_jobsets(tmp_path, with_resources(resources))
    code, err = plan(capsys, tmp_path, path)
    assert (code, err) == (2, f"placer: error: {path}: default/x: {CONTAINER}.{field}: {message}\n")


def description(**pool: Any) -> dict[str, Any]:
    base = {"name": "p-{i}", "count": 1, "hosts": 2, "allocatable": {"cpu": "8"}}
    return {"kind": "ClusterDescription", "pools": [{**base, **pool}]}


@pytest.mark.parametrize(
    ("pool", "field", "message"),
    [
        pytest.param(
            {"allocatable": {"cpu": "-4"}},
            "pools[0].allocatable.cpu",
            "must be greater than or equal to 0, got '-4'",
            id="negative-allocatable",
        ),
        pytest.param(
            {"allocatable": {"google.com/tpu": "1.5"}},
            "pools[0].allocatable.google.com/tpu",
            "must be a whole number (an extended resource), got '1.5'",
            id="fractional-tpu-allocatable",
        ),
        pytest.param(
            {"count": 60_000},
            "pools[0].count",
            "the pools make 120000 nodes so far; at most 100000",
            id="too-many-nodes",
        ),
        pytest.param(
            {"hosts": 100_000},
            "pools[0].hosts",
            "Input should be less than or equal to 4096",
            id="too-many-hosts",
        ),
        pytest.param(
            {"nodeName": "{pool}-{h:0999999999d}"},
            "pools[0].nodeName",
            "format width over 253 in '{h:0999999999d}'",
            id="format-width",
        ),
    ],
)
def test_compact_descriptions_follow_the_same_rules(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    pool: dict[str, Any],
    field: str,
    message: str,
) -> None:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump(description(**pool)))
    jobsets = write_jobsets(tmp_path, jobset_manifest("a"))
    code, err = run(capsys, "plan", "--cluster", cluster, *FAST, jobsets)
    assert (code, err) == (2, f"placer: error: {cluster}: {field}: {message}\n")


# --- the node-pool catalog ---------------------------------------------------------------------


def catalog_with(tmp_path: Path, **changes: Any) -> Path:
    doc = yaml.safe_load(CATALOG.read_text())
    first = copy.deepcopy(doc["poolTypes"][0])
    for key, value in changes.items():
        if key == "hosts":
            first["pool"]["hosts"] = value
        else:
            first[key] = value
    doc["poolTypes"][0] = first
    path = tmp_path / "catalog.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.mark.parametrize(
    ("changes", "where", "message"),
    [
        pytest.param(
            {"pricePerHour": float("inf")},
            "NodePoolCatalog: poolTypes[0].pricePerHour",
            "Input should be a finite number",
            id="infinite-price",
        ),
        pytest.param(
            {"pricePerHour": 1e300},
            "NodePoolCatalog: poolTypes[0].pricePerHour",
            "Input should be less than or equal to 1000000",
            id="huge-price",
        ),
        pytest.param(
            {"maxCount": 10**7},
            "NodePoolCatalog: poolTypes[0].maxCount",
            "Input should be less than or equal to 100000",
            id="huge-max-count",
        ),
        pytest.param(
            {"hosts": 100_000},
            "poolTypes[0].pool.hosts",
            "100000 hosts in one pool; at most 4096",
            id="huge-pool",
        ),
        pytest.param(
            {"hosts": 4096, "maxCount": 100},
            "poolTypes[0].maxCount",
            "the catalog offers 409600 nodes so far (maxCount x hosts); at most 100000",
            id="catalog-too-large",
        ),
    ],
)
def test_catalog_limits(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    changes: dict[str, Any],
    where: str,
    message: str,
) -> None:
    catalog = catalog_with(tmp_path, **changes)
    jobsets = write_jobsets(tmp_path, jobset_manifest("a"))
    code, err = run(capsys, "capacity", "--cheapest", "--catalog", catalog, *FAST, jobsets)
    assert (code, err) == (2, f"placer: error: {catalog}: {where}: {message}\n")
