"""The benchmark generator: reproducible, and the two input paths (in-memory objects, kubectl JSON
plus JobSet YAML) describe the same problem, so in-process and end-to-end timings are comparable."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from benchmarks.reporting.metrics import apply_plan, plan_metrics
from benchmarks.worlds import scenarios
from benchmarks.worlds.kubectl_export import write_scenario
from benchmarks.worlds.scenarios import Scenario
from placer.model.jobset.parse import load_jobsets
from placer.model.options import SolveOptions
from placer.model.snapshots.load import load_snapshot
from placer.solver.check.checker import check
from placer.solver.registry import get_solver

BUILDERS = [
    pytest.param(lambda: scenarios.tpu_mixed(3, 0.3), id="tpu-mixed"),
    pytest.param(lambda: scenarios.gb200(3, 0.5), id="gb200"),
    pytest.param(lambda: scenarios.hetero(3, 0.3), id="hetero"),
]


@pytest.mark.parametrize("build", BUILDERS)
def test_same_seed_same_scenario(build: Callable[[], Scenario]) -> None:
    a, b = build(), build()
    assert a.snapshot == b.snapshot
    assert a.requests == b.requests
    assert a.queue, "a scenario without pending JobSets measures nothing"


@pytest.mark.parametrize("build", BUILDERS)
def test_kubectl_export_loads_to_the_same_problem(
    build: Callable[[], Scenario], tmp_path: Path
) -> None:
    sc = build()
    cluster, jobsets = write_scenario(sc.cluster, sc.queue, tmp_path)
    loaded = load_snapshot([cluster])
    assert loaded.priority_classes == sc.snapshot.priority_classes
    assert {n.name: n for n in loaded.nodes} == {n.name: n for n in sc.snapshot.nodes}
    parsed = {j.key: j for j in load_jobsets([jobsets], priorities=loaded.priorities)}
    skip = {"order", "source", "manifest", "uid"}
    for req in sc.requests:
        assert parsed[req.key].model_dump(exclude=skip) == req.model_dump(exclude=skip)


def test_background_load_is_present() -> None:
    sc = scenarios.gb200(5, 1.0)
    nodes = sc.snapshot.nodes
    assert any(n.jobsets for n in nodes), "some domains are held by running JobSets"
    assert any(not n.ready for n in nodes)
    assert any(n.unschedulable for n in nodes)
    assert sc.cluster.free_accelerators() < sc.cluster.total_accelerators()


def test_metrics_count_what_the_plan_placed() -> None:
    sc = scenarios.tpu_v5e(2, 0.5)
    options = SolveOptions(time_limit_s=2)
    plan = get_solver("best-fit").solve(sc.snapshot, sc.requests, options)
    assert check(plan, sc.snapshot, sc.requests, options) == []
    m = plan_metrics(plan, sc.snapshot, sc.requests, options, span_level=None)
    placed = [o for o in plan.jobsets if o.status == "placed"]
    assert m.admitted == len(placed)
    assert m.units_admitted == plan.accelerators_admitted
    assert sum(m.units_by_tier.values()) == m.units_admitted
    after = apply_plan(sc.snapshot, sc.requests, plan)
    used = {p.node for o in placed for j in o.jobs for p in j.pods}
    assert all(
        o.key in after.node(n).jobsets
        for o in placed
        for j in o.jobs
        for p in j.pods
        for n in [p.node]
    )
    assert used, "the tiny v5e scenario admits something"
    assert 0 <= m.stranded_units <= m.free_after
