"""The Kueue TAS benchmark scenario builds what it says, and its span figures count racks."""

from __future__ import annotations

import pytest

from benchmarks.kueue_tas import SOLVERS, main, racks_floor, spans
from benchmarks.worlds.kueue_shared import kueue_shared
from benchmarks.worlds.records import BLOCK, SUBBLOCK
from placer.model.options import SolveOptions
from placer.solver.check.checker import check
from placer.solver.registry import get_solver


def test_the_queue_is_non_exclusive_with_rack_or_block_topology() -> None:
    scenario = kueue_shared(0, 1.0)
    requests = scenario.requests
    assert requests and scenario.nodes == 224
    for js in requests:
        (r,) = js.replicated_jobs
        assert r.exclusive_key is None and r.kueue_topology
        assert (r.required_topology or r.preferred_topology) in (BLOCK, SUBBLOCK)
    assert {r.replicated_jobs[0].required_topology is None for r in requests} == {True, False}
    assert kueue_shared(0, 1.0).requests == requests  # seeded


def test_spans_count_the_racks_of_each_placed_jobset() -> None:
    scenario = kueue_shared(1, 0.5)
    snapshot, requests = scenario.snapshot, scenario.requests
    options = SolveOptions(workers=1)
    plan = get_solver("best-fit").solve(snapshot, requests, options)
    assert check(plan, snapshot, requests, options) == []
    placed = [o for o in plan.jobsets if o.status == "placed"]
    assert placed
    nodes = snapshot.by_name()
    racks = [
        len(
            {
                (nodes[p.node].labels[BLOCK], nodes[p.node].labels[SUBBLOCK])
                for j in o.jobs
                for p in j.pods
            }
        )
        for o in placed
    ]
    assert spans(plan, snapshot)[0] == sum(racks) / len(racks)
    assert spans(plan, snapshot, {placed[0].key})[0] == racks[0]


def test_the_racks_floor_is_never_above_what_a_plan_spans() -> None:
    """`racks_floor` proves the fewest racks per JobSet at a plan's admission: never more than
    the plan itself spans, and for best-fit's greedy plan here strictly fewer is possible."""
    scenario = kueue_shared(1, 0.5)
    snapshot, requests = scenario.snapshot, scenario.requests
    options = SolveOptions(workers=1, time_limit_s=20)
    for solver in ("best-fit", "cpsat"):
        plan = get_solver(solver).solve(snapshot, requests, options)
        assert check(plan, snapshot, requests, options) == []
        floor = racks_floor(snapshot, requests, options, plan)
        assert floor is not None
        assert floor <= spans(plan, snapshot)[0] + 1e-9
        if solver == "best-fit":
            assert floor < spans(plan, snapshot)[0]


def test_the_benchmark_prints_a_row_per_seed_and_solver(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--seeds", "0", "--size", "0.1", "--time-limit", "2", "--workers", "1"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| 0 |")]
    assert [row.split("|")[2].strip() for row in rows] == list(SOLVERS)
