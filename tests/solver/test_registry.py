"""The one place a solver is assembled: named, time-aware when asked, every plan checked."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from placer.model.cluster import ClusterSnapshot
from placer.model.errors import InputError
from placer.model.options import NOT_EXPLAINED, SolveOptions, TimePolicy
from placer.model.plan import Plan
from placer.model.workload import JobSetRequest
from placer.solver.registry import (
    SOLVER_NAMES,
    CheckedSolver,
    InvalidPlanError,
    get_solver,
    prepare_solver,
)
from placer.solver.time.timeaware import TimeAwareSolver
from tests.strategies import cluster, jobset, pool, rjob

HEAD = TimePolicy(reservations="head")


class _Recording:
    """Wraps a solver, keeping the options it was called with; can drop the plan's outcomes."""

    def __init__(self, inner_name: str, *, drop_outcomes: bool = False) -> None:
        self.inner = get_solver(inner_name).inner
        self.name = "recording"
        self.drop = drop_outcomes
        self.seen: list[SolveOptions] = []

    def solve(
        self, snapshot: ClusterSnapshot, jobsets: Sequence[JobSetRequest], options: SolveOptions
    ) -> Plan:
        self.seen.append(options)
        plan: Plan = self.inner.solve(snapshot, jobsets, options)
        return plan.model_copy(update={"jobsets": []}) if self.drop else plan


def _inputs() -> tuple[ClusterSnapshot, list[JobSetRequest]]:
    return cluster(pool("p0", 2), pool("p1", 2)), [jobset("a", rjob(replicas=2, tpu=4))]


@pytest.mark.parametrize("name", SOLVER_NAMES)
def test_every_named_solver_comes_checked_and_times_the_check(name: str) -> None:
    solver = get_solver(name)
    assert isinstance(solver, CheckedSolver) and solver.name == name
    snapshot, jobsets = _inputs()
    plan = solver.solve(snapshot, jobsets, SolveOptions(workers=1, time_limit_s=5))
    assert list(plan.solver.phases)[-1] == "check"
    assert plan.solver.wall_seconds >= plan.solver.phases["check"]


def test_time_aware_only_when_the_policy_is_active() -> None:
    assert isinstance(get_solver("best-fit", time_policy=HEAD).inner, TimeAwareSolver)
    for policy in (None, TimePolicy()):
        inner = get_solver("best-fit", time_policy=policy).inner
        assert not isinstance(inner, TimeAwareSolver)


def test_preparing_twice_wraps_once() -> None:
    once = prepare_solver(get_solver("best-fit"), time_policy=HEAD)
    twice = prepare_solver(once, time_policy=HEAD)
    assert isinstance(twice, CheckedSolver) and isinstance(twice.inner, TimeAwareSolver)
    assert not isinstance(twice.inner.inner, (TimeAwareSolver, CheckedSolver))


def test_the_inner_solver_is_told_not_to_check_again() -> None:
    recording = _Recording("best-fit")
    snapshot, jobsets = _inputs()
    prepare_solver(recording).solve(snapshot, jobsets, SolveOptions())
    assert [o.check for o in recording.seen] == [False]


def test_an_invalid_plan_is_never_returned() -> None:
    snapshot, jobsets = _inputs()
    with pytest.raises(InvalidPlanError) as e:
        prepare_solver(_Recording("best-fit", drop_outcomes=True)).solve(
            snapshot, jobsets, SolveOptions()
        )
    assert str(e.value).startswith("recording produced an invalid plan: ")
    assert e.value.violations


def test_check_off_returns_the_plan_unchecked() -> None:
    snapshot, jobsets = _inputs()
    solver = prepare_solver(_Recording("best-fit", drop_outcomes=True))
    plan = solver.solve(snapshot, jobsets, SolveOptions(check=False))
    assert plan.jobsets == [] and "check" not in plan.solver.phases


def test_an_unknown_name_is_a_usage_error() -> None:
    with pytest.raises(InputError) as e:
        get_solver("simplex")
    assert e.value.code == "usage" and "choose one of cpsat, first-fit" in str(e.value)


@pytest.mark.parametrize("name", SOLVER_NAMES)
def test_a_plan_without_reasons_places_the_same_and_says_so_for_the_rest(name: str) -> None:
    """`SolveOptions(reasons=False)`: the same placements as with reasons (they only word
    what is left out), every JobSet left out told `NOT_EXPLAINED`, and the checker content."""
    snap = cluster(pool("p0", 2), pool("p1", 2))
    queue = [jobset(f"js{i}", rjob(replicas=1), order=i) for i in range(4)]
    said = get_solver(name).solve(snap, queue, SolveOptions(workers=1))
    quiet = get_solver(name).solve(snap, queue, SolveOptions(workers=1, reasons=False))
    assert [(o.key, o.status, o.jobs) for o in quiet.jobsets] == [
        (o.key, o.status, o.jobs) for o in said.jobsets
    ]
    left = [o for o in quiet.jobsets if o.status != "placed"]
    assert len(left) == 2
    assert all(o.reason.endswith(NOT_EXPLAINED) for o in left)
    assert not any(NOT_EXPLAINED in o.reason for o in said.jobsets)
