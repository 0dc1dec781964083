"""The over-time benchmark's pieces that its report leans on: the fluid backlog and the policies."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from benchmarks.simulate.policies import MAX_WAIT_S, POLICIES
from benchmarks.simulate.results import SimResult
from benchmarks.worlds.queues import JobSetSpec
from benchmarks.worlds.records import CLIQUE
from benchmarks.worlds.simworld import (
    HOUR,
    SimConfig,
    SimWorld,
    _fitting,
    accelerator_units,
    build_world,
    fluid_backlog_s,
    one_priority,
)
from placer.model.cluster import Node
from placer.solver.registry import CheckedSolver
from placer.solver.time.timeaware import TimeAwareSolver


def _brute_force(world: SimWorld) -> dict[str, float]:
    """Every window [arrival i, arrival k], directly, over the same capacities."""
    pools: dict[str, list[JobSetSpec]] = {"all": list(world.queue)}
    for js in world.queue:
        pools.setdefault(js.rjobs[0].shape.label, []).append(js)
    out = {}
    for pool, jobs in pools.items():
        cap = world.capacity_units if pool == "all" else _fitting(world.snapshot, jobs[0])[1]
        jobs = sorted(jobs, key=lambda j: j.arrival_s)
        best = 0.0
        for i in range(len(jobs)):
            work = 0.0
            for k in range(i, len(jobs)):
                work += jobs[k].held_units * jobs[k].duration_s
                best = max(best, (work - cap * (jobs[k].arrival_s - jobs[i].arrival_s)) / cap)
        out[pool] = best
    return out


def test_a_shape_counts_only_the_domains_its_child_jobs_fit() -> None:
    """An 18-host GB200 child Job fits only racks whose 18 hosts are all healthy and empty."""
    world = build_world("gb200", 3, replace(SimConfig(), jobsets=40))
    racks: dict[str, list[Node]] = {}
    for n in world.snapshot.nodes:
        racks.setdefault(n.labels[CLIQUE], []).append(n)
    # every host healthy with its 4 GPUs free (a broken GB200 host reports none allocatable)
    whole = sum(
        1
        for nodes in racks.values()
        if len(nodes) == 18 and all(n.usable and accelerator_units(n.free) == 4 for n in nodes)
    )
    wide = next(js for js in world.queue if js.rjobs[0].shape.pods_per_job == 18)
    assert 0 < whole < len(racks)
    assert _fitting(world.snapshot, wide) == (whole, whole * 72)


@pytest.mark.parametrize("fleet", ["tpu", "gb200"])
def test_fluid_backlog_is_the_worst_window(fleet: str) -> None:
    world = build_world(fleet, 3, replace(SimConfig(), jobsets=40, load=1.1))
    fast = fluid_backlog_s(world)
    slow = _brute_force(world)
    assert fast.keys() == slow.keys()
    for pool in slow:
        assert fast[pool] == pytest.approx(slow[pool], rel=1e-9, abs=1e-6)
    assert max(fast.values()) > 0


def test_fluid_backlog_of_a_burst_is_its_work_over_capacity() -> None:
    world = build_world("gb200", 3, replace(SimConfig(), jobsets=10))
    burst = [replace(js, arrival_s=0.0, duration_s=HOUR) for js in world.queue[:3]]
    later = replace(world.queue[3], arrival_s=1000 * HOUR, duration_s=HOUR)
    world = replace(world, queue=[*burst, later])
    held = sum(js.held_units for js in burst)
    assert fluid_backlog_s(world)["all"] == pytest.approx(held * HOUR / world.capacity_units)


def test_aging_policies_wait_at_most_a_day_and_others_are_not_time_aware() -> None:
    for name in ("easy-aging", "cpsat-head-aging"):
        policy = POLICIES[name]
        assert policy.max_wait_s == MAX_WAIT_S and policy.aging_per_hour > 0
        built = policy.build()
        assert isinstance(built, CheckedSolver) and isinstance(built.inner, TimeAwareSolver)
    for name in ("best-fit", "cpsat", "best-fit-strict"):
        built = POLICIES[name].build()
        assert isinstance(built, CheckedSolver) and not isinstance(built.inner, TimeAwareSolver)


def test_a_subset_of_the_matrix_is_named_on_the_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from benchmarks import backfill

    seen: dict[str, backfill.Matrix] = {}

    def fake_run(
        matrix: backfill.Matrix, seed: int, progress: object = None, on_cell: object = None
    ) -> tuple[list[dict[str, Any]], list[tuple[str, SimResult]]]:
        seen["matrix"] = matrix
        return [], []

    monkeypatch.setattr(backfill, "run_matrix", fake_run)
    argv = ["--out", str(tmp_path), "--size", "2", "--fleets", "gb200", "--loads", "1.1"]
    assert backfill.main([*argv, "--policies", "best-fit,cpsat-head"]) == 0
    m = seen["matrix"]
    assert (m.size, m.fleets, m.loads, m.policies) == (
        2.0,
        ("gb200",),
        (1.1,),
        ("best-fit", "cpsat-head"),
    )
    assert m.full_matrix_load == 1.1 and backfill.cells(m) == [
        ("gb200", 1.1, e) for e in ("over", "none", "exact", "noisy")
    ]
    with pytest.raises(SystemExit):
        backfill.main(["--policies", "nope"])
    assert m.priorities == "drawn"
    assert backfill.main([*argv, "--priorities", "one"]) == 0
    assert seen["matrix"].priorities == "one"


def test_one_priority_changes_only_the_priorities() -> None:
    """The same arrivals, runs, shapes and failures, every JobSet in one class."""
    cfg = replace(SimConfig(), jobsets=40)
    world = build_world("gb200", 1, cfg)
    assert len({js.priority for js in world.queue}) > 1
    flat = one_priority(world)
    assert {(js.priority_class, js.priority) for js in flat.queue} == {("batch", 1000)}
    assert [replace(js, priority_class="", priority=0) for js in flat.queue] == [
        replace(js, priority_class="", priority=0) for js in world.queue
    ]
    assert (flat.failures, flat.snapshot) == (world.failures, world.snapshot)


def test_the_simulation_hands_a_rounds_reservations_to_the_next_on_its_clock() -> None:
    from benchmarks.simulate.overtime import _Sim
    from placer.model.cluster import DomainReservation
    from placer.model.options import SolveOptions

    world = build_world("tpu", 3, replace(SimConfig(), jobsets=10))
    sim = _Sim(world, POLICIES["easy"], SolveOptions(), SimConfig(jobsets=10))
    held = DomainReservation(jobset="a/x", key="k", path=(("k", "v"),), start_s=600, end_s=4200)
    gone = held.model_copy(update={"jobset": "a/started"})
    sim.kept, sim.kept_at = (held, gone), 1000.0
    [moved] = sim._still_pending(1300.0, {"a/x"})
    assert (moved.jobset, moved.start_s, moved.end_s) == ("a/x", 300.0, 3900.0)
    [late] = sim._still_pending(2000.0, {"a/x"})
    assert late.start_s == 0.0 and late.end_s == 3200.0


def test_targets_are_judged_for_every_cpsat_policy_against_best_fit_and_easy() -> None:
    from benchmarks.backfill_report import judge

    def row(policy: str, p95: float, estimate: str = "over", util: float = 0.6) -> dict[str, Any]:
        return {
            "world": "w",
            "policy": policy,
            "estimate": estimate,
            "load": 0.9,
            "p95_delay_h": p95,
            "max_delay_h": 2 * p95,
            "window_utilization": util,
            "p95_wide_h": p95,
            "p95_narrow_h": p95,
            "round_wall_median_s": 0.1,
            "fluid_backlog_h": 7.0,
        }

    rows = [
        row("best-fit", 10.0),
        row("easy", 6.0),
        row("cpsat-head", 6.5),  # under 0.7x best-fit, over easy
        row("cpsat-head-aging", 5.0, util=0.595),
        row("cpsat", 1.0, "none"),
        row("cpsat-head-aging", 1.0, "none", util=0.57),
    ]
    lines = judge(rows)
    head = next(line for line in lines if "| cpsat-head |" in line)
    aging = next(line for line in lines if "| cpsat-head-aging |" in line)
    assert "6.50 h vs 6.00: **missed**" in head and "not run" in head
    assert "5.00 h vs 6.00: met" in aging and "10.00 h vs 10.00: met" in aging
    assert "57.0% vs 60.0%: **missed**" in aging
    assert not any("| cpsat-all |" in line for line in lines)
    assert "w 7.00 h" in lines[-1]


def test_the_report_lists_each_worlds_shapes_once() -> None:
    from benchmarks.backfill_report import worlds_table

    shapes = {"all": {"domains": 0, "work_share": 1.0, "fluid_backlog_h": 2.0}}
    shapes["18h"] = {"domains": 3, "work_share": 0.13, "fluid_backlog_h": 49.65}
    rows = [{"world": "w", "load": 0.9, "shapes": shapes}] * 2
    lines = worlds_table(rows)
    assert lines[2:] == [
        "| w | 90% | all | every free accelerator | 100% | 2.0 |",
        "| w | 90% | 18h | 3 | 13% | 49.6 |",
    ]


def _row(
    policy: str, estimate: str, p95: float, top: float, slowdown: float, util: float
) -> dict[str, Any]:
    return {
        "world": "tpu-152n",
        "load": 0.9,
        "estimate": estimate,
        "policy": policy,
        "p95_delay_h": p95,
        "max_delay_h": top,
        "bounded_slowdown": slowdown,
        "window_utilization": util,
        "round_wall_median_s": 0.5,
        "fluid_backlog_h": 30.0,
    }


def test_the_schedule_is_judged_against_the_baseline_named_before_the_run() -> None:
    from benchmarks.reporting.schedule_targets import judge_schedule

    rows = [
        _row("easy-aging", "over", 40.0, 50.0, 30.0, 0.650),
        _row("cpsat-schedule", "over", 33.0, 43.0, 25.0, 0.645),
        _row("easy-aging", "none", 40.0, 50.0, 30.0, 0.650),
        _row("cpsat-schedule", "none", 42.5, 51.0, 30.0, 0.600),
    ]
    lines = judge_schedule(rows, "easy-aging")
    [over] = [line for line in lines if "| 90% | over |" in line]
    [none] = [line for line in lines if "| 90% | none |" in line]
    # over: p95 0.82x met, max 0.86x missed, slowdown 0.83x missed, utilization within a point
    assert "33.00 h vs 40.00 h (0.82x): met" in over
    assert "43.00 h vs 50.00 h (0.86x): **missed**" in over
    assert "25.00 vs 30.00 (0.83x): **missed**" in over
    assert "64.5% vs best 65.0%: met" in over
    # none: p95 +6% missed, max +2% met, utilization 7.7% lower missed
    assert "42.50 h vs 40.00 h (1.06x): **missed**" in none
    assert "51.00 h vs 50.00 h (1.02x): met" in none
    assert "60.0% vs 65.0%: **missed**" in none
    # the bound (30 h) is below the baseline's max (50 h): the max must stay below 50 h
    assert "43.00 h vs baseline 50.00 h: met" in over


def test_the_schedule_policy_has_the_aging_rules_and_the_cpsat_schedule() -> None:
    policy = POLICIES["cpsat-schedule"]
    easy = POLICIES["easy-aging"]
    assert (policy.aging_per_hour, policy.max_wait_s) == (easy.aging_per_hour, easy.max_wait_s)
    assert policy.time_policy().schedule == "cpsat" and policy.time_policy().active


def _seed_row(policy: str, p95: float, top: float, slowdown: float, util: float) -> dict[str, Any]:
    """A full row of the over-estimate cell, as `summarize` gives it (the report prints all)."""
    extra = {"p50_delay_h": 1.0, "waited_over_24h": 0, "p95_wide_h": 1.0, "p95_narrow_h": 1.0}
    return {**_row(policy, "over", p95, top, slowdown, util), **extra, "round_wall_max_s": 1.0}


def test_the_seed_spread_sets_the_schedule_against_the_baseline_seed_by_seed() -> None:
    from benchmarks.reporting.seed_spread import spread_table

    by_seed = {
        1: [
            _seed_row("easy-aging", 40.0, 50.0, 30.0, 0.650),
            _seed_row("cpsat-schedule", 20.0, 55.0, 15.0, 0.640),
        ],
        2: [
            _seed_row("easy-aging", 10.0, 20.0, 5.0, 0.600),
            _seed_row("cpsat-schedule", 20.0, 20.0, 10.0, 0.610),
        ],
        # a seed without the baseline says nothing and is left out
        3: [_seed_row("cpsat-schedule", 1.0, 1.0, 1.0, 0.5)],
    }
    lines = spread_table(by_seed, "easy-aging")
    [one] = [line for line in lines if line.startswith("| 1 |")]
    assert "40.00 / 50.00 / 30.00 | 20.00 / 55.00 / 15.00 | 0.50x / 1.10x / 0.50x | -1.0 |" in one
    [two] = [line for line in lines if line.startswith("| 2 |")]
    assert "2.00x / 1.00x / 2.00x | +1.0 |" in two
    assert not any(line.startswith("| 3 |") for line in lines)
    # 0.5x and 2x cancel out; seeds 1 (max 1.10x) and 2 (p95 2.00x) are past the 5% rule
    [mean] = [line for line in lines if line.startswith("| geometric mean")]
    assert "**1.00x / 1.05x / 1.00x**" in mean and "2 of 2 past 5%" in mean


def test_several_seeds_run_in_turn_each_into_its_own_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from benchmarks import backfill, backfill_report

    ran: list[int] = []

    def fake_run(
        matrix: backfill.Matrix, seed: int, progress: object = None, on_cell: object = None
    ) -> tuple[list[dict[str, Any]], list[tuple[str, SimResult]]]:
        ran.append(seed)
        return [
            _seed_row("easy-aging", 10.0, 20.0, 5.0, 0.6),
            _seed_row("cpsat-schedule", 5.0 * seed, 20.0, 5.0, 0.6),
        ], []

    monkeypatch.setattr(backfill, "run_matrix", fake_run)
    monkeypatch.setattr(backfill_report, "plots", lambda kept, out: [])
    assert backfill.main(["--out", str(tmp_path), "--seeds", "3,1"]) == 0
    assert ran == [3, 1]
    assert (tmp_path / "seed-3" / "backfill.md").is_file()
    assert (tmp_path / "seed-1" / "backfill.json").is_file()
    spread = (tmp_path / "seeds.md").read_text()
    assert "--seeds 3,1" in spread and "Partial" not in spread
    assert "| 3 | 10.00 / 20.00 / 5.00 | 15.00 / 20.00 / 5.00 | 1.50x / 1.00x / 1.00x |" in spread
    for bad in (["--seeds", "1,1"], ["--seeds", "1,x"], ["--seed", "2", "--seeds", "1"]):
        with pytest.raises(SystemExit):
            backfill.main(["--out", str(tmp_path), *bad])
