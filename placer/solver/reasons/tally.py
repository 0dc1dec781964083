"""What the classifier counts: one verdict per domain (node), tallied by reason.

Why apart from the classifier: these are the values it keeps per pod shape and recounts per
JobSet (`View`: an outsider's verdicts, tallies and room; `Tallies`: reasons with the JobSets each
names, adjusted by +1/-1 as a JobSet's own domains are recounted), while `classify.py` holds the
rules that produce them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass, field

from placer.model.topology import DomainPath
from placer.solver.reasons.data import RANK, Locality, Reason, ReasonTally

__all__ = ["Tallies", "Verdict", "View", "short_inside_one"]

Verdict = tuple[Reason, Collection[str]] | None
"""Why one domain (node) is ruled out and the JobSets the reason names; None: available."""


@dataclass
class Tallies:
    """Reasons counted so far; per reason, how many domains (nodes) name each JobSet."""

    counts: Counter[Reason] = field(default_factory=Counter)
    named: dict[Reason, Counter[str]] = field(default_factory=dict)

    def add(self, verdict: Verdict, sign: int = 1) -> None:
        if verdict is None:
            return
        reason, names = verdict
        self.counts[reason] += sign
        if names:
            per = self.named.setdefault(reason, Counter())
            for n in names:
                per[n] += sign

    def sorted(self) -> tuple[ReasonTally, ...]:
        """By rule order, then the most common, then the reason itself (stable text)."""
        present = [r for r, n in self.counts.items() if n > 0]
        present.sort(key=lambda r: (RANK[r.kind], -self.counts[r], r))
        return tuple(
            ReasonTally(r, self.counts[r], tuple(sorted(_present(self.named.get(r)))))
            for r in present
        )

    def sorted_with(
        self, listed: tuple[ReasonTally, ...], delta: Tallies
    ) -> tuple[ReasonTally, ...]:
        """What `sorted` gives for these tallies with `delta` added, from `listed` (this
        `sorted`): only the reasons `delta` touches are counted again.

        Why: a JobSet seeing a few domains otherwise than the outsider changes a few reasons,
        and a fleet's tallies hold hundreds (a "held" reason per set of holders); copying and
        listing them all for each such JobSet cost 3-12% of the classifier's time at 10,000
        nodes (benchmarks/RESULTS-controller.md, round 50)."""
        touched = set(delta.counts) | set(delta.named)
        rows = [t for t in listed if t.reason not in touched]
        for r in touched:
            count = self.counts.get(r, 0) + delta.counts.get(r, 0)
            if count <= 0:
                continue
            names = Counter(self.named.get(r) or {})
            names.update(delta.named.get(r) or {})
            rows.append(ReasonTally(r, count, tuple(sorted(_present(names)))))
        rows.sort(key=lambda t: (RANK[t.reason.kind], -t.count, t.reason))
        return tuple(rows)


def short_inside_one(
    level: str | None, per_level: Counter[DomainPath] | None, need: int, available: int
) -> Locality | None:
    """With a required topology, when enough is available in all but not inside any one domain
    of `level`: the most one of them holds. None when it fits or is short overall (that reason
    comes first)."""
    if available < need or not level or per_level is None:
        return None
    most = max(per_level.values(), default=0)
    return Locality(level, most) if most < need else None


def _present(names: Counter[str] | None) -> list[str]:
    return [n for n, k in names.items() if k > 0] if names else []


@dataclass
class View:
    """A shape's verdict on every domain of its key (or every node), as an outsider sees it."""

    verdicts: list[Verdict]
    tallies: Tallies
    room: list[int]
    """Per domain (node): 1 (pods that fit, for nodes) when available to the outsider, else 0."""
    by_level: dict[str, Counter[DomainPath]] = field(default_factory=dict)
    """level -> room inside each domain of the level (levels asked about so far)."""
    listed: tuple[ReasonTally, ...] | None = None
    adjusted: dict[
        tuple[str | None, tuple[tuple[int, Verdict], ...]],
        tuple[tuple[ReasonTally, ...], int, Counter[DomainPath] | None],
    ] = field(default_factory=dict)
    """(required level, the domains a JobSet sees otherwise with its verdicts) -> its reasons
    listed, domains available, room per domain of the level (`Classifier._adjusted`)."""
