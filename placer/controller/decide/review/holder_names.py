"""Hold tokens named by their JobSets in what a user reads: Events, Kueue check messages.

The planner sees a domain as taken through a hold token per recorded child Job
(`domains.holds`: `placer:<namespace>/<job>`), next to the JobSet keys of the pods bound there.
An unschedulable reason then reads "1 held by running placer:team/train-workers-0, team/train"
for each of a JobSet's domains: placer's bookkeeping in a user's `kubectl describe`. Named, it
reads "5 held by running team/train". Why one pass with a regex and a cache per cycle: at 10,000
nodes a cycle holds thousands of tokens, and replacing each in every message took seconds.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from placer.controller.decide.observe.domains import HOLD_PREFIX, holds
from placer.controller.decide.review.review import Review, held_records

__all__ = ["named", "token_owners"]


def token_owners(rev: Review) -> dict[str, str]:
    """The planner's hold token of each recorded child Job (`domains.holds`) -> its JobSet."""
    return {h.token: h.owner for h in holds(held_records(rev), {})}


_TOKEN = re.compile(re.escape(HOLD_PREFIX) + r"[\w.-]+[/:][\w.:/-]+")
"""What a hold token looks like in a reason: found in one pass, then looked up, rather than
every token searched for in turn."""


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
