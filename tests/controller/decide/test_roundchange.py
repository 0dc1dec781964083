"""The ledger change a round commits (roundchange.round_change), decided without a cluster:
placements and reservations in one change, reservations only with time-aware planning and
announced only as new, a placement the ledger's node check refuses made unschedulable, and the
change fitted to what the API server stores in the ledger's ConfigMap."""

from __future__ import annotations

import dataclasses

from placer.controller.decide.observe.domains import DomainIndex
from placer.controller.decide.observe.snapshot import planning_snapshot
from placer.controller.decide.observe.state import ClusterState
from placer.controller.decide.observe.survey import survey
from placer.controller.decide.observed import Reviewed
from placer.controller.decide.plan.planning import PlannedRound, planning_inputs, solve_targets
from placer.controller.decide.records.ledger import (
    PLACEMENT,
    RESERVATION,
    Ledger,
    LedgerEntry,
    entry_key,
)
from placer.controller.decide.records.ledgersize import FULL, MAX_LEDGER_BYTES
from placer.controller.decide.review.ledgerplan import LedgerView
from placer.controller.decide.review.review import review
from placer.controller.decide.round.roundchange import RoundChange, round_change
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


def _filled(leave: int, *, stale: int = 0) -> Ledger:
    """A ledger `leave` bytes short of the API server's limit: one unreadable value (what the
    entries of other controllers may be) holding the space, and `stale` bytes in a placement of a
    JobSet the round releases."""
    held = MAX_LEDGER_BYTES - leave - stale
    sizes = {"placement.other.filler": held}
    if stale:
        sizes[entry_key(PLACEMENT, "default/gone")] = stale
    return Ledger(
        namespace="placer-system",
        resource_version="7",
        unreadable=frozenset({"placement.other.filler"}),
        sizes=sizes,
    )


def _entry_bytes(decided: RoundChange, key: str) -> int:
    return len(decided.change.put[key].to_text().encode())


def test_a_round_is_fitted_to_the_ledgers_size_limit() -> None:
    """The API server refuses a ConfigMap of more than 1 MiB as a whole: the placement that
    would not fit is refused (unschedulable, saying why), the reservation is left out, and with
    room for exactly both, both go in."""
    state = _state()
    reviewed, planned = _round(state, TIMED)
    placement, reservation = entry_key(PLACEMENT, "default/a"), entry_key(RESERVATION, "default/b")
    room = round_change(reviewed, planned, None)
    both = _entry_bytes(room, placement) + _entry_bytes(room, reservation)

    def decided(ledger: Ledger) -> RoundChange:
        on = dataclasses.replace(reviewed.observed, ledger=ledger)
        return round_change(dataclasses.replace(reviewed, observed=on), planned, None)

    exact = decided(_filled(both))
    assert set(exact.change.put) == {placement, reservation} and not exact.refused
    short = decided(_filled(both - 1))
    assert set(short.change.put) == {placement} and not short.refused
    assert reservation not in short.announce
    full = decided(_filled(_entry_bytes(room, placement) - 1))
    assert not full.change.put
    assert full.refused == {"default/a": FULL}
    assert "default/a" in full.planned.unschedulable


def test_releases_make_room_in_the_same_round() -> None:
    """A release shrinks the ledger in the commit that places: a round whose placement fits
    only once the finished JobSet's entry is gone still places it."""
    state = _state()
    reviewed, planned = _round(state, UNTIMED)
    placement = entry_key(PLACEMENT, "default/a")
    size = _entry_bytes(round_change(reviewed, planned, None), placement)
    gone = entry_key(PLACEMENT, "default/gone")
    on = dataclasses.replace(reviewed.observed, ledger=_filled(0, stale=size))
    view = dataclasses.replace(reviewed.ledger, release=frozenset({gone}))
    decided = round_change(dataclasses.replace(reviewed, observed=on, ledger=view), planned, None)
    assert set(decided.change.put) == {placement} and gone in decided.change.remove
    assert not decided.refused
