"""`placer plan` with time-aware planning: the flags, the plan fields, one-line input errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from placer.cli import main

REPO = Path(__file__).resolve().parents[2]
CLUSTER = str(REPO / "examples/clusters/tpu-v5e-v6e.yaml")
QUEUE = str(REPO / "examples/jobsets/queue")
NOW = "2026-12-01T06:00:00Z"
V6E_SELECTOR = "cloud.google.com/gke-tpu-accelerator=tpu-v6e-slice"


def test_head_reservation_gives_the_waiting_jobset_domains_and_an_eta(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["plan", "--cluster", CLUSTER, "--workers", "1", "--reservations", "head"]
    argv += ["--now", NOW, "--default-duration", "2h", "--format", "json", QUEUE]
    assert main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    waiting = [j for j in doc["jobsets"] if j["status"] != "placed"]
    placed = [j for j in doc["jobsets"] if j["status"] == "placed"]
    assert placed and all(j["expected_start_seconds"] == 0 for j in placed)
    reserved = [j for j in waiting if j["reserved_domains"]]
    assert len(reserved) == 1  # the head only
    [head] = reserved
    # the head waits for a NotReady host, expected back within an hour, rather than for the
    # running JobSets (not dated in the example: they end a default duration, 2 h, from now)
    assert head["expected_start_seconds"] == 3600
    assert len(head["reserved_domains"]) == 2
    assert {"timeline", "reserve", "estimate"} <= set(doc["solver"]["phases"])


@pytest.mark.parametrize("schedule", ["greedy", "cpsat"])
def test_no_slice_is_reserved_before_the_host_it_needs_is_back(
    schedule: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """v5e-2x4-pool-2 has a NotReady host, so a two-host slice fits it only with that host back
    (in an hour). No JobSet is reserved there earlier, by either schedule (a change tried in
    round 40 and not kept once gave it to batch/eval-sweep from 30 min on in the CP-SAT
    schedule, whose class of pools had room then but not that pool)."""
    argv = ["plan", "--cluster", CLUSTER, "--workers", "1", "--schedule", schedule]
    argv += ["--reservations", "all", "--now", NOW, "--default-duration", "6h"]
    argv += ["--default-duration", "low=30m", "-o", "json", QUEUE]
    assert main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    reserved = [j for j in doc["jobsets"] if j["reserved_domains"]]
    assert reserved, "the comparison must run"
    for j in reserved:
        if any(d["value"] == "v5e-2x4-pool-2" for d in j["reserved_domains"]):
            assert j["expected_start_seconds"] >= 3600, j


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        pytest.param(["--now", "yesterday"], "--now: 'yesterday' is not an RFC 3339", id="now"),
        pytest.param(["--default-duration=-1h"], "--default-duration: negative", id="neg"),
        pytest.param(["--default-duration", "gold=1h"], "unknown PriorityClass 'gold'", id="cls"),
        pytest.param(["--max-wait", "2d"], "--max-wait: invalid duration '2d'", id="max-wait"),
        pytest.param(
            ["--default-duration", "gold=soon"],
            "--default-duration: invalid duration 'soon'",
            id="unparsable-class-default",
        ),
    ],
)
@pytest.mark.parametrize("command", ["plan", "explain"])
def test_bad_time_flags_exit_2_with_one_line(
    command: str, flags: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [command, "--cluster", CLUSTER, "--reservations", "all", *flags, QUEUE]
    if command == "explain":
        argv.append("batch/eval-sweep")
    try:
        code = main(argv)
    except SystemExit as e:  # refused while the flags are read (--now)
        code = int(e.code or 0)
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err


ANNOTATION = "metadata.annotations[placer.dev/expected-duration]"
DEADLINE = "spec.replicatedJobs[0].template.spec.activeDeadlineSeconds"


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        pytest.param(
            "  annotations:\n",
            "  annotations:\n    placer.dev/expected-duration: soon\n",
            f"{ANNOTATION}: invalid duration 'soon'",
            id="unparsable",
        ),
        pytest.param(
            "  annotations:\n",
            "  annotations:\n    placer.dev/expected-duration: -2h\n",
            f"{ANNOTATION}: negative duration '-2h'",
            id="negative",
        ),
        pytest.param(
            "        parallelism: 2\n",
            "        parallelism: 2\n        activeDeadlineSeconds: -60\n",
            f"{DEADLINE}: must be a positive integer of at most 9223372036854775807 (int64), "
            "got -60",
            id="negative-deadline",
        ),
    ],
)
@pytest.mark.parametrize("command", ["plan", "explain"])
def test_a_bad_expected_duration_names_file_jobset_and_field(
    command: str,
    old: str,
    new: str,
    message: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    text = (REPO / "examples/jobsets/queue/01-prod-sft-v5e.yaml").read_text()
    assert old in text
    path = tmp_path / "bad.yaml"
    path.write_text(text.replace(old, new, 1))
    argv = [command, "--cluster", CLUSTER, str(path)]
    if command == "explain":
        argv.append("prod/llm-sft")
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert f"{path}: prod/llm-sft: {message}" in err[0]


def _explain_timed(policy: list[str], jobset: str, *, json_out: bool = False) -> list[str]:
    """`placer explain` of `jobset` in the bundled queue at `NOW`, planned over time with the
    `policy` flags (2 h default run time, no remedies)."""
    out = ["-o", "json"] if json_out else []
    head = ["explain", "--cluster", CLUSTER, "--workers", "1", *policy, "--now", NOW]
    return [*head, "--default-duration", "2h", "--no-remedies", *out, QUEUE, jobset]


def test_explain_says_when_and_where_a_waiting_jobset_is_expected_to_start(
    capsys: pytest.CaptureFixture[str],
) -> None:
    head = ["--reservations", "head"]
    assert main(_explain_timed(head, "batch/eval-sweep")) == 0
    text = capsys.readouterr().out
    assert "expected start: in 1h on v5e-2x4-pool-2,v5e-2x4-pool-7 (reserved)" in text
    assert main(_explain_timed(head, "research/ablation", json_out=True)) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["expected_start_seconds"] == 3600 and doc["reserved_domains"] == []
    assert main(["explain", "--cluster", CLUSTER, "--no-remedies", QUEUE, "batch/eval-sweep"]) == 0
    assert "expected start" not in capsys.readouterr().out  # no time flags, no time planning


def test_explain_says_when_a_waiting_jobset_is_past_the_maximum_wait(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """At `NOW` batch/eval-sweep has waited 21h50m and research/ablation 21h45m."""
    late = ["--max-wait", "21h47m"]
    assert main(_explain_timed(late, "batch/eval-sweep")) == 0
    [line] = [x for x in capsys.readouterr().out.splitlines() if "expected start" in x]
    assert line.endswith("; waiting past --max-wait")
    assert main(_explain_timed(late, "research/ablation", json_out=True)) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["past_max_wait"] is False and doc["expected_start_seconds"] is not None


def test_a_jobset_that_never_fits_is_told_why_not_who_runs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """On the busy example cluster (v5e pools only, each held by a running JobSet) the v6e
    JobSets never fit: plan and explain name the nodeSelector no pool matches, not the running
    JobSets that hold the pools today."""
    busy = str(REPO / "examples/clusters/tpu-busy.yaml")
    timed = ["--workers", "1", "--reservations", "all", "--now", NOW]
    assert main(["plan", "--cluster", busy, *timed, "-o", "wide", QUEUE]) == 0
    out = capsys.readouterr().out
    [line] = [ln for ln in out.splitlines() if ln.startswith("research/pretrain-1b unschedulable:")]
    selector = "6 not matching nodeSelector " + V6E_SELECTOR
    assert selector in line
    assert "held by running" not in line
    argv = ["explain", "--cluster", busy, *timed, "--no-remedies", "-o", "wide", QUEUE]
    assert main([*argv, "research/pretrain-1b"]) == 0
    [start] = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("expected")]
    assert start.startswith("expected start: never, even once every running JobSet ends: slice: ")
    assert start.endswith(selector)


def test_explain_without_time_flags_still_says_a_jobset_never_fits(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """No expected start without time-aware planning, so explain asks the pass's question
    itself: the v6e JobSet never fits, the v5e one only waits (its `never` is empty)."""
    busy = str(REPO / "examples/clusters/tpu-busy.yaml")
    argv = ["explain", "--cluster", busy, "--workers", "1", "--no-remedies"]
    assert main([*argv, "-o", "wide", QUEUE, "research/pretrain-1b"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith("never fits, even once every running JobSet ends: slice: ")
    assert lines[1].endswith("6 not matching nodeSelector " + V6E_SELECTOR)
    assert main([*argv, "-o", "json", QUEUE, "research/pretrain-1b"]) == 0
    assert json.loads(capsys.readouterr().out)["never"] == lines[1].split(": ", 1)[1]
    assert main([*argv, "-o", "json", QUEUE, "prod/llm-sft"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["never"] == "" and doc["status"] == "unschedulable"


def test_plan_without_time_flags_says_why_a_jobset_never_fits(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """No expected start says it either: the reason of a v6e JobSet names the nodeSelector no
    pool matches, and a v5e one's the running JobSets it waits for."""
    busy = str(REPO / "examples/clusters/tpu-busy.yaml")
    assert main(["plan", "--cluster", busy, "--workers", "1", "-o", "json", QUEUE]) == 0
    doc = json.loads(capsys.readouterr().out)
    reasons = {f"{o['namespace']}/{o['name']}": o["reason"] for o in doc["jobsets"]}
    for never in ("research/pretrain-1b", "research/ablation"):
        assert reasons[never].endswith("6 not matching nodeSelector " + V6E_SELECTOR)
    for waits in ("prod/llm-sft", "batch/eval-sweep", "batch/smoke-test"):
        assert "2 held by running batch/eval-a" in reasons[waits]
    # explain states the plan's reason, and says it never fits beside it
    argv = ["explain", "--cluster", busy, "--workers", "1", "--no-remedies", "-o", "json", QUEUE]
    assert main([*argv, "research/pretrain-1b"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["reason"] == doc["never"] == reasons["research/pretrain-1b"]
