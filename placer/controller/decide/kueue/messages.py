"""What placer's check on a Kueue Workload says: domains listed, hold tokens named by JobSet.

Why apart from the check's decisions (`check.py`): these are the message texts, the part a user
reads in `kubectl describe workload`; they are kept short (a few names, then "and N more") and
stable (an absolute start time, so a message is not rewritten every cycle), and naming thousands
of hold tokens per cycle had to be made fast (one pass, a cache per cycle).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

from placer.controller.decide.domains import HOLD_PREFIX
from placer.controller.decide.kueue.eta import QUOTA_WAIT
from placer.controller.decide.kueue.workloads import KUEUE_SPELLING, rfc3339
from placer.model.plan import DomainRef, JobSetOutcome

__all__ = ["SHOWN", "domains_text", "eta_text", "listed", "named", "quota_wait_message"]

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


_TOKEN = re.compile(re.escape(HOLD_PREFIX) + r"[\w.-]+[/:][\w.:/-]+")
"""What a hold token (`domains.holds`) looks like in a reason: found in one pass, then looked up,
rather than every token searched for in turn (at 10,000 nodes a cycle holds thousands of tokens,
and replacing each in every message took seconds)."""


def _owners_in(run: str, holders: Mapping[str, str]) -> str:
    """`run` (text the token pattern matched) with every hold token in it named by its JobSet:
    the longest token it starts with, then the rest the same way."""
    for end in range(len(run), len(HOLD_PREFIX), -1):
        if run[:end] in holders:
            rest = run[end:]
            return holders[run[:end]] + _TOKEN.sub(lambda m: _owners_in(m.group(0), holders), rest)
    inner = run.find(HOLD_PREFIX, 1)
    return run if inner < 0 else run[:inner] + _owners_in(run[inner:], holders)


_HELD_RUN = re.compile(
    r"(\d+) held by running ([\w.-]+/[\w.-]+)((?:, \d+ held by running \2(?![\w./-]))+)"
)
"""Counts of one JobSet's holds side by side (one per child Job once tokens are named)."""


def _summed(match: re.Match[str]) -> str:
    total = int(match.group(1)) + sum(
        int(n) for n in re.findall(r"(\d+) held by running", match.group(3))
    )
    return f"{total} held by running {match.group(2)}"


def named(text: str, holders: Mapping[str, str], cache: dict[str, str] | None = None) -> str:
    """`text` with hold tokens replaced by their JobSets: a JobSet named twice in a row once,
    and the domains one JobSet holds counted once ("3 held by running a", not three lines).

    No pattern spans "; ", so each part between them is named alone, and with a `cache` once per
    cycle: the reasons of one cycle share their long parts (who holds each of thousands of
    domains), and naming those in every message took over a second at 10,000 nodes."""
    if cache is None:
        return _named_part(text, holders)
    parts = text.split("; ")
    for part in parts:
        if part not in cache:
            cache[part] = _named_part(part, holders)
    return "; ".join(cache[part] for part in parts)


def _named_part(text: str, holders: Mapping[str, str]) -> str:
    if holders:
        text = _TOKEN.sub(lambda m: _owners_in(m.group(0), holders), text)
    text = re.sub(r"(?<![\w./-])([\w.-]+/[\w.-]+)(?:, \1(?![\w./-]))+", r"\1", text)
    return _HELD_RUN.sub(_summed, text)


def eta_text(outcome: JobSetOutcome, now_s: float, holders: Mapping[str, str]) -> str:
    """ "expected start <time> on <domains>; waits for running <JobSets>", or "" without one.
    The time is absolute (rounded up to the minute), so the message, and the Workload, are not
    rewritten every cycle as the wait shortens."""
    start = outcome.expected_start_seconds
    if start is None or start <= 0:
        return ""
    text = f"expected start {rfc3339(math.ceil((now_s + start) / 60) * 60)}"
    if outcome.reserved_domains:
        text += f" on {domains_text(outcome.reserved_domains)}"
    waits = list(dict.fromkeys(holders.get(w, w) for w in outcome.waits_for))
    if waits:
        text += f"; waits for running {listed(waits)}"
    return text


def quota_wait_message(
    outcome: JobSetOutcome, now_s: float, holders: Mapping[str, str], *, spelled: bool
) -> str:
    """The message of a Workload waiting for Kueue's quota (kueue/eta.py): what it waits for,
    and when it would start were its quota reserved now; `spelled`: its topology is in Kueue's
    spelling, so on placer's flavors that quota never comes, and the message says why first."""
    if outcome.expected_start_seconds is None:
        then = "it can never be placed, not even on an empty cluster"
    else:
        then = eta_text(outcome, now_s, holders) or "room for it now"
    why = f"; {KUEUE_SPELLING}" if spelled else ""
    return f"{QUOTA_WAIT}{why}; placer places it once Kueue does; were quota reserved now: {then}"
