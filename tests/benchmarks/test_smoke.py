"""The smoke suite end to end, so the benchmark code cannot rot: no timing assertions, only that
every part ran, every plan went through the checker, and the report has its tables and plots."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.__main__ import main

EXPECTED_SECTIONS = (
    "## Targets",
    "## Static comparison",
    "### tpu-v5e",
    "### gb200-nvl72",
    "### hetero-1",
    "## Over time",
    "## Scaling",
    "### Planner target: `placer plan` end to end",
    "## Assumptions",
)


def test_smoke_suite_writes_a_checked_report(tmp_path: Path) -> None:
    assert main(["run", "--suite", "smoke", "--out", str(tmp_path), "--no-progress"]) == 0
    report = (tmp_path / "RESULTS.md").read_text()
    for section in EXPECTED_SECTIONS:
        assert section in report, section
    raw = json.loads((tmp_path / "results.json").read_text())
    policies = raw["settings"]["policies"]
    assert {"first-fit", "best-fit", "largest-first"} <= set(policies)
    static = raw["static"]
    assert {r["policy"] for r in static} == set(policies)
    assert all(r["checked"] for r in static), "every static plan passed the checker"
    assert raw["overtime"] and all(s["checked_plans"] == s["rounds"] for s in raw["overtime"])
    assert raw["scaling"] and all(r["checked"] for r in raw["scaling"])
    assert raw["end_to_end"] and all(r["placed"] >= 0 for r in raw["end_to_end"])
    assert "unchecked: 0." in report
    for png in ("static-accelerators.png", "utilization.png", "scaling.png"):
        assert (tmp_path / "plots" / png).stat().st_size > 1000
    # first-fit is the only policy allowed to leave JobSets partial
    assert all(r["metrics"]["partial"] == 0 for r in static if r["policy"] != "first-fit")


def test_reports_go_to_a_scratch_directory_unless_out_is_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import benchmarks.__main__ as entry

    seen: list[Path] = []

    def fake_run_suite(suite: object, out: Path, **_: object) -> Path:
        seen.append(out)
        return out / "RESULTS.md"

    monkeypatch.setattr(entry, "run_suite", fake_run_suite)
    assert main(["run", "--suite", "smoke"]) == 0
    assert main(["run", "--suite", "smoke"]) == 0
    committed = Path(entry.__file__).resolve().parent
    assert seen[0] != seen[1], "each run gets its own directory"
    assert all(committed not in p.resolve().parents and p.resolve() != committed for p in seen)
    assert all(p.is_dir() and not any(p.iterdir()) for p in seen)
    for p in seen:
        p.rmdir()
