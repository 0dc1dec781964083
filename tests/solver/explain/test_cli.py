"""`placer explain` end to end through `placer.cli.main`: output, JSON shape, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from placer.model.jobset.parse import load_jobsets
from placer.model.options import SolveOptions
from placer.model.plan import Plan
from placer.model.snapshots.load import load_snapshot
from placer.solver.check.checker import check
from tests.cli.inputs import jobset_manifest, write_cluster, write_jobsets
from tests.helpers.cli import command

REPO = Path(__file__).resolve().parents[3]
FAST = ["--workers", "1", "--time-limit", "5"]


run = command("explain")


def one_line_error(err: str, *fragments: str) -> None:
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("placer: error: "), err
    for f in fragments:
        assert f in lines[0], (f, lines[0])


@pytest.fixture
def inputs(tmp_path: Path) -> tuple[Path, Path]:
    cluster = write_cluster(tmp_path, pools=3)
    jobsets = write_jobsets(
        tmp_path,
        jobset_manifest("first", namespace="team-a", replicas=2),
        jobset_manifest("second", namespace="team-b", replicas=2),
    )
    return cluster, jobsets


def test_table_explains_an_unplaced_jobset(
    capsys: pytest.CaptureFixture[str], inputs: tuple[Path, Path]
) -> None:
    cluster, jobsets = inputs
    code, out, err = run(capsys, "--cluster", cluster, *FAST, jobsets, "team-b/second")
    assert code == 0, err
    assert out.startswith("team-b/second: unschedulable (priority 0)\n")
    assert "    2  taken by same-priority JobSets in this plan (team-a/first)\n" in out
    assert "conflicting requirements (minimal)" in out
    assert "  - team-a/first stays admitted (same priority 0, earlier in the queue)" in out
    assert "  - run workers with 1 replicas instead of 2: tpu-pool-" in out
    assert out.rstrip().splitlines()[-1].startswith("solver cpsat: ")


def test_json_document(capsys: pytest.CaptureFixture[str], inputs: tuple[Path, Path]) -> None:
    cluster, jobsets = inputs
    code, out, _ = run(
        capsys, "--cluster", cluster, *FAST, "--format", "json", jobsets, "team-b/second"
    )
    assert code == 0
    doc = json.loads(out)
    assert set(doc) == {
        "jobset",
        "status",
        "priority",
        "reason",
        "whatif",
        "kueue",
        "jobs",
        "replicated_jobs",
        "conflict",
        "remedies",
        "notes",
        "never",
        "expected_start_seconds",
        "reserved_domains",
        "reserved_nodes",
        "waits_for",
        "past_max_wait",
        "solver",
    }
    assert (doc["jobset"], doc["status"]) == ("team-b/second", "unschedulable")
    assert doc["expected_start_seconds"] is None  # no time-aware planning asked for
    assert doc["never"] == ""  # fewer replicas would fit: it is short, not ruled out for good
    rj = doc["replicated_jobs"][0]
    assert (rj["name"], rj["needed"], rj["available"], rj["total"]) == ("workers", 2, 1, 3)
    assert [r["kind"] for r in doc["conflict"]["requirements"]] == ["replicas", "admitted"]
    remedy = doc["remedies"][0]
    assert remedy["kind"] == "fewer-replicas" and remedy["verified"] is True
    assert remedy["jobs"][0]["domain"]["key"] == "cloud.google.com/gke-nodepool"


def test_whatif_flags_apply_in_order(
    capsys: pytest.CaptureFixture[str], inputs: tuple[Path, Path], tmp_path: Path
) -> None:
    cluster, jobsets = inputs
    more = tmp_path / "more.yaml"
    more.write_text(
        "kind: ClusterDescription\n"
        "pools:\n"
        "- name: extra-{i}\n"
        "  hosts: 2\n"
        "  labels: {cloud.google.com/gke-tpu-topology: 2x4}\n"
        "  allocatable: {cpu: '24', google.com/tpu: '4', pods: '110'}\n"
    )
    code, out, _ = run(
        capsys,
        "--cluster",
        cluster,
        *FAST,
        "--add-pool",
        more,
        "--format",
        "json",
        jobsets,
        "team-b/second",
    )
    assert code == 0
    doc = json.loads(out)
    assert doc["status"] == "placed"
    assert doc["whatif"] == [f"added 2 nodes from {more}"]
    code, out, _ = run(
        capsys,
        "--cluster",
        cluster,
        *FAST,
        "--remove",
        "team-a/first",
        "--drain",
        "tpu-pool-0-host-1",
        "--format",
        "json",
        jobsets,
        "team-b/second",
    )
    doc = json.loads(out)
    assert doc["whatif"] == [
        "removed pending JobSet team-a/first from the queue",
        "drained 1 node (tpu-pool-0-host-1)",
    ]
    assert doc["status"] == "placed"
    # the plan explain describes is the plan `placer plan` makes, and it is valid
    snap = load_snapshot([cluster])
    queue = load_jobsets([jobsets])
    plan = Plan.model_validate(
        {
            "solver": doc["solver"],
            "jobsets": [
                {
                    "namespace": "team-b",
                    "name": "second",
                    "status": "placed",
                    "accelerators": 16,
                    "jobs": doc["jobs"],
                }
            ],
        }
    )
    assert check(plan, snap, [q for q in queue if q.key == "team-b/second"], SolveOptions()) == []


@pytest.mark.parametrize(
    ("argv", "fragments"),
    [
        pytest.param(
            ["nope/x"], ["nope/x", "NAMESPACE/NAME", "not among the 2 JobSets"], id="unknown"
        ),
        pytest.param(
            ["--drain", "ghost", "team-b/second"], ["--drain", "no node named 'ghost'"], id="drain"
        ),
        pytest.param(["--remove", "x/y", "team-b/second"], ["x/y", "--remove"], id="remove"),
        pytest.param(
            ["--add-pool", "missing.yaml", "team-b/second"], ["missing.yaml"], id="add-pool"
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str],
    inputs: tuple[Path, Path],
    argv: list[str],
    fragments: list[str],
) -> None:
    cluster, jobsets = inputs
    flags = [a for a in argv if a.startswith("--")]
    rest = [a for a in argv if a not in flags]
    options = []
    if flags:
        options = [flags[0], rest.pop(0)]
    code, _, err = run(capsys, "--cluster", cluster, *FAST, *options, jobsets, *rest)
    assert code == 2
    one_line_error(err, *fragments)


def test_bundled_example(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(
        capsys,
        "--cluster",
        REPO / "examples/clusters/tpu-v5e-v6e.yaml",
        *FAST,
        REPO / "examples/jobsets/queue",
        "research/ablation",
    )
    assert code == 0, err
    assert "    2  held by running research/finetune-v5e\n" in out
    assert "wait for running research/pretrain-v6e to finish" in out


def test_long_conflicts_are_cut_short_in_the_table() -> None:
    from placer.model.plan import SolverReport
    from placer.render.explain import MAX_OTHERS, render_explanation
    from placer.solver.explain import Conflict, Explanation, Requirement

    own = Requirement(id="replicas:w", kind="replicas", jobset="a/t", text="a/t w: all")
    others = [
        Requirement(id=f"admitted:a/{k}", kind="admitted", jobset=f"a/{k}", text=f"a/{k} stays")
        for k in range(20)
    ]
    e = Explanation(
        jobset="a/t",
        status="unschedulable",
        conflict=Conflict(status="conflict", requirements=[own, *others], text="x"),
        solver=SolverReport(name="cpsat", status="OPTIMAL"),
    )
    out = render_explanation(e)
    assert "  - a/t w: all\n" in out
    assert f"  - a/{MAX_OTHERS - 2} stays\n" in out and f"  - a/{MAX_OTHERS - 1} stays" not in out
    assert f"  - ... and {20 - MAX_OTHERS + 1} more JobSets stay admitted" in out
