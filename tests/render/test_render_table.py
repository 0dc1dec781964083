from __future__ import annotations

import pytest

from placer.model.plan import Plan, SolverReport
from placer.render.table import compact_list, gap_percent, render_table, solver_line
from tests.render.plans import sample_plan
from tests.strategies import jobset, rjob


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        pytest.param([], "-", id="none"),
        pytest.param(["a"], "a", id="one"),
        pytest.param(["a", "b", "c"], "a,b,c", id="three"),
        pytest.param(["a", "b", "c", "d", "e"], "a,b,c+2", id="five"),
    ],
)
def test_compact_list(values: list[str], expected: str) -> None:
    assert compact_list(values) == expected


def test_table_has_a_row_per_jobset_with_jobs_domains_accelerators() -> None:
    requests = [
        jobset("multislice", rjob(replicas=5), namespace="team-a"),
        jobset("big", rjob(replicas=8), namespace="team-b"),
    ]
    text = render_table(sample_plan(), requests)
    lines = text.splitlines()
    assert lines[0].split() == ["JOBSET", "STATUS", "PRIORITY", "JOBS", "DOMAINS", "ACCELERATORS"]
    assert lines[1].split() == [
        "team-a/multislice",
        "placed",
        "10",
        "5/5",
        "pool0,pool1,pool2+2",
        "40/40",
    ]
    # team-b/big asks for 8 child Jobs x 2 pods x 4 chips = 64 units, holds none
    assert lines[2].split() == ["team-b/big", "unschedulable", "0", "0/8", "-", "0/64"]
    # no request given for team-c/cpu: totals fall back to what the plan lists
    assert lines[3].split() == ["team-c/cpu", "placed", "0", "1/1", "-", "2"]


def test_table_lists_reasons_below_and_ends_with_the_solver_line() -> None:
    lines = render_table(sample_plan()).splitlines()
    assert (
        "team-b/big unschedulable: needs 8 domains of cloud.google.com/gke-nodepool; 5 available"
    ) in lines
    assert lines[-1] == (
        "solver cpsat: FEASIBLE, objective 40, bound 48, gap 16.67%, 1.50 s "
        "(build 0.25 s, solve 1.00 s)"
    )


def test_solver_line_for_a_greedy_without_bound() -> None:
    report = SolverReport(
        name="best-fit", status="HEURISTIC", objective=16, bound=0, wall_seconds=0.01
    )
    assert gap_percent(report) is None
    assert solver_line(report) == (
        "solver best-fit: HEURISTIC, objective 16, bound -, gap -, 0.01 s"
    )


def test_optimal_with_zero_objective_has_zero_gap() -> None:
    report = SolverReport(name="cpsat", status="OPTIMAL")
    assert gap_percent(report) == 0.0


def test_empty_plan() -> None:
    text = render_table(Plan(solver=SolverReport(name="cpsat", status="OPTIMAL"), jobsets=[]))
    assert text.splitlines()[0] == "no JobSets"
    assert text.endswith("gap 0.00%, 0.00 s\n")


def test_solver_line_when_nothing_was_proven() -> None:
    report = SolverReport(
        name="cpsat",
        status="FALLBACK",
        objective=6752,
        bound=None,
        wall_seconds=1.0,
        notes=["no CP-SAT solution within the time limit"],
    )
    assert gap_percent(report) is None
    text = render_table(Plan(solver=report, jobsets=[]))
    assert "solver cpsat: FALLBACK, objective 6752, bound -, gap -, 1.00 s" in text
    assert "note: no CP-SAT solution within the time limit" in text
