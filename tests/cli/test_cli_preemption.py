"""`placer plan --preemption`: the flags, `preempts` and `preempted`, one-line input errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.cli import command

REPO = Path(__file__).resolve().parents[2]
CLUSTER = REPO / "examples/clusters/tpu-busy.yaml"
SFT = REPO / "examples/jobsets/queue/01-prod-sft-v5e.yaml"
NOW = "2026-12-01T12:00:00Z"
plan = command("plan")


def test_the_cheapest_victims_are_evicted_whole(capsys: pytest.CaptureFixture[str]) -> None:
    """prod/llm-sft needs 3 slices: evicting eval-a (2 slices) and eval-b (1) costs 10 chip-hours;
    research/sweep (2 slices, an hour lost) costs more, batch/nightly is protected."""
    code, out, _ = plan(
        capsys, "--cluster", CLUSTER, "--now", NOW, "--workers", "1", "--preemption",
        "lower-priority", "--format", "json", SFT,
    )  # fmt: skip
    assert code == 0
    doc = json.loads(out)
    [sft] = doc["jobsets"]
    assert sft["status"] == "placed"
    assert sft["preempts"] == ["batch/eval-a", "batch/eval-b"]
    victims = {p["namespace"] + "/" + p["name"]: p for p in doc["preempted"]}
    assert sorted(victims) == ["batch/eval-a", "batch/eval-b"]
    assert {p["status"] for p in victims.values()} == {"preempted"}
    assert victims["batch/eval-a"]["lost_chip_hours"] == pytest.approx(16 * 20 / 60)
    assert victims["batch/eval-b"]["makes_room_for"] == ["prod/llm-sft"]


def test_the_table_says_who_is_preempted_for_whom(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = plan(
        capsys, "--cluster", CLUSTER, "--now", NOW, "--workers", "1", "--preemption",
        "lower-priority", "--restart-cost", "0s", SFT,
    )  # fmt: skip
    assert code == 0
    assert (
        "batch/eval-b preempted for prod/llm-sft (priority 100, 8 accelerators; 2.7 chip-hours: "
        "2.7 of work lost, 0.0 to restart)"
    ) in out.splitlines()


@pytest.mark.parametrize("reservations", ["all", "head"])
def test_with_reservations_the_same_victims_are_evicted_and_the_rest_reserved(
    capsys: pytest.CaptureFixture[str], reservations: str
) -> None:
    """Evictions are decided before reservations: the low-priority JobSets' reservations do not
    push prod/llm-sft onto research/sweep (17.3 chip-hours) instead of eval-a and eval-b (10)."""
    queue = REPO / "examples/jobsets/queue"
    code, out, _ = plan(
        capsys, "--cluster", CLUSTER, "--now", NOW, "--workers", "1", "--preemption",
        "lower-priority", "--reservations", reservations, "--format", "json", queue,
    )  # fmt: skip
    assert code == 0
    doc = json.loads(out)
    jobsets = {o["namespace"] + "/" + o["name"]: o for o in doc["jobsets"]}
    assert jobsets["prod/llm-sft"]["status"] == "placed"
    assert jobsets["prod/llm-sft"]["preempts"] == ["batch/eval-a", "batch/eval-b"]
    assert sorted(p["namespace"] + "/" + p["name"] for p in doc["preempted"]) == [
        "batch/eval-a",
        "batch/eval-b",
    ]
    waiting = [o for o in jobsets.values() if o["status"] != "placed"]
    assert any(o.get("expected_start_seconds") for o in waiting)  # the rest still get ETAs


def test_without_the_flag_nobody_is_preempted(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = plan(capsys, "--cluster", CLUSTER, "--now", NOW, "--format", "json", SFT)
    assert code == 0
    doc = json.loads(out)
    assert doc["preempted"] == [] and doc["jobsets"][0]["status"] == "unschedulable"


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        pytest.param(
            ["--preempt-after", "soon"],
            "placer: error: --preempt-after: invalid duration 'soon'",
            id="preempt-after",
        ),
        pytest.param(
            ["--restart-cost=-5m"],
            "placer: error: --restart-cost: negative duration '-5m'",
            id="restart-cost",
        ),
    ],
)
def test_bad_flags_exit_2_with_one_line(
    capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    code, _, err = plan(
        capsys, "--cluster", CLUSTER, "--now", NOW, "--preemption", "lower-priority", *flags, SFT
    )
    assert code == 2
    assert len(err.strip().splitlines()) == 1
    assert err.startswith(message)


def test_a_bad_checkpoint_interval_names_file_jobset_and_field(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = tmp_path / "cluster.yaml"
    bad.write_text(
        CLUSTER.read_text().replace(
            "placer.dev/checkpoint-interval: 1h", "placer.dev/checkpoint-interval: -1h"
        )
    )
    code, _, err = plan(capsys, "--cluster", bad, "--preemption", "lower-priority", SFT)
    assert code == 2
    assert err.strip() == (
        f"placer: error: {bad}: running[0] batch/eval-a: "
        "metadata.annotations[placer.dev/checkpoint-interval]: negative duration '-1h'"
    )


@pytest.mark.parametrize(
    ("after", "preempted"),
    [
        pytest.param("2h", ["batch/eval-a", "batch/eval-b"], id="waits-longer"),
        pytest.param("4h", [], id="waits-less"),
    ],
)
def test_preempt_after_preempts_only_for_a_long_wait(
    capsys: pytest.CaptureFixture[str], after: str, preempted: list[str]
) -> None:
    """Every running JobSet runs the default 4 h: without preemption prod/llm-sft's three slices
    are free once eval-a (10:40) and research/sweep (11:00) end, 3 h from now."""
    code, out, _ = plan(
        capsys, "--cluster", CLUSTER, "--now", NOW, "--workers", "1", "--preemption",
        "lower-priority", "--preempt-after", after, "--format", "json", SFT,
    )  # fmt: skip
    assert code == 0
    doc = json.loads(out)
    assert [p["namespace"] + "/" + p["name"] for p in doc["preempted"]] == preempted


FRAGMENTED = REPO / "examples/clusters/tpu-fragmented.yaml"
DEFRAG_QUEUE = REPO / "examples/jobsets/defrag"
defrag = command("defrag")


def test_defrag_moves_the_cheapest_runner_out_of_the_way(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """prod/sft-block needs 3 slices in one block, each block has 2 free: moving batch/eval-b
    (checkpointed at 12:00, so only its restart is lost) from block-0 to block-1 starts it."""
    code, out, _ = defrag(capsys, "--cluster", FRAGMENTED, "--now", NOW, "--workers", "1",
                          DEFRAG_QUEUE)  # fmt: skip
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["MOVE", "PRIORITY", "TO", "COST", "(CHIP-HOURS)", "STARTS",
                                "GAIN", "(ACCELERATORS)"]  # fmt: skip
    assert lines[1].split() == ["batch/eval-b", "100", "v5e-2x4-pool-6", "0.7", "prod/sft-block",
                                "24"]  # fmt: skip
    assert lines[3] == (
        "1 move; 1 of 1 pending JobSets start (24 accelerators), 0.7 chip-hours restarted"
    )


def test_defrag_without_running_manifests_moves_nothing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = defrag(capsys, "--cluster", FRAGMENTED, "--now", NOW, "--format", "json",
                          DEFRAG_QUEUE / "01-prod-sft-block.yaml")  # fmt: skip
    assert code == 0
    doc = json.loads(out)
    assert doc["preempted"] == [] and doc["jobsets"][0]["status"] == "unschedulable"


explain = command("explain")


def test_explain_offers_both_answers_for_a_blocked_jobset(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The move on the fragmented cluster (running manifests given); the eviction on the busy
    one, with its cost."""
    code, out, _ = explain(capsys, "--cluster", FRAGMENTED, "--now", NOW, "--workers", "1",
                           DEFRAG_QUEUE, "prod/sft-block")  # fmt: skip
    assert code == 0
    assert "  - moving batch/eval-b to v5e-2x4-pool-6 starts it now: " in out
    code, out, _ = explain(capsys, "--cluster", CLUSTER, "--now", NOW, "--workers", "1",
                           "-o", "wide", SFT, "prod/llm-sft")  # fmt: skip
    assert code == 0
    assert (
        "  - evicting batch/eval-a (priority 100, 16 accelerators; 6.7 chip-hours: 5.3 of work "
        "lost, 1.3 to restart) and batch/eval-b (priority 100, 8 accelerators; 3.3 chip-hours: "
        "2.7 of work lost, 0.7 to restart) starts it now: "
    ) in out


def test_explain_with_reservations_offers_the_eviction_beside_the_wait(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Time-aware: prod/llm-sft is reserved in 3 h; the eviction remedy is searched as `placer
    plan --reservations all --preemption lower-priority` would plan it."""
    code, out, _ = explain(capsys, "--cluster", CLUSTER, "--now", NOW, "--workers", "1",
                           "--reservations", "all", "-o", "wide", REPO / "examples/jobsets/queue",
                           "prod/llm-sft")  # fmt: skip
    assert code == 0
    assert "expected start: in 3h on " in out
    assert "  - evicting batch/eval-a (priority 100, 16 accelerators; " in out
    assert "not searched" not in out


def test_a_greedy_solver_never_preempts_and_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = plan(capsys, "--cluster", CLUSTER, "--now", NOW, "--solver", "best-fit",
                        "--preemption", "lower-priority", SFT)  # fmt: skip
    assert code == 0
    assert "note: --preemption: best-fit never preempts (only cpsat chooses victims)" in out
    assert "preempted for" not in out
