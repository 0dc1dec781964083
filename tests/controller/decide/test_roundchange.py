"""The ledger change a round commits (roundchange.round_change), decided without a cluster:
placements and reservations in one change, reservations only with time-aware planning and
announced only as new, a placement the ledger's node check refuses made unschedulable."""

from __future__ import annotations

import dataclasses

from placer.controller.decide.domains import DomainIndex
from placer.controller.decide.ledger import PLACEMENT, RESERVATION, Ledger, LedgerEntry, entry_key
from placer.controller.decide.ledgerplan import LedgerView
from placer.controller.decide.observed import Reviewed
from placer.controller.decide.planning import PlannedRound, planning_inputs, solve_targets
from placer.controller.decide.review import review
from placer.controller.decide.roundchange import RoundChange, round_change
from placer.controller.decide.snapshot import planning_snapshot
from placer.controller.decide.state import ClusterState
from placer.controller.decide.survey import survey
from placer.model.options import SolveOptions, TimePolicy
from placer.solver.check.checker import check
from placer.solver.registry import get_solver
from tests.controller.builders import (
    add_jobset,
    block_of,
    on_blocks,
    reviewed_of,
    state_of,
    tpu_cluster,
)
from tests.controller.decide.kueue.test_check import NOW_S, running_jobset

TIMED = SolveOptions(time=TimePolicy(reservations="head"))
UNTIMED = SolveOptions()


def _state() -> ClusterState:
    """Three blocks, two held for 4 h by a running JobSet; `a` (one child Job) fits the third
    now, `b` (two child Jobs) waits for the running one."""
    cluster = tpu_cluster(blocks=3)
    running_jobset(cluster, "run", [0, 1], hours=4)
    add_jobset(cluster, "a", jobs=1, priority=100)
    add_jobset(cluster, "b", jobs=2, priority=10)
    return state_of(cluster)


def _round(
    state: ClusterState, options: SolveOptions, ledger: Ledger | None = None
) -> tuple[Reviewed, PlannedRound]:
    """One round's review and plan, as the controller makes them, the plans checked."""
    managed = survey(state, binding="gate")
    rev = review(managed, DomainIndex(planning_snapshot(state, binding="gate")), options)
    reviewed = reviewed_of(state, managed, rev, options, wall_s=NOW_S)
    if ledger is not None:
        reviewed = dataclasses.replace(
            reviewed, observed=dataclasses.replace(reviewed.observed, ledger=ledger)
        )
    inputs = planning_inputs(reviewed, pinned=False)
    planned = solve_targets(rev.targets, inputs, get_solver("best-fit", time_policy=options.time))
    for plan, snap, requests in planned.plans:
        assert check(plan, snap, requests, inputs.options) == []
    return reviewed, planned


def _decided(options: SolveOptions) -> RoundChange:
    return round_change(*_round(_state(), options), None)


def test_a_timed_round_commits_the_placement_and_the_reservation_together() -> None:
    decided = _decided(TIMED)
    placement, reservation = entry_key(PLACEMENT, "default/a"), entry_key(RESERVATION, "default/b")
    assert set(decided.change.put) == {placement, reservation}
    start = decided.change.put[reservation].start
    assert start is not None
    assert start > NOW_S  # b waits for the running JobSet
    assert set(decided.announce) == {reservation}
    assert set(decided.planned.placed) == {"default/a"} and not decided.refused


def test_an_untimed_round_commits_no_reservation() -> None:
    decided = _decided(UNTIMED)
    assert set(decided.change.put) == {entry_key(PLACEMENT, "default/a")}
    assert not decided.announce


def test_a_reservation_already_held_is_not_announced_again() -> None:
    reviewed, planned = _round(_state(), TIMED)
    first = round_change(reviewed, planned, None)
    key = entry_key(RESERVATION, "default/b")
    held = dataclasses.replace(reviewed, ledger=LedgerView(reserved={key: first.change.put[key]}))
    again = round_change(held, planned, None)
    assert key not in again.announce
    assert key not in again.change.put  # same domains, same start: nothing to rewrite


def test_a_placement_on_a_node_the_ledger_holds_is_refused_and_unschedulable() -> None:
    state = _state()
    reviewed, planned = _round(state, TIMED)
    block = block_of(planned.placed["default/a"], "a-w-0")
    other = LedgerEntry(owner="default/x", uid="x", record=on_blocks("default/x", {"x-w-0": block}))
    ledger = Ledger(
        namespace="placer-system",
        resource_version="7",
        entries={entry_key(PLACEMENT, "default/x"): other},
    )
    late = dataclasses.replace(
        reviewed, observed=dataclasses.replace(reviewed.observed, ledger=ledger)
    )
    decided = round_change(late, planned, None)
    assert entry_key(PLACEMENT, "default/a") not in decided.change.put
    assert "default/a" in decided.refused and "default/a" not in decided.planned.placed
    assert "default/a" in decided.planned.unschedulable
