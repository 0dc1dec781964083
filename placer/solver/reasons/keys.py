"""The domains of one exclusive key, for one plan: who holds each (running JobSets), who has
reserved it for a later start (time-aware planning) and who has planned pods in each, indexed
both ways, and the domain of a coarser level around each."""

from __future__ import annotations

from placer.model.topology import DomainPath
from placer.solver.context import PlacementContext
from placer.solver.reasons.bookings import Bookings
from placer.solver.reasons.data import Reason
from placer.solver.reasons.occupancy import Occupancy
from placer.solver.reasons.tally import Tallies

__all__ = ["KeyIndex"]

_NOBODY: frozenset[str] = frozenset()


class KeyIndex:
    """The domains of one key, for one plan: who holds and who has planned pods in each."""

    def __init__(
        self, ctx: PlacementContext, key: str, occupancy: Occupancy, priority: dict[str, int]
    ) -> None:
        self.domains = ctx.domains(key)
        self.held: list[tuple[str, ...]] = [ctx.domain_held_by(d) for d in self.domains]
        busy = occupancy.reserved or occupancy.shared
        self.planned: list[frozenset[str]] = [
            frozenset(o for n in d.nodes for o in occupancy.owners(n)) if busy else _NOBODY
            for d in self.domains
        ]
        self.held_reasons: dict[int, Reason] = {
            i: Reason("held", holders=h) for i, h in enumerate(self.held) if h
        }
        """Per domain: the held reason an outsider sees."""
        self.held_tallies = Tallies()
        """The held reasons counted, with their holders: what every view of the key starts from
        (held is the first kind, whatever the shape: `Classifier._view`)."""
        for i, reason in self.held_reasons.items():
            self.held_tallies.add((reason, self.held[i]))
        self.held_listed = self.held_tallies.listed()
        self.booked: dict[int, tuple[str, ...]] = {}
        """Per domain reserved for a later start: the JobSets reserving it, sorted (what an
        outsider, expected to run past every start, is kept out by). A JobSet with planned pods
        in the domain is left out: it takes the domain now (a JobSet the time-aware pass holds
        to the domains it starts on, `timeaware._keep_start_now`), which "taken" says."""
        latest: dict[int, float] = {}
        for i, d in enumerate(self.domains):
            reservations = [
                r for r in ctx.domain_reservations(d) if r.jobset not in self.planned[i]
            ]
            if reservations:
                self.booked[i] = tuple(sorted({r.jobset for r in reservations}))
                latest[i] = max(r.start_s for r in reservations)
        self.bookings = Bookings(
            (i, reservers, latest[i]) for i, reservers in self.booked.items() if not self.held[i]
        )
        """The reserved domains no running JobSet holds: a held domain is "held" first for
        everyone but its holders, so only these may look otherwise to a JobSet."""
        self.planned_priorities: list[frozenset[int | None]] = [
            frozenset(priority.get(o) for o in owners) for owners in self.planned
        ]
        """Per domain: the priorities of the JobSets with planned pods in it (None: not queued)."""
        self.held_in: dict[str, list[int]] = {}
        """running JobSet -> the domains it holds."""
        self.planned_in: dict[str, list[int]] = {}
        """JobSet -> the domains with its planned pods."""
        for i, owners in enumerate(self.held):
            for o in owners:
                self.held_in.setdefault(o, []).append(i)
        for i, planned in enumerate(self.planned):
            for o in planned:
                self.planned_in.setdefault(o, []).append(i)
        self._enclosing: dict[str, list[DomainPath | None]] = {}

    def enclosing(self, ctx: PlacementContext, level: str) -> list[DomainPath | None]:
        """Per domain, the one domain of `level` around all its nodes (None if it spans several)."""
        found = self._enclosing.get(level)
        if found is None:
            topology, nodes = ctx.topology, ctx.nodes
            found = []
            for d in self.domains:
                paths = {topology.enclosing(nodes[n], level) for n in d.nodes}
                found.append(paths.pop() if len(paths) == 1 else None)
            self._enclosing[level] = found
        return found
