"""The writes one cycle sends (roundwrites.round_writes), decided without a cluster: a new
eviction is seen in the very round that chose it (its victim suspended with the round's stamp,
its beneficiary's pods held while the victim's run on its block), a committed eviction keeps the
ledger's stamp, and a round without new evictions reuses the review's view of them."""

from __future__ import annotations

import dataclasses

from placer.controller.decide.observe.domains import DomainIndex
from placer.controller.decide.observe.snapshot import planning_snapshot
from placer.controller.decide.observe.survey import survey
from placer.controller.decide.observed import Announced, Reviewed
from placer.controller.decide.plan.planning import PlannedRound
from placer.controller.decide.records.ledger import LedgerEntry
from placer.controller.decide.records.writes import (
    RecordAssignment,
    SuspendJobSet,
    UngatePod,
    Write,
)
from placer.controller.decide.review.review import review
from placer.controller.decide.round.roundchange import round_change
from placer.controller.decide.round.roundwrites import round_evictions, round_writes
from placer.controller.decide.round.writeplan import WriteSettings
from placer.model.options import SolveOptions
from placer.model.preemption import PREEMPTED_AT, format_stamp
from tests.controller.builders import add_jobset, on_blocks, reviewed_of, state_of, tpu_cluster
from tests.controller.decide.test_preempting import AT, eviction, running_low

NOW_S = AT + 3600.0


def _reviewed() -> Reviewed:
    """`low` (priority 0) runs on block b0; `high` (priority 100) waits for one block."""
    cluster = tpu_cluster(blocks=2)
    running_low(cluster)
    add_jobset(cluster, "high", jobs=1, pods=2, priority=100)
    state = state_of(cluster)
    managed = survey(state, binding="gate")
    options = SolveOptions()
    rev = review(managed, DomainIndex(planning_snapshot(state, binding="gate")), options)
    return reviewed_of(state, managed, rev, options, wall_s=NOW_S)


def _evicting_for_high(reviewed: Reviewed, at: float | None) -> PlannedRound:
    """`high` placed on b0 by evicting `low` (`at`: the ledger's stamp; None before a commit)."""
    low = reviewed.observed.state.jobsets[("default", "low")]
    return PlannedRound(
        placed={"default/high": on_blocks("default/high", {"high-w-0": "b0"})},
        evictions={
            "default/low": eviction(uid=low["metadata"]["uid"]).model_copy(update={"at": at})
        },
    )


def _writes(reviewed: Reviewed, planned: PlannedRound) -> list[Write]:
    settings = WriteSettings(
        binding="gate", now="2027-01-15T08:00:00Z", instance="test", now_s=NOW_S
    )
    return round_writes(
        reviewed, planned, settings, Announced(), committed=False, kueue_warned=set()
    )


def _suspend_stamp(writes: list[Write]) -> object:
    [suspend] = [w for w in writes if isinstance(w, SuspendJobSet)]
    assert suspend.describe() == "suspend JobSet default/low (preempted)"
    return suspend.patch()["metadata"]["annotations"][PREEMPTED_AT]


def test_a_new_eviction_suspends_its_victim_at_the_rounds_time_and_holds_the_beneficiary() -> None:
    """Uncommitted (a dry run): the suspend carries the round's wall time, as the commit would
    stamp it; `high`'s record is written but its pods stay gated while `low`'s run on b0."""
    reviewed = _reviewed()
    planned = _evicting_for_high(reviewed, at=None)
    writes = _writes(reviewed, planned)
    assert _suspend_stamp(writes) == format_stamp(NOW_S)
    assert any(isinstance(w, RecordAssignment) and w.jobset == "default/high" for w in writes)
    assert not [w for w in writes if isinstance(w, UngatePod)]
    assert round_evictions(reviewed, planned).waiting == {"default/high": ("default/low",)}


def test_a_committed_eviction_keeps_the_ledgers_stamp() -> None:
    reviewed = _reviewed()
    writes = _writes(reviewed, _evicting_for_high(reviewed, at=AT))
    assert _suspend_stamp(writes) == format_stamp(AT)


def test_a_round_without_new_evictions_reuses_the_reviews_view_of_them() -> None:
    reviewed = _reviewed()
    seen = round_evictions(reviewed, _evicting_for_high(reviewed, at=AT))
    reviewed = dataclasses.replace(reviewed, evictions=seen)
    assert round_evictions(reviewed, PlannedRound()) is seen
    writes = _writes(reviewed, PlannedRound())
    assert _suspend_stamp(writes) == format_stamp(AT)


def test_an_eviction_in_the_last_half_millisecond_of_a_second_keeps_one_stamp() -> None:
    """The round stamps the victim with the whole second of its wall time and commits the
    eviction's time to the ledger; the next round recognizes the suspend by the ledger's copy.
    At x.9996 s a ledger rounding to the nearest millisecond held x+1.000, so the next round
    found no stamp of its own and suspended the victim again under a second one (CI caught it:
    two stamps a second apart on the victim)."""
    reviewed = dataclasses.replace(_reviewed(), wall_s=NOW_S + 0.9996)
    planned = _evicting_for_high(reviewed, at=None)
    suspended = _suspend_stamp(_writes(reviewed, planned))
    committed = round_change(reviewed, planned, None).planned.evictions["default/low"]
    kept = LedgerEntry.from_text(committed.to_text())
    assert kept.at is not None and format_stamp(kept.at) == suspended == format_stamp(NOW_S)
    # the next round, reading the ledger's copy, writes the same stamp (no second one)
    assert _suspend_stamp(_writes(reviewed, _evicting_for_high(reviewed, at=kept.at))) == suspended
