"""The wait floors on hand-made pools whose least longest wait is known by hand."""

from __future__ import annotations

from dataclasses import replace

import pytest

from benchmarks.pool_relaxation import (
    NESTED,
    PoolJob,
    divisible_floor,
    greedy_schedule,
    integral_floor,
    pool_members,
)
from benchmarks.wait_floor import Search, pool_rows
from benchmarks.worlds.simworld import SimConfig, build_world

HOUR_MIN = 60


def _same(n: int, width: int, minutes: int = HOUR_MIN) -> list[PoolJob]:
    return [PoolJob(0, minutes, width) for _ in range(n)]


@pytest.mark.parametrize("method", ["bisect", "minimize"])
def test_three_full_width_jobsets_on_two_domains_the_third_waits_two_hours(method: str) -> None:
    jobs = _same(3, 2)
    found = integral_floor(jobs, [(range(3), 2)], time_limit_s=10, method=method)
    assert (found.bound, found.best, found.status) == (120, 120, "OPTIMAL")
    assert divisible_floor(jobs, 2, tolerance=0.01) == pytest.approx(120, abs=0.01)


def test_whole_domains_wait_longer_than_divisible_capacity_says() -> None:
    """Two-domain JobSets on three domains: one runs at a time (2 + 2 > 3), so the third waits
    2 h, where divisible capacity would run them 1.5 at a time and make it wait 1 h."""
    jobs = _same(3, 2)
    found = integral_floor(jobs, [(range(3), 3)], time_limit_s=10)
    assert (found.bound, found.best) == (120, 120)
    assert divisible_floor(jobs, 3, tolerance=0.01) == pytest.approx(60, abs=0.01)


def test_late_arrivals_and_backfill_count_from_arrival() -> None:
    """At 30 min a 1-domain JobSet fits beside the running one (no wait) and a 2-domain one then
    waits until 90 (60 min); starting the wide one first at 60 would make the narrow wait 90."""
    jobs = [PoolJob(0, 60, 1), PoolJob(30, 60, 1), PoolJob(30, 60, 2)]
    found = integral_floor(jobs, [(range(3), 2)], time_limit_s=10)
    assert (found.bound, found.best) == (60, 60)
    assert greedy_schedule(jobs, [(range(3), 2)]) == [0, 30, 90]


def test_a_smaller_pool_inside_the_union_binds() -> None:
    """Pool "all": two 1-rack JobSets that fit only one rack queue there even with racks free."""
    jobs = [PoolJob(0, 60, 1), PoolJob(0, 60, 1), PoolJob(0, 60, 1)]
    groups = [(range(2), 1), (range(2, 3), 4), (range(3), 4)]
    found = integral_floor(jobs, groups, time_limit_s=10)
    assert (found.bound, found.best) == (60, 60)


def test_a_small_world_has_ordered_floors_per_pool() -> None:
    """Every shape pool of a small GB200 world, plus "all" (every rack): the integral floor is at
    least the divisible one (up to the model's minute), and no schedule found beats it."""
    world = build_world("gb200", 1, replace(SimConfig(), jobsets=40))
    rows = pool_rows(world, Search(time_limit_s=2.0))
    assert {r.pool for r in rows} == {*pool_members(world), "all", NESTED}
    for r in rows:
        assert r.integral_h >= r.divisible_h - 2 / 60
        assert r.best_h is not None and r.best_h >= r.integral_h
    top = next(r for r in rows if r.pool == "all")
    nested = next(r for r in rows if r.pool == NESTED)
    if all(r.status == "OPTIMAL" for r in rows):  # "all" holds every pool's cumulative
        assert top.integral_h >= max(r.integral_h for r in rows if r is not nested) - 1 / 60
        assert nested.integral_h >= top.integral_h


def test_nested_pools_share_the_narrow_pools_domains() -> None:
    """A 1-rack JobSet whose rack is one of the two a 2-rack JobSet fits, on 3 racks: counted per
    pool both start at once; with the pools nested (1 + 2 > 2) one of them waits an hour."""
    jobs = [PoolJob(0, 60, 1), PoolJob(0, 60, 2)]
    apart = [(range(1), 1), (range(1, 2), 2), (range(2), 3)]
    nested = [(range(1), 1), (range(2), 2), (range(2), 3)]
    assert integral_floor(jobs, apart, time_limit_s=10).bound == 0
    assert integral_floor(jobs, nested, time_limit_s=10).bound == 60
