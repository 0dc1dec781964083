"""The p95 floor: its allowance agrees with the benchmark's percentile, its late counts are known
by hand on small pools, and a simulated policy never beats the floor."""

from __future__ import annotations

import argparse
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.late_floor import (
    BASELINE_MAX_H,
    TARGET_MAX_H,
    P95Floor,
    _longest_choice,
    admits,
    allowed_late,
    cap_minutes,
    late_waits,
    longest_for,
    p95_floor,
    verdict,
)
from benchmarks.pool_relaxation import (
    NESTED,
    Part,
    PoolJob,
    combined,
    greedy_schedule,
    parts,
    pool_members,
)
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


def test_with_a_longest_wait_the_late_jobset_still_runs() -> None:
    """The same three JobSets: left out, the long one costs nothing; made to start within 20
    minutes it blocks a short one past any wait, and within 21 it starts after both short ones
    (1-11, 11-21), late but within the bound; the second short one waits 9 minutes then."""
    jobs = [PoolJob(0, 100, 1), PoolJob(1, 10, 1), PoolJob(2, 10, 1)]
    groups = [(range(3), 1)]
    assert admits(jobs, groups, 20, 1, longest=20, time_limit_s=10) == "no"
    assert admits(jobs, groups, 20, 1, longest=21, time_limit_s=10) == "yes"
    assert admits(jobs, groups, 9, 1, longest=21, time_limit_s=10) == "yes"  # the second waits 9
    assert admits(jobs, groups, 8, 1, longest=21, time_limit_s=10) == "no"


def test_list_scheduling_answers_yes_only_within_the_longest_wait() -> None:
    """Two JobSets each taking the one domain for an hour at once: list scheduling has one late
    by 60 minutes, enough for an allowance of one, but not for a longest wait of 59."""
    jobs = [PoolJob(0, 60, 1), PoolJob(0, 60, 1)]
    groups = [(range(2), 1)]
    assert admits(jobs, groups, 30, 1, longest=60, time_limit_s=10) == "yes"
    assert admits(jobs, groups, 30, 1, longest=59, time_limit_s=10) == "no"


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


def _insertion_schedule(jobs: list[PoolJob], domains: int, order: tuple[int, ...]) -> list[int]:
    """Starts placing `jobs` one by one in `order`, each at the earliest minute from its arrival
    at which its domains are free for its whole run: a schedule of the model for every order."""
    used: dict[int, int] = {}
    starts = [0] * len(jobs)
    for i in order:
        job = jobs[i]
        t = int(job.arrival)
        while any(used.get(m, 0) + job.width > domains for m in range(t, t + int(job.duration))):
            t += 1
        starts[i] = t
        for m in range(t, t + int(job.duration)):
            used[m] = used.get(m, 0) + job.width
    return starts


@settings(max_examples=40, deadline=None)
@given(
    st.lists(pool_job, min_size=1, max_size=5),
    st.integers(2, 3),
    st.integers(0, 150),
    st.integers(0, 250),
    st.permutations(range(5)),
)
def test_with_a_longest_wait_a_no_is_only_given_where_no_schedule_exists(
    jobs: list[PoolJob], domains: int, cap: int, longest: int, order: list[int]
) -> None:
    """Any order of insertion gives a schedule; if it has few enough late JobSets and every wait
    within `longest`, the model must say yes, and a yes with the bound is a yes without it."""
    groups = [(range(len(jobs)), domains)]
    starts = _insertion_schedule(jobs, domains, tuple(i for i in order if i < len(jobs)))
    late = late_waits(jobs, starts, cap)
    if late_waits(jobs, starts, longest) == 0:
        assert admits(jobs, groups, cap, late, longest=longest, time_limit_s=5) == "yes"
    if admits(jobs, groups, cap, 0, longest=longest, time_limit_s=5) == "yes":
        assert admits(jobs, groups, cap, 0, time_limit_s=5) == "yes"


def test_the_longest_wait_is_baseline_target_or_hours() -> None:
    assert longest_for("tpu", None) is None
    assert longest_for("tpu", "baseline") == BASELINE_MAX_H["tpu"] == 49.75
    assert longest_for("gb200", "target") == pytest.approx(0.85 * 41.28) == TARGET_MAX_H["gb200"]
    assert longest_for("tpu", "36.5") == 36.5
    for bad in ("nan", "inf", "0", "-3", "soon"):
        with pytest.raises(argparse.ArgumentTypeError):
            _longest_choice(bad)


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
    assert found.ceiling_h is not None and 1.0 < found.floor_h <= found.ceiling_h
    options = SolveOptions(time_limit_s=5.0, workers=1, seed=1)
    (result,) = simulate(world, ["easy"], options, cfg)
    assert percentile(result.delays_s, 95) / HOUR >= found.floor_h - 1 / 60


def test_no_simulated_policy_goes_below_the_floor_within_its_own_longest_wait() -> None:
    """The same world, every JobSet held to EASY's own longest wait: EASY is one such policy,
    so its p95 is at least that floor, and what the relaxation admits is at least the floor."""
    cfg = replace(SimConfig(), jobsets=120)
    world = build_world("tpu", 1, cfg)
    options = SolveOptions(time_limit_s=5.0, workers=1, seed=1)
    (result,) = simulate(world, ["easy"], options, cfg)
    longest_h = max(result.delays_s) / HOUR
    bounded = p95_floor(world, longest_h=longest_h, time_limit_s=3, budget_s=30)
    assert bounded.longest_h == longest_h and bounded.floor_h > 1.0
    assert percentile(result.delays_s, 95) / HOUR >= bounded.floor_h - 1 / 60
    assert bounded.ceiling_h is None or bounded.floor_h <= bounded.ceiling_h


def test_a_yes_at_the_targets_own_cap_is_not_undecided() -> None:
    """The target is asked at its cap in whole minutes, a minute above it (21.39 h asks 1284
    minutes, 21.40 h): a yes there meets the target though the ceiling reads above it."""
    row = P95Floor("gb200-288n", 300, 15, 21.39, "yes", 6.20, 21.40, 11, 285.0, 35.09)
    assert verdict("gb200", row).endswith(
        "not shown out of reach: the relaxation, knowing the future, meets it"
    )
    assert "within 35.09 h" in verdict("gb200", row)
    undecided = replace(row, at_target="unknown", ceiling_h=None)
    assert verdict("gb200", undecided).endswith("undecided in the time given")
    proven = replace(row, at_target="no", floor_h=21.40)
    assert verdict("gb200", proven).endswith("out of reach for every non-preemptive policy")
