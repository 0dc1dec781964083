"""The over-time preemption benchmark on a tiny world, so it cannot rot (no timing asserted)."""

from __future__ import annotations

from dataclasses import replace

from benchmarks.preemption_overtime import POLICIES, summarize
from benchmarks.simulate.overtime import simulate
from benchmarks.worlds.simworld import SimConfig, build_world
from placer.model.options import SolveOptions


def test_every_policy_runs_checked_and_only_preempting_ones_preempt() -> None:
    cfg = replace(SimConfig(), jobsets=60, load=1.1)
    world = build_world("tpu", 1, cfg)
    results = simulate(world, POLICIES, SolveOptions(time_limit_s=1, workers=1, seed=1), cfg)
    rows = {r.policy: summarize(r, "tpu", 1.1) for r in results}
    assert set(rows) == set(POLICIES)
    for r in results:
        assert r.checked_plans == r.rounds
        assert len(r.preemptions) == len(r.delays_s) == len(r.priorities) == len(world.queue)
    assert rows["cpsat"]["lost_chip_hours"] == 0 and rows["cpsat"]["max_preemptions"] == 0
    for row in rows.values():
        assert 0 <= row["lost_share"] < 1
        assert list(row["tiers"]) == sorted(row["tiers"], reverse=True)
