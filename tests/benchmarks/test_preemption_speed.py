"""The preemption benchmark end to end on a tiny fleet, so it cannot rot (no timing asserted)."""

from __future__ import annotations

from benchmarks.preemption_speed import measure


def test_both_modes_run_and_preemption_never_admits_less_in_a_higher_tier() -> None:
    base, preempting = measure(300, 30, seed=1, workers=1)
    assert (base["mode"], preempting["mode"]) == ("none", "lower-priority")
    assert base["victims"] == 0
    tiers = sorted(base["admitted_per_tier"], reverse=True)
    assert [preempting["admitted_per_tier"][t] for t in tiers] >= [
        base["admitted_per_tier"][t] for t in tiers
    ]
