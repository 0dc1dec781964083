"""The preemption benchmark end to end on a tiny fleet, so it cannot rot (no timing asserted)."""

from __future__ import annotations

import pytest

from benchmarks.preemption_speed import main, measure


def test_both_modes_run_and_preemption_never_admits_less_in_a_higher_tier() -> None:
    base, preempting = measure(300, 30, seed=1, workers=1)
    assert (base["mode"], preempting["mode"]) == ("none", "lower-priority")
    assert base["victims"] == 0
    tiers = sorted(base["admitted_per_tier"], reverse=True)
    assert [preempting["admitted_per_tier"][t] for t in tiers] >= [
        base["admitted_per_tier"][t] for t in tiers
    ]


def test_repeat_plans_each_mode_in_turn() -> None:
    rows = measure(300, 30, seed=1, workers=1, repeat=2)
    assert [(r["run"], r["mode"]) for r in rows] == [
        (1, "none"),
        (1, "lower-priority"),
        (2, "none"),
        (2, "lower-priority"),
    ]


def test_plans_run_with_the_collector_paused_unless_asked_and_say_so() -> None:
    """Paused, as placer's commands run: the collection after each plan is recorded apart; the
    same plans either way."""
    paused = measure(300, 30, seed=1, workers=1)
    running = measure(300, 30, seed=1, workers=1, collector="running")
    assert [r["collector"] for r in paused + running] == ["paused"] * 2 + ["running"] * 2
    assert all(r["collect_s"] >= 0 for r in paused)
    assert all(r["collect_s"] is None for r in running)
    for a, b in zip(paused, running, strict=True):
        assert (a["admitted_per_tier"], a["victims"]) == (b["admitted_per_tier"], b["victims"])


def test_repeat_below_one_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--nodes", "300", "--pending", "30", "--repeat", "0"])
    assert exited.value.code == 2
    assert "--repeat must be at least 1" in capsys.readouterr().err


def test_each_row_lists_the_cpsat_searches_of_its_plan() -> None:
    base, preempting = measure(300, 30, seed=1, workers=1, held=0.5)
    for row in (base, preempting):
        names = [name for name, _, _ in row["stages"]]
        assert names[0].startswith("tier ")
        assert "queue order" in names
        assert all(seconds >= 0 for _, _, seconds in row["stages"])
    assert "eviction cost" not in [name for name, _, _ in base["stages"]]
    assert preempting["victims"] > 0  # half the pools held: this fleet has victims to choose
    assert "eviction cost" in [name for name, _, _ in preempting["stages"]]
