"""The p95 floor: its allowance agrees with the benchmark's percentile, its late counts are known
by hand on small pools, and a simulated policy never beats the floor."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.late_floor import (
    Part,
    admits,
    allowed_late,
    cap_minutes,
    combined,
    late_waits,
    p95_floor,
    parts,
)
from benchmarks.pool_relaxation import NESTED, PoolJob, greedy_schedule, pool_members
from benchmarks.reporting.stats import percentile
from benchmarks.simulate.overtime import simulate
from benchmarks.worlds.simworld import HOUR, SimConfig, build_world
from placer.model.options import SolveOptions


@given(
    st.lists(st.integers(0, 1000), min_size=1, max_size=60),
    st.integers(0, 1000),
)
def test_a_p95_within_t_leaves_at_most_the_allowance_above_t(waits: list[int], t: int) -> None:
    late = sum(1 for w in waits if w > t)
    if percentile([float(w) for w in waits], 95) <= t:
        assert late <= allowed_late(len(waits))


def test_the_allowance_is_15_of_300_and_none_of_one() -> None:
    assert allowed_late(300) == 15
    assert allowed_late(1) == 0
    assert allowed_late(0) == 0
    assert allowed_late(21, 50) == 10


def test_a_wait_of_t_hours_fits_its_cap_in_minutes() -> None:
    assert cap_minutes(1.0) == 61
    assert cap_minutes(0.0) == 1


def test_four_jobsets_each_taking_both_domains_run_one_at_a_time() -> None:
    jobs = [PoolJob(0, 60, 2) for _ in range(4)]
    groups = [(range(4), 2)]
    assert admits(jobs, groups, 59, 2, time_limit_s=10) == "no"  # only one starts in the hour
    assert admits(jobs, groups, 59, 3, time_limit_s=10) == "yes"
    assert admits(jobs, groups, 180, 0, time_limit_s=10) == "yes"


def test_leaving_the_long_first_arrival_out_beats_first_come_first_served() -> None:
    """One domain: a 100-minute run arrives first, two 10-minute runs just after. In arrival
    order both short ones wait past 20 minutes; leaving the long one late keeps both on time."""
    jobs = [PoolJob(0, 100, 1), PoolJob(1, 10, 1), PoolJob(2, 10, 1)]
    groups = [(range(3), 1)]
    assert late_waits(jobs, greedy_schedule(jobs, groups), 20) == 2
    assert admits(jobs, groups, 20, 1, time_limit_s=10) == "yes"
    assert admits(jobs, groups, 20, 0, time_limit_s=10) == "no"


def test_parts_keep_their_own_cumulatives_in_one_model() -> None:
    """Two one-domain pools, two hour-long JobSets each at once: apart, one of each waits; had
    the pools been pooled into two domains, nobody would."""
    one = Part("a", [PoolJob(0, 60, 1), PoolJob(0, 60, 1)], [(range(2), 1)])
    jobs, groups = combined([one, replace(one, name="b")])
    assert [list(idx) for idx, _ in groups] == [[0, 1], [2, 3]]
    assert admits(jobs, groups, 30, 1, time_limit_s=10) == "no"
    assert admits(jobs, groups, 30, 2, time_limit_s=10) == "yes"


pool_job = st.builds(PoolJob, st.integers(0, 100), st.integers(0, 120), st.integers(1, 2))


def _fewest_late_by_list_scheduling(jobs: list[PoolJob], domains: int, cap: int) -> int:
    """Over every subset of `jobs` (tiny instances only), the fewest left out such that list
    scheduling the rest alone starts none of them late: a schedule that exists, so an upper
    bound on the fewest late, often below list scheduling's own over all of them."""
    fewest = len(jobs)
    for mask in range(1, 1 << len(jobs)):  # leaving every one out is `fewest`'s start
        kept = [j for i, j in enumerate(jobs) if mask >> i & 1]
        if late_waits(kept, greedy_schedule(kept, [(range(len(kept)), domains)]), cap) == 0:
            fewest = min(fewest, len(jobs) - len(kept))
    return fewest


@settings(max_examples=40, deadline=None)
@given(st.lists(pool_job, min_size=1, max_size=6), st.integers(2, 4), st.integers(0, 200))
def test_a_no_is_only_given_where_no_schedule_exists(
    jobs: list[PoolJob], domains: int, cap: int
) -> None:
    """A "no" is what makes a floor: the model never refuses a late count some schedule has,
    and a refusal holds for fewer late JobSets and for a shorter cap too."""
    groups = [(range(len(jobs)), domains)]
    some = _fewest_late_by_list_scheduling(jobs, domains, cap)
    assert admits(jobs, groups, cap, some, time_limit_s=5) == "yes"
    if some > 0 and admits(jobs, groups, cap, some - 1, time_limit_s=5) == "no":
        assert admits(jobs, groups, max(0, cap - 30), some - 1, time_limit_s=5) == "no"
        if some > 1:
            assert admits(jobs, groups, cap, some - 2, time_limit_s=5) == "no"


def test_slice_pools_are_parts_of_their_own_and_racks_one_nested_part() -> None:
    cfg = replace(SimConfig(), jobsets=40)
    tpu = build_world("tpu", 1, cfg)
    tpu_parts = parts(tpu)
    assert [p.name for p in tpu_parts] == sorted(pool_members(tpu))
    assert sum(len(p.jobs) for p in tpu_parts) == len(tpu.queue)
    (gb200,) = parts(build_world("gb200", 1, cfg))
    assert gb200.name == NESTED and len(gb200.jobs) == 40


def test_no_simulated_policy_goes_below_the_floor() -> None:
    """A 120-JobSet TPU world at 90% load (floor 4.27 h when written): EASY backfill's p95 is
    at least the floor, and the floor is at most what the relaxation admits."""
    cfg = replace(SimConfig(), jobsets=120)
    world = build_world("tpu", 1, cfg)
    found = p95_floor(world, time_limit_s=3, budget_s=30)
    assert 1.0 < found.floor_h <= found.ceiling_h
    options = SolveOptions(time_limit_s=5.0, workers=1, seed=1)
    (result,) = simulate(world, ["easy"], options, cfg)
    assert percentile(result.delays_s, 95) / HOUR >= found.floor_h - 1 / 60
