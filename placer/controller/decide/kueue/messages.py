"""What placer's check on a Kueue Workload says: domains listed, start times, quota waits.

Why apart from the check's decisions (`check.py`): these are the message texts, the part a user
reads in `kubectl describe workload`; they are kept short (a few names, then "and N more") and
stable (an absolute start time, so a message is not rewritten every cycle). Hold tokens are named
by their JobSets in `holder_names`, shared with the JobSet Events.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from placer.controller.decide.kueue.eta import QUOTA_WAIT
from placer.controller.decide.observe.kueue import KUEUE_SPELLING
from placer.model.cluster import NODE_RESERVATION_KEY
from placer.model.durations import format_rfc3339
from placer.model.plan import DomainRef, JobSetOutcome

__all__ = ["SHOWN", "domains_text", "eta_text", "listed", "quota_wait_message"]

SHOWN = 6
"""Domains or JobSets named in a message before "and N more"."""


def listed(values: Sequence[str]) -> str:
    """The first `SHOWN` values, then "and N more": a message stays readable at any scale."""
    shown = ", ".join(values[:SHOWN])
    return shown + (f" and {len(values) - SHOWN} more" if len(values) > SHOWN else "")


def domains_text(refs: Sequence[DomainRef]) -> str:
    """Domains grouped by label key, each value once: "key=a, b; other=c"."""
    by_key: dict[str, list[str]] = {}
    for d in refs:
        values = by_key.setdefault(d.key, [])
        if d.value not in values:
            values.append(d.value)
    return "; ".join(f"{k}={listed(v)}" for k, v in sorted(by_key.items()))


def eta_text(outcome: JobSetOutcome, now_s: float, holders: Mapping[str, str]) -> str:
    """ "expected start <time> on <domains and reserved nodes>; waits for running <JobSets>", or
    "" without one.
    The time is absolute (rounded up to the minute), so the message, and the Workload, are not
    rewritten every cycle as the wait shortens."""
    start = outcome.expected_start_seconds
    if start is None or start <= 0:
        return ""
    text = f"expected start {format_rfc3339(math.ceil((now_s + start) / 60) * 60)}"
    if outcome.reserved_domains:
        # the nodes held for its pods without an exclusive key, as the ledger records them
        nodes = [DomainRef(key=NODE_RESERVATION_KEY, value=n) for n in outcome.reserved_nodes]
        text += f" on {domains_text([*outcome.reserved_domains, *nodes])}"
    waits = list(dict.fromkeys(holders.get(w, w) for w in outcome.waits_for))
    if waits:
        text += f"; waits for running {listed(waits)}"
    return text


def quota_wait_message(
    outcome: JobSetOutcome, now_s: float, holders: Mapping[str, str], *, spelled: bool
) -> str:
    """The message of a Workload waiting for Kueue's quota (kueue/eta.py): what it waits for,
    and when it would start were its quota reserved now (never: and why, counted on the cluster
    once every running JobSet ends); `spelled`: its topology is in Kueue's spelling, so on
    placer's flavors that quota never comes, and the message says why first."""
    if outcome.expected_start_seconds is None:
        then = "it can never be placed, not even on an empty cluster"
        then += f": {outcome.reason}" if outcome.reason else ""
    else:
        then = eta_text(outcome, now_s, holders) or "room for it now"
    why = f"; {KUEUE_SPELLING}" if spelled else ""
    return f"{QUOTA_WAIT}{why}; placer places it once Kueue does; were quota reserved now: {then}"
