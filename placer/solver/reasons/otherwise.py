"""The nodes one JobSet sees otherwise than the outsider, counted as changes to the outsider's view.

A JobSet of pods without an exclusive key is judged again only on the nodes reservations may
open or close to it (`classify.Classifier._shared_counts`). What it sees there is kept node by
node as well as summed (pairs of verdicts by identity, room gained or lost, in total and per
domain of its required level), so that one node can be judged again and the sums follow: a
JobSet holding reservations is counted as one of its pod shape and run holding nothing, with
only its own reserved nodes judged again (100 such JobSets each judged the 6,300 nodes reserved
for others: benchmarks/RESULTS-controller.md, round 52).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from placer.model.topology import DomainPath
from placer.solver.reasons.tally import Tallies, Verdict, View

__all__ = ["NodesOtherwise"]


@dataclass
class NodesOtherwise:
    """Per node judged again, the JobSet's verdict and room; and their sums against `view`."""

    view: View
    enclosing: Sequence[DomainPath | None]
    """Per node, its domain of the JobSet's required level; empty without a level."""
    judged: dict[int, tuple[Verdict, int]] = field(default_factory=dict)
    pairs: dict[tuple[int, int], tuple[Verdict, Verdict, int]] = field(default_factory=dict)
    """(id of the outsider's verdict, id of the JobSet's) -> both verdicts and how many nodes:
    nodes judged alike share verdict objects (`NodeClassifier.judged_as`), so a pair is counted
    once with its number of nodes, not node by node."""
    fits: int = 0
    """Pods that fit, gained over the outsider's count (negative: lost)."""
    with_room: int = 0
    per_level: Counter[DomainPath] = field(default_factory=Counter)
    """Room gained (lost) per domain of the required level."""

    def set(self, node: int, verdict: Verdict, room: int) -> None:
        """The JobSet's verdict and room on `node`, in place of any set before."""
        before = self.judged.get(node)
        if before is not None:
            self._count(node, *before, -1)
        self.judged[node] = (verdict, room)
        self._count(node, verdict, room, 1)

    def _count(self, node: int, verdict: Verdict, room: int, sign: int) -> None:
        seen = self.view.verdicts[node]
        pair = (id(seen), id(verdict))
        found = self.pairs.get(pair)
        nodes = (found[2] if found is not None else 0) + sign
        if nodes:
            self.pairs[pair] = (seen, verdict, nodes)
        else:
            del self.pairs[pair]
        outsider = self.view.room[node]
        delta = room - outsider
        self.fits += sign * delta
        self.with_room += sign * (bool(room) - bool(outsider))
        path = self.enclosing[node] if self.enclosing else None
        if delta and path is not None:
            self.per_level[path] += sign * delta

    def copy(self) -> NodesOtherwise:
        """Another JobSet's changes, to be set on a few nodes (`set`) without touching these."""
        return NodesOtherwise(
            self.view,
            self.enclosing,
            dict(self.judged),
            dict(self.pairs),
            self.fits,
            self.with_room,
            Counter(self.per_level),
        )

    def changed(self) -> Tallies:
        """The tallies to add to the outsider's: each pair's outsider verdict taken out, the
        JobSet's put in, once per node."""
        found = Tallies()
        for seen, own, nodes in self.pairs.values():
            found.add(seen, -nodes)
            found.add(own, nodes)
        return found

    def room_per_level(self, outsider: Counter[DomainPath]) -> Counter[DomainPath]:
        """The JobSet's room per domain of its level, from the outsider's."""
        found = Counter(outsider)
        for path, delta in self.per_level.items():
            if delta:
                found[path] += delta
        return found
