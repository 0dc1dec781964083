"""What a cycle holds from the ledger and what it commits into it: pure functions.

- `view_ledger`: sorts the ledger's entries against the observed JobSets (every namespace): an
  entry of a managed, unfinished JobSet is that JobSet's record (survey.py reads it, review.py
  judges it); every other live entry is held as it is (`foreign`), as is the placement record of an
  unmanaged JobSet that the ledger does not know (written before the ledger existed); an entry
  whose JobSet finished is released; an entry whose JobSet the cache does not show (or shows with
  another uid) is held until a read confirms it is gone (`suspects`, see commit.confirm_gone).
- `ledger_change`: the cycle's commit: its new placements, the records it adopts (a managed
  JobSet's record that the ledger lacks), and the releases. (A new placement whose record its
  JobSet could not carry never reaches it: planning refuses it, recordsize.py.) Before anything
  is sent, the ledger it would produce is checked node by node (`exclusive_clashes`): a new
  placement that would share a node with another entry is dropped, whatever the planner said,
  and so is one that would grow the ledger past what the API server stores (ledgersize.py).
  With preemption, the same commit releases each victim's placement and records its eviction
  (preempting.py).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass, field, replace

from placer.controller.adapter import Obj
from placer.controller.decide.observe.domains import DomainIndex
from placer.controller.decide.observe.state import ClusterState
from placer.controller.decide.observe.survey import ManagedJobSet, is_finished, read_record
from placer.controller.decide.records.ledger import (
    EVICTION,
    PLACEMENT,
    Fence,
    Ledger,
    LedgerChange,
    LedgerEntry,
    entry_key,
)
from placer.controller.decide.records.ledgersize import FULL, MAX_LEDGER_BYTES, LedgerBytes
from placer.model.assignment import Assignment, JobAssignment

__all__ = ["LedgerView", "exclusive_clashes", "ledger_change", "view_ledger"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LedgerView:
    foreign: Mapping[str, Mapping[str, JobAssignment]] = field(default_factory=dict)
    """Holder label (an entry key, or `record.<namespace>.<name>`) -> the child Jobs it holds."""
    release: frozenset[str] = frozenset()
    """Entry keys whose JobSet finished: their domains go back to the pool."""
    suspects: Mapping[str, LedgerEntry] = field(default_factory=dict)
    """Entry keys whose JobSet the cache does not show as it was placed: held until confirmed."""
    reserved: Mapping[str, LedgerEntry] = field(default_factory=dict)
    """Reservations in force (`LedgerEntry.soft`): entry key -> entry, of JobSets still waiting.
    A reservation whose JobSet finished or got a placement is released; one whose JobSet the
    cache does not show is a suspect, kept until confirmed gone."""
    evictions: Mapping[str, LedgerEntry] = field(default_factory=dict)
    """Evictions in progress (entry key -> entry, see preempting.py): no holds; released once
    done (`releasing`)."""

    def without(self, gone: Set[str]) -> LedgerView:
        """The view once the suspects in `gone` are confirmed gone: released, no longer held."""
        gone = gone & self.suspects.keys()
        if not gone:
            return self
        return LedgerView(
            foreign={k: v for k, v in self.foreign.items() if k not in gone},
            release=self.release | gone,
            suspects={k: v for k, v in self.suspects.items() if k not in gone},
            reserved={k: v for k, v in self.reserved.items() if k not in gone},
            evictions=self.evictions,
        )

    def releasing(self, keys: Set[str]) -> LedgerView:
        """The view with these entries (evictions done, suspended JobSets) released by this
        round's commit."""
        if not keys:
            return self
        return replace(self, release=self.release | keys)


def _uid(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("uid") or "")


def view_ledger(
    ledger: Ledger, state: ClusterState, managed: Sequence[ManagedJobSet]
) -> LedgerView:
    mine = {ms.key for ms in managed if ms.committed and not ms.finished}
    foreign: dict[str, Mapping[str, JobAssignment]] = {}
    release: set[str] = set()
    suspects: dict[str, LedgerEntry] = {}
    owners: set[str] = set()
    reserved: dict[str, LedgerEntry] = {}
    placed = {e.owner for e in ledger.entries.values() if e.kind == PLACEMENT}
    evictions: dict[str, LedgerEntry] = {}
    for key, entry in sorted(ledger.entries.items()):
        namespace, _, name = entry.owner.partition("/")
        obj = state.jobsets.get((namespace, name))
        if entry.kind == EVICTION:
            evictions[key] = entry  # holds nothing; its (old) record annotation neither
            owners.add(entry.owner)
            continue
        if entry.soft:
            if obj is None or (entry.uid and _uid(obj) != entry.uid):
                suspects[key] = entry
                reserved[key] = entry
            elif is_finished(obj) or entry.owner in placed:
                release.add(key)
            else:
                reserved[key] = entry
            continue
        owners.add(entry.owner)
        if entry.kind != PLACEMENT:
            foreign[key] = entry.record.jobs  # another kind (reservations): released by its own
        elif obj is None or (entry.uid and _uid(obj) != entry.uid):
            suspects[key] = entry
            foreign[key] = entry.record.jobs
        elif is_finished(obj):
            release.add(key)
        elif entry.owner not in mine:
            foreign[key] = entry.record.jobs
    managed_keys = {ms.key for ms in managed}
    for (namespace, name), obj in sorted(state.jobsets.items()):
        owner = f"{namespace}/{name}"
        if owner in owners or owner in managed_keys or is_finished(obj):
            continue
        record, _ = read_record(obj, owner)
        if record is not None:
            foreign[f"record.{namespace}.{name}"] = record.jobs
    return LedgerView(
        foreign=foreign,
        release=frozenset(release),
        suspects=suspects,
        reserved=reserved,
        evictions=evictions,
    )


