"""What the classifier counts: one verdict per domain (node), tallied by reason.

Why apart from the classifier: these are the values it keeps per pod shape and recounts per
JobSet (`View`: an outsider's verdicts, tallies and room; `Tallies`: reasons with the JobSets each
names, adjusted by +1/-1 as a JobSet's own domains are recounted), while `classify.py` holds the
rules that produce them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field

from placer.model.topology import DomainPath
from placer.solver.reasons.data import RANK, Locality, Reason, ReasonTally

__all__ = ["Listed", "Tallies", "Verdict", "View", "short_inside_one"]

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

    def extended(self, verdicts: Iterable[Verdict]) -> Tallies:
        """A copy with `verdicts` added. The copy shares this one's per-reason name counts, so
        no verdict may count a reason this one counts (it would change both): ValueError."""
        out = Tallies(Counter(self.counts), dict(self.named))
        for v in verdicts:
            if v is not None and v[0] in self.counts:
                raise ValueError(f"reason {v[0].kind} is counted already: it would be shared")
            out.add(v)
        return out

    def sorted(self, first: Listed | None = None) -> tuple[ReasonTally, ...]:
        """By rule order, then the most common, then the reason itself (stable text).

        `first`: the listing of a tally this one `extended` with reasons of later kinds only
        (`KeyIndex.held_listed`: every domain a running JobSet holds is "held", the first kind,
        to every view of a key), kept as it is and not sorted again: at 10,000 nodes a view
        lists about 960 held reasons and six others, and sorting them for each of 24 views was
        a third of the classifier's time (benchmarks/RESULTS-reasons.md, round 51). ValueError
        when a reason left to sort ranks with them."""
        skip = first.reasons if first is not None else frozenset()
        present = [r for r, n in self.counts.items() if n > 0 and r not in skip]
        if first is not None and present and min(RANK[r.kind] for r in present) <= first.last:
            raise ValueError("a reason ranks with those listed first: they would be out of order")
        present.sort(key=lambda r: (RANK[r.kind], -self.counts[r], r))
        rows = tuple(
            ReasonTally(r, self.counts[r], tuple(sorted(_present(self.named.get(r)))))
            for r in present
        )
        return first.rows + rows if first is not None else rows

    def listed(self) -> Listed:
        """`sorted`, kept with the reasons it lists, for tallies that extend this one."""
        rows = self.sorted()
        last = max((RANK[t.reason.kind] for t in rows), default=-1)
        return Listed(rows, frozenset(t.reason for t in rows), last)

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


@dataclass(frozen=True)
class Listed:
    """A tally's listing and the reasons it names (what `Tallies.sorted(first=...)` skips)."""

    rows: tuple[ReasonTally, ...]
    reasons: frozenset[Reason]
    last: int
    """The latest rank (`RANK`) among them: reasons sorted after them must rank later."""


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
