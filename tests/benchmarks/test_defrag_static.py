"""The defrag benchmark on one small fragmented fleet, so it cannot rot (no timing asserted)."""

from __future__ import annotations

from benchmarks.defrag_static import measure


def test_moves_never_admit_less_and_each_running_jobset_is_movable() -> None:
    row = measure("h200-subblocks", 1, 2.0)
    assert row["movable"] == row["running"] > 0
    assert row["admitted_with_moves"] >= row["admitted_without_moves"]
    assert row["moves"] <= row["movable"]
    assert (row["moves"] > 0) == (row["admitted_with_moves"] > row["admitted_without_moves"])
