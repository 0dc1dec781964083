"""The shared-starts benchmark end to end on a small fleet, so it cannot rot (no timing checked)."""

from __future__ import annotations

import pytest

from benchmarks.shared_starts_bench import main

SMALL = ["--nodes", "600", "--pending", "40", "--shared", "8", "--mixed", "4", "--repeat", "1"]


def test_it_tells_the_shared_jobsets_left_out_when_they_start(
    capsys: pytest.CaptureFixture[str],
) -> None:
    main(SMALL)
    out = capsys.readouterr().out
    assert "8 without a key" in out
    assert "shared left out" in out and "mixed left out" in out
    assert "then a collection" in out  # paused by default: the collection after it said apart


def test_with_the_collector_running_no_collection_is_timed_apart(
    capsys: pytest.CaptureFixture[str],
) -> None:
    main([*SMALL, "--collector", "running"])
    out = capsys.readouterr().out
    assert "shared left out" in out and "then a collection" not in out
