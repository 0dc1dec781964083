"""The ledger change one plan-and-commit round sends, decided without touching the cluster.

The commit phase (`reconcile.Controller._commit`) used to assemble this change inline, between its
timer and the compare-and-swap; it is a pure decision, so it lives here beside the other deciders
and `act/commit.commit` only sends it. One change carries, in one write: the round's placements,
the records it adopts and the releases (`ledgerplan.ledger_change`, which drops a placement that
would share a node with another entry), each new eviction stamped with the round's wall time,
and, when time-aware planning is on, the reservations of the JobSets the round planned
(`reserving.reservation_changes`), the farthest left out while the ledger would outgrow what the
API server stores (ledgersize.py).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from placer.controller.decide.observed import Reviewed
from placer.controller.decide.plan.planning import PlannedRound
from placer.controller.decide.plan.reserving import reservation_changes
from placer.controller.decide.records.ledger import (
    EVICTION,
    Fence,
    LedgerChange,
    LedgerEntry,
    entry_key,
    eviction_time,
)
from placer.controller.decide.records.ledgersize import FULL, LedgerBytes
from placer.controller.decide.review.ledgerplan import ledger_change

__all__ = ["RoundChange", "round_change"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RoundChange:
    """What the round commits, and the round's plans as they stand if the commit is taken."""

    change: LedgerChange
    """Everything the round writes into the ledger (empty: nothing to commit)."""
    planned: PlannedRound
    """The round's plans with the refused placements made unschedulable, and `evictions` keyed
    by victim as the ledger will hold them (stamped, and only those the change puts)."""
    refused: Mapping[str, str] = field(default_factory=dict)
    """Placements the node-by-node ledger check refused (JobSet key -> why)."""
    announce: Mapping[str, LedgerEntry] = field(default_factory=dict)
    """Reservations new or on other domains: announced (one `Reserved` event each) only once the
    commit is taken."""


def round_change(reviewed: Reviewed, planned: PlannedRound, fence: Fence | None) -> RoundChange:
    """The ledger change for this round's placements, adoptions, releases, evictions and
    reservations, under the leader's `fence` (None: no leader election)."""
    observed, view = reviewed.observed, reviewed.ledger
    intents = {
        victim: e.model_copy(update={"at": eviction_time(reviewed.wall_s)})
        for victim, e in planned.evictions.items()
    }
    change, refused = ledger_change(
        observed.ledger,
        view,
        observed.managed,
        planned.placed,
        observed.index,
        fence=fence,
        evictions=intents,
    )
    planned = replace(
        planned,
        evictions={
            v: change.put[k] for v in intents if (k := entry_key(EVICTION, v)) in change.put
        },
    )
    planned = planned.refusing(refused)
    policy = reviewed.options.time
    if not policy.active:
        return RoundChange(change, planned, refused)
    kept = reservation_changes(
        [p for p, _, _ in planned.plans],
        observed.managed,
        view.reserved,
        reviewed.wall_s,
        policy,
    )
    put = {**change.put, **kept.put}
    remove = (change.remove | kept.remove) - kept.put.keys()
    announce = dict(kept.announce)
    size = LedgerBytes(observed.ledger, put, remove)
    for key in sorted(kept.put, key=lambda k: -(kept.put[k].start or 0.0)):
        if not size.over:
            break
        log.warning("%s: reservation not written: %s", kept.put[key].owner, FULL)
        del put[key]
        size.drop(key)
        announce.pop(key, None)
    change = LedgerChange(put=put, remove=frozenset(remove), fence=change.fence)
    return RoundChange(change, planned, refused, announce)
