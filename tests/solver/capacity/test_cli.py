"""`placer capacity` end to end through `placer.cli.main`: output, JSON shape, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from placer.model.cluster import ClusterSnapshot
from placer.model.jobset.parse import load_jobsets
from placer.model.options import SolveOptions
from placer.model.plan import Plan
from placer.model.priorities import PriorityClasses
from placer.solver.capacity.catalog import load_catalog
from placer.solver.check.checker import check
from tests.cli.inputs import jobset_manifest, write_cluster, write_jobsets
from tests.helpers.cli import command

REPO = Path(__file__).resolve().parents[3]
FAST = ["--workers", "1", "--time-limit", "5"]
CATALOG = REPO / "examples" / "catalog.yaml"


run = command("capacity")


@pytest.fixture
def inputs(tmp_path: Path) -> tuple[Path, Path]:
    cluster = write_cluster(tmp_path, pools=5)
    jobsets = write_jobsets(
        tmp_path,
        jobset_manifest("two", namespace="team-a", replicas=2),
        jobset_manifest("one", namespace="team-b", replicas=1),
    )
    return cluster, jobsets


def test_table(capsys: pytest.CaptureFixture[str], inputs: tuple[Path, Path]) -> None:
    cluster, jobsets = inputs
    code, out, err = run(capsys, "--cluster", cluster, *FAST, jobsets)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split() == ["JOBSET", "ACCELERATORS/COPY", "MORE", "COPIES", "CHECKED"]
    assert lines[1].split() == ["team-a/two", "16", "2", "yes"]
    assert lines[2].split() == ["team-b/one", "8", "5", "yes"]
    assert "team-a/two: copy 3 does not fit: workers: needs 2 domains" in out
    assert "largest mix that fits together: 40 accelerators (OPTIMAL, checked: yes)" in out


def test_json_and_whatif(capsys: pytest.CaptureFixture[str], inputs: tuple[Path, Path]) -> None:
    cluster, jobsets = inputs
    code, out, _ = run(
        capsys,
        "--cluster",
        cluster,
        *FAST,
        "--drain",
        "cloud.google.com/gke-nodepool=tpu-pool-4",
        "--format",
        "json",
        jobsets,
    )
    assert code == 0
    doc = json.loads(out)
    assert set(doc) == {"whatif", "shapes", "mix", "domain_types", "notes"}
    assert doc["whatif"] == ["drained 2 nodes (cloud.google.com/gke-nodepool=tpu-pool-4)"]
    assert [(s["jobset"], s["copies"]) for s in doc["shapes"]] == [
        ("team-a/two", 2),
        ("team-b/one", 4),
    ]
    assert doc["mix"]["accelerators"] == 32
    row = doc["domain_types"][0]
    assert (row["key"], row["domains"], row["free"], row["stranded"]) == (
        "cloud.google.com/gke-nodepool",
        4,
        32,
        0,
    )


def test_cheapest_from_the_bundled_catalogue(capsys: pytest.CaptureFixture[str]) -> None:
    queue = REPO / "examples/jobsets/queue"
    code, out, err = run(
        capsys, "--cheapest", "--catalog", CATALOG, *FAST, "--format", "json", queue
    )
    assert code == 0, err
    doc = json.loads(out)
    assert doc["status"] == "OPTIMAL"
    assert [(p["type"], p["count"]) for p in doc["pools"]] == [
        ("tpu-v5e-2x4", 6),
        ("tpu-v6e-4x4", 4),
    ]
    assert doc["price_per_hour"] == pytest.approx(6 * 9.6 + 4 * 43.2)
    plan = Plan.model_validate(doc["plan"])
    assert all(o.status == "placed" for o in plan.jobsets)
    catalog = load_catalog([CATALOG])
    nodes = [*catalog.expand(1, 6), *catalog.expand(3, 4)]
    snapshot = ClusterSnapshot(nodes=tuple(nodes), levels=tuple(catalog.levels))
    jobsets = load_jobsets([queue], priorities=PriorityClasses(catalog.priorityClasses))
    assert check(plan, snapshot, jobsets, SolveOptions()) == []


def test_cheapest_table_on_top_of_a_cluster(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(
        capsys,
        "--cheapest",
        "--catalog",
        CATALOG,
        "--cluster",
        REPO / "examples/clusters/tpu-v5e-v6e.yaml",
        *FAST,
        REPO / "examples/jobsets/queue",
    )
    assert code == 0, err
    assert out.splitlines()[0].split()[:2] == ["POOL", "TYPE"]
    assert "total 52.80 per hour (OPTIMAL)" in out
    assert "plan on the existing cluster plus these pools:" in out


@pytest.mark.parametrize(
    ("argv", "fragments"),
    [
        pytest.param([], ["--cluster"], id="no-cluster"),
        pytest.param(["--cheapest"], ["--catalog"], id="cheapest-without-catalog"),
        pytest.param(["--cheapest", "--catalog", "nope.yaml"], ["nope.yaml"], id="missing-catalog"),
        pytest.param(
            ["--catalog", str(CATALOG)], ["only used with --cheapest"], id="catalog-alone"
        ),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str],
    inputs: tuple[Path, Path],
    argv: list[str],
    fragments: list[str],
) -> None:
    _, jobsets = inputs
    code, _, err = run(capsys, *argv, *FAST, jobsets)
    assert code == 2
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("placer: error: "), err
    for f in fragments:
        assert f in lines[0]


def test_bad_catalogue_names_the_field(
    capsys: pytest.CaptureFixture[str], inputs: tuple[Path, Path], tmp_path: Path
) -> None:
    _, jobsets = inputs
    bad = tmp_path / "catalog.yaml"
    bad.write_text(
        "kind: NodePoolCatalog\npoolTypes:\n"
        "- {name: x, pricePerHour: -1, maxCount: 1, pool: {name: 'x-{i}'}}\n"
    )
    code, _, err = run(capsys, "--cheapest", "--catalog", bad, *FAST, jobsets)
    assert code == 2
    assert err.startswith(f"placer: error: {bad}: NodePoolCatalog: poolTypes[0].pricePerHour")