def ledger_change(
    ledger: Ledger,
    view: LedgerView,
    managed: Sequence[ManagedJobSet],
    placed: Mapping[str, Assignment],
    index: DomainIndex,
    *,
    fence: Fence | None = None,
    evictions: Mapping[str, LedgerEntry] | None = None,
) -> tuple[LedgerChange, dict[str, str]]:
    """The commit for this cycle, and the new placements refused by the final node check
    (JobSet key -> why). `evictions` (victim key -> its eviction entry, preempting.py): each
    victim's placement is released and its eviction recorded in the same commit that places its
    beneficiaries; an eviction none of whose beneficiaries the check lets through is not made."""
    by_key = {ms.key: ms for ms in managed}
    put: dict[str, LedgerEntry] = {}
    refused: dict[str, str] = {}
    for key, record in sorted(placed.items()):
        ms = by_key[key]
        put[entry_key(PLACEMENT, key)] = LedgerEntry(owner=key, uid=ms.uid, record=record)
    for ms in managed:
        k = entry_key(PLACEMENT, ms.key)
        if ms.finished or ms.assignment is None or ms.committed or k in put:
            continue
        if k not in ledger.entries and k not in ledger.unreadable:
            put[k] = LedgerEntry(owner=ms.key, uid=ms.uid, record=ms.assignment)  # adopted
    evicting = dict(evictions or {})
    while True:
        for victim, entry in sorted(evicting.items()):
            put[entry_key(EVICTION, victim)] = entry
        remove = (view.release | {entry_key(PLACEMENT, v) for v in evicting}) - put.keys()
        _drop_clashes(ledger, put, remove, index, placed, refused)
        _drop_past_the_limit(ledger, put, remove, by_key, placed, refused)
        undone = {
            v
            for v, e in evicting.items()
            if not any(entry_key(PLACEMENT, b) in put for b in e.beneficiaries)
        }
        if not undone:
            break
        for victim in undone:
            log.info("%s: not evicted: no JobSet it made room for was committed", victim)
            put.pop(entry_key(EVICTION, victim), None)
            del evicting[victim]
    for a, b, node in exclusive_clashes(
        {k: e for k, e in ledger.entries.items() if k not in remove}, index
    )[:1]:
        log.error("the ledger already holds node %s for both %s and %s", node, a, b)
    return LedgerChange(put=put, remove=frozenset(remove), fence=fence), refused


def _drop_clashes(
    ledger: Ledger,
    put: dict[str, LedgerEntry],
    remove: Set[str],
    index: DomainIndex,
    placed: Mapping[str, Assignment],
    refused: dict[str, str],
) -> None:
    """Drop from `put` every new entry that would share a node with another (in place)."""
    while True:
        after = {k: e for k, e in ledger.entries.items() if k not in remove}
        after.update(put)
        clashes = [c for c in exclusive_clashes(after, index) if c[0] in put or c[1] in put]
        if not clashes:
            return
        a, b, node = clashes[0]
        drop = b if b in put else a
        other = a if drop == b else b
        owner = put.pop(drop).owner
        why = f"would share node {node} with the ledger's {other}"
        log.error("%s: not committed: %s", owner, why)
        if owner in placed:
            refused[owner] = why


def _drop_past_the_limit(
    ledger: Ledger,
    put: dict[str, LedgerEntry],
    remove: Set[str],
    by_key: Mapping[str, ManagedJobSet],
    placed: Mapping[str, Assignment],
    refused: dict[str, str],
) -> None:
    """Drop from `put` the new placements that would grow the ledger past the API server's
    limit (in place; ledgersize.py): the lowest priority first, then the last in the queue."""
    size = LedgerBytes(ledger, put, remove)
    if not size.over:
        return

    def rank(key: str) -> tuple[int, int]:
        request = by_key[put[key].owner].request
        return (0, 0) if request is None else (request.priority, -request.order)

    new = sorted((k for k, e in put.items() if e.kind == PLACEMENT and e.owner in placed), key=rank)
    for key in new:
        if not size.over:
            return
        owner = put.pop(key).owner
        size.drop(key)
        refused[owner] = FULL
        log.error("%s: not committed: %s", owner, FULL)
    if size.over:
        log.error(
            "the placement ledger would hold %d bytes without any new placement, over the API "
            "server's %d: its commit will be refused",
            size.total,
            MAX_LEDGER_BYTES,
        )


def exclusive_clashes(
    entries: Mapping[str, LedgerEntry], index: DomainIndex
) -> list[tuple[str, str, str]]:
    """(entry key, entry key, node) for every node an exclusive child Job shares with any other
    child Job in `entries`: what a ledger may never hold. Sorted, so the first is stable.
    Reservations (`LedgerEntry.soft`) are no holds: backfill may run on their nodes."""
    owner_of: dict[str, list[tuple[str, str, bool]]] = {}
    for key, entry in sorted(entries.items()):
        if entry.soft or entry.kind == EVICTION:
            continue
        for name, job in sorted(entry.record.jobs.items()):
            for node in index.job_nodes(job):
                owner_of.setdefault(node, []).append((key, name, job.domain is not None))
    clashes: list[tuple[str, str, str]] = []
    for node, holders in sorted(owner_of.items()):
        if len(holders) > 1 and any(exclusive for _, _, exclusive in holders):
            first = holders[0]
            for other in holders[1:]:
                clashes.append((first[0], other[0], node))
    return clashes
