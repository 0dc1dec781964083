"""The schedule's search stops when it stalls (`settings.solve_until_stalled`)."""

from __future__ import annotations

import itertools

from ortools.sat.python import cp_model

from placer.solver.cpsat import solve_until_stalled


def _golomb(marks: int) -> cp_model.CpModel:
    """The shortest Golomb ruler: good solutions come fast, the proof (55 for 10 marks) takes
    CP-SAT far longer than the stall."""
    model = cp_model.CpModel()
    top = marks * marks
    x = [model.new_int_var(0, top, f"x[{i}]") for i in range(marks)]
    model.add(x[0] == 0)
    for a, b in itertools.pairwise(x):
        model.add(a < b)
    gaps = []
    for i in range(marks):
        for j in range(i + 1, marks):
            gap = model.new_int_var(1, top, f"gap[{i},{j}]")
            model.add(gap == x[j] - x[i])
            gaps.append(gap)
    model.add_all_different(gaps)
    model.minimize(x[-1])
    return model


def test_a_search_that_stops_improving_stops_before_its_time_cap() -> None:
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = 60.0
    solver.parameters.num_workers = 2
    solver.parameters.random_seed = 1
    status = solve_until_stalled(solver, _golomb(10), stall_s=0.2)
    assert solver.status_name(status) == "FEASIBLE"
    assert solver.wall_time < 10.0
    assert solver.objective_value >= 55


def test_a_search_proven_before_it_stalls_is_optimal() -> None:
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = 60.0
    solver.parameters.num_workers = 2
    status = solve_until_stalled(solver, _golomb(5), stall_s=5.0)
    assert solver.status_name(status) == "OPTIMAL"
    assert solver.objective_value == 11
