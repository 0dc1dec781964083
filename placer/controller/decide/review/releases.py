"""Placements the review releases before anything is planned, because their JobSet cannot use them.

`release_suspended`: a suspended JobSet holds nothing once its pods are gone.

Suspending a JobSet (`spec.suspend: true`) is how a platform engineer frees what it runs on:
JobSet suspends its child Jobs and the Job controller deletes their pods. Kueue evicts the same
way. A placement kept for a suspended JobSet would hold its slices for as long as it stays
suspended, days perhaps, while nothing runs there. So once none of its pods is left (a pod
still terminating occupies its node), its ledger entry is released and its record annotation
cleared; resumed, it is planned again like any new JobSet.

Left as they are: JobSets placer itself is evicting (preempting.py, which suspends and later
resumes them) and, with --kueue-admission-check, JobSets whose Kueue Workload decides
(kueue/check.py keeps an evicted one's record to give its domains back on re-admission).
The rule reads only what is observed, so it is crash-safe in any order: a controller stopped
between the ledger release and the annotation clear finds the record without its entry and
clears it next round.

`release_unwritable`: a committed placement whose record was never written and no longer fits
its JobSet's annotations (they grew between the commit and the write; recordsize.py) is
released, so it is planned again and refused with the reason instead of its record write being
refused every cycle while the ledger held its domains.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence, Set

from placer.controller.decide.observe.survey import ManagedJobSet
from placer.controller.decide.records.ledger import PLACEMENT, entry_key
from placer.controller.decide.records.recordsize import record_too_large
from placer.controller.decide.review.ledgerplan import LedgerView

__all__ = ["RELEASED_MESSAGE", "release_suspended", "release_unwritable"]

log = logging.getLogger(__name__)

RELEASED_MESSAGE = (
    "suspended and its pods gone: its domains are released and its placement record cleared; "
    "it is planned again once resumed"
)


def _releases(ms: ManagedJobSet, keep: Set[str]) -> bool:
    return (
        ms.suspended
        and not ms.finished
        and not ms.evicting
        and ms.key not in keep
        and (ms.assignment is not None or ms.annotation is not None)
        and all(p.terminal for p in ms.pods)
    )


def release_suspended(
    managed: Sequence[ManagedJobSet], view: LedgerView, *, keep: Set[str] = frozenset()
) -> tuple[tuple[ManagedJobSet, ...], LedgerView]:
    """The survey with every suspended JobSet whose pods are gone holding nothing (`released`),
    and the ledger view releasing their entries. `keep`: JobSets someone else decides for
    (Kueue's, under --kueue-admission-check)."""
    result: list[ManagedJobSet] = []
    release: set[str] = set()
    for ms in managed:
        if not _releases(ms, keep):
            result.append(ms)
            continue
        if ms.committed:
            release.add(entry_key(PLACEMENT, ms.key))
        result.append(dataclasses.replace(ms, assignment=None, committed=False, released=True))
    return tuple(result), view.releasing(release)


def release_unwritable(
    managed: Sequence[ManagedJobSet], view: LedgerView
) -> tuple[tuple[ManagedJobSet, ...], LedgerView]:
    """The survey and ledger view with every committed placement whose record was never
    written and no longer fits its JobSet released. Never one whose record is on the JobSet:
    its pods may already run in those domains."""
    result: list[ManagedJobSet] = []
    release: set[str] = set()
    for ms in managed:
        record = ms.assignment
        why = ""
        if ms.committed and ms.annotation is None and record is not None:
            why = record_too_large(ms.obj, record)
        if not why:
            result.append(ms)
            continue
        log.warning("%s: releasing its placement: %s", ms.key, why)
        release.add(entry_key(PLACEMENT, ms.key))
        result.append(dataclasses.replace(ms, assignment=None, committed=False))
    return tuple(result), view.releasing(release)
