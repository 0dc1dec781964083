from __future__ import annotations

import pytest

from placer.model.plan import JobSetOutcome, Plan, SolverReport
from placer.render.table import compact_list, gap_percent, render_table, solver_line
from tests.render.plans import job, sample_plan
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


def _fleet_plan(jobsets: int, *, pool_name: str = "pool") -> Plan:
    """`jobsets` JobSets: every third unschedulable with a long reason, the rest placed."""
    outcomes = []
    for i in range(jobsets):
        if i % 3 == 0:
            outcomes.append(
                JobSetOutcome(
                    namespace="team",
                    name=f"js-{i:03d}",
                    status="unschedulable",
                    priority=i % 7,
                    reason="needs 8 domains; held by " + ", ".join(f"x/{k}" for k in range(900)),
                )
            )
        else:
            jobs = [job(f"js-{i:03d}", k, f"{pool_name}-{i}-{k}") for k in range(6)]
            outcomes.append(
                JobSetOutcome(
                    namespace="team",
                    name=f"js-{i:03d}",
                    status="placed",
                    accelerators=48,
                    jobs=jobs,
                )
            )
    report = SolverReport(
        name="cpsat",
        status="OPTIMAL",
        objective=48,
        bound=48,
        phases={f"phase-{k}": 0.5 for k in range(12)},
    )
    return Plan(solver=report, jobsets=outcomes)


def test_fleet_table_is_summarized_and_fits_the_width() -> None:
    plan = _fleet_plan(120, pool_name="a-very-long-node-pool-name-for-this-fleet")
    text = render_table(plan, width=100, max_rows=40)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 100
    assert lines[0] == "120 JobSets: 80 placed, 40 unschedulable; accelerators 3840"
    assert lines[1] == "not placed, highest priority first (20 more not shown):"
    rows = [line.split()[0] for line in lines[3:23]]
    assert len(rows) == 20 and all(r.startswith("team/js-") for r in rows)
    unplaced = [o for o in plan.jobsets if o.status != "placed"]
    expected = sorted(unplaced, key=lambda o: -o.priority)[:20]  # stable: queue order in a tier
    assert rows == [o.key for o in expected]
    assert "all 120 JobSets: -o wide (table) or -o json" in lines
    # the solver line is wrapped, not cut: every phase is still there
    assert all(f"phase-{k} 0.50 s" in text.replace("\n  ", " ") for k in range(12))


def test_wide_table_keeps_every_row_and_every_character() -> None:
    plan = _fleet_plan(120)
    text = render_table(plan)
    assert len(text.splitlines()) > 120 + 40
    assert max(len(line) for line in text.splitlines()) > 5000


def test_narrow_width_shrinks_the_domains_column_first() -> None:
    plan = _fleet_plan(3, pool_name="a-very-long-node-pool-name-for-this-fleet")
    lines = render_table(plan, width=90, max_rows=40).splitlines()
    header, placed = lines[0], lines[2]
    assert len(placed) <= 90 and placed.endswith("48")  # ACCELERATORS kept, DOMAINS cut
    assert header.split()[-1] == "ACCELERATORS"
    assert "..." in placed


def test_eta_column_appears_only_when_time_was_planned() -> None:
    from placer.model.plan import DomainRef
    from placer.render.table import eta

    report = SolverReport(name="cpsat", status="OPTIMAL", objective=8, bound=8)
    waiting = JobSetOutcome(
        name="wide",
        status="unschedulable",
        expected_start_seconds=9000,
        reserved_domains=[DomainRef(key="pool", value="p0")],
    )
    placed = JobSetOutcome(name="short", status="placed", expected_start_seconds=0, backfill=True)
    never = JobSetOutcome(name="huge", status="unschedulable")
    late = waiting.model_copy(update={"past_max_wait": True})
    unreserved = late.model_copy(update={"reserved_domains": [], "expected_start_seconds": 3600})
    assert [eta(o) for o in (waiting, placed, never, late, unreserved)] == [
        "in 2h30m (reserved)",
        "now (backfill)",
        "never",
        "in 2h30m (reserved, past --max-wait)",
        "in 1h (past --max-wait)",
    ]
    timed = render_table(Plan(solver=report, jobsets=[waiting, placed, never]))
    assert timed.splitlines()[0].split()[-1] == "ETA"
    untimed = render_table(Plan(solver=report, jobsets=[never]))
    assert "ETA" not in untimed
