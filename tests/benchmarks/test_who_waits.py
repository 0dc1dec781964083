"""`benchmarks.who_waits`: the longest waits of a policy, who overtook them, the waits per
priority, and the report."""

from __future__ import annotations

import pytest

from benchmarks.simulate.results import SimResult
from benchmarks.who_waits import longest_waits, render, shape, tier_waits
from benchmarks.worlds.queues import ChildShape, JobSetSpec, RJobSpec
from benchmarks.worlds.simworld import HOUR
from placer.solver.time.schedule.solve import HintChanges

RACK = ChildShape(
    label="gb200 16h",
    accelerator="nvidia.com/gpu",
    units_per_pod=4,
    pods_per_job=16,
    node_selector=(),
    exclusive_key="nvidia.com/gpu.clique",
)


def _spec(name: str, arrival_h: float, replicas: int = 2, priority: int = 1000) -> JobSetSpec:
    return JobSetSpec(
        namespace="sim",
        name=name,
        priority_class="batch",
        priority=priority,
        arrival_s=arrival_h * HOUR,
        duration_s=12 * HOUR,
        rjobs=(RJobSpec(name="w", shape=RACK, replicas=replicas),),
    )


def _result(policy: str, waits_h: list[float]) -> SimResult:
    return SimResult(
        world="gb200",
        policy=policy,
        delays_s=[w * HOUR for w in waits_h],
        never_started=0,
        starved=0,
        makespan_s=0.0,
        finished=len(waits_h),
        restarts=0,
        utilization=[],
        mean_utilization=0.0,
        window_utilization=0.0,
        window_s=0.0,
        rounds=0,
        round_wall_s=[],
        checked_plans=0,
    )


QUEUE = [_spec("a", 0), _spec("b", 1, replicas=4), _spec("c", 2), _spec("d", 3)]
ANNOUNCED: dict[str, float | None] = {"sim/a": 30 * HOUR, "sim/b": None}


def test_the_longest_waits_of_the_last_policy_longest_first() -> None:
    """c and a wait longest under the last policy; each row carries the first policy's wait for
    the same JobSet and counts who arrived later yet started first under the last one."""
    results = [_result("easy-aging", [5, 1, 30, 2]), _result("cpsat-schedule", [10, 2, 20, 2])]
    waits = longest_waits(QUEUE, ANNOUNCED, results, top=2)
    assert [w.spec.name for w in waits] == ["c", "a"]
    assert [w.waits_s for w in waits] == [(30 * HOUR, 20 * HOUR), (5 * HOUR, 10 * HOUR)]
    # c starts at 22 h: d (arrives 3 h, starts 5 h) overtook it; a starts at 10 h: b (3 h), c
    # no (22 h), d (5 h)
    assert [w.overtaken for w in waits] == [1, 2]
    assert [w.announced_s for w in waits] == [None, 30 * HOUR]


def test_ties_go_to_queue_order_and_top_bounds_the_rows() -> None:
    results = [_result("easy-aging", [3, 3, 3, 3])]
    assert [w.spec.name for w in longest_waits(QUEUE, {}, results, top=3)] == ["a", "b", "c"]


def test_the_report_gives_each_policy_and_a_row_per_wait() -> None:
    results = [_result("easy-aging", [5, 1, 30, 2]), _result("cpsat-schedule", [10, 2, 20, 2])]
    lines = render(longest_waits(QUEUE, ANNOUNCED, results, top=2), results, "cmd")
    assert lines[0] == "Command: `cmd`"
    assert "- cpsat-schedule: p95 " in "\n".join(lines)
    rows = [line for line in lines if line.startswith("| c ") or line.startswith("| a ")]
    assert rows == [
        "| c | 2.00 | 2x gb200 16h | 1000 | 12.00 | none | 30.00 | 20.00 | 1 |",
        "| a | 0.00 | 2x gb200 16h | 1000 | 12.00 | 30.00 | 5.00 | 10.00 | 2 |",
    ]
    assert shape(QUEUE[1]) == "4x gb200 16h"


def test_waits_per_priority_highest_first_per_policy() -> None:
    """The top priority (a, c) waits longer under the second policy though the queue's longest
    wait (b's) is shorter: the report shows both."""
    queue = [_spec("a", 0, priority=10), _spec("b", 1), _spec("c", 2, priority=10)]
    results = [_result("easy-aging", [1, 30, 3]), _result("cpsat-schedule", [5, 20, 9])]
    tiers = tier_waits(queue, results)
    assert [(t.priority, t.count) for t in tiers] == [(1000, 1), (10, 2)]
    assert tiers[0].mean_s == (30 * HOUR, 20 * HOUR)
    assert tiers[1].mean_s == (2 * HOUR, 7 * HOUR)
    assert tiers[1].max_s == (3 * HOUR, 9 * HOUR)
    # p95 of two waits, interpolated: 1 + 0.95 x (3 - 1) h and 5 + 0.95 x (9 - 5) h
    assert tiers[1].p95_s == pytest.approx((2.9 * HOUR, 8.8 * HOUR))
    lines = render([], results, "cmd", tiers)
    assert "| 10 | 2 | 2.00 / 7.00 | 2.90 / 8.80 | 3.00 / 9.00 |" in lines


def test_the_report_says_how_often_the_search_left_its_hint() -> None:
    """Three searched rounds: one kept the hint, two moved starts, one of them who starts now."""
    result = _result("cpsat-schedule", [1, 2, 3, 4])
    result.hint_changes = [
        HintChanges(moved=0, of=5, now=0),
        HintChanges(moved=2, of=5, now=0),
        HintChanges(moved=3, of=6, now=1),
    ]
    lines = render([], [_result("easy-aging", [1, 2, 3, 4]), result], "cmd")
    said = [line for line in lines if "greedy hint" in line]
    assert said == [
        "- cpsat-schedule's search moved starts from its greedy hint in 2 of 3 rounds, and "
        "changed who starts now in 1"
    ]
