"""Whether a waiting JobSet whose pods have no exclusive key starts now, judged node by node in
the reservation pass's queue order.

The pass works on domains, and such a JobSet needs none, so it counted every one as starting
now whatever the room, and lifted it into the tier the inner solve places first. Its pods then
took nodes of domains the pass had given exclusive JobSets starting now (a pod on a domain's
node closes the domain to every exclusive child Job: the ledger's rule), and the inner solve
was run again for each JobSet so displaced (`timeaware._keep_start_now`): 7-11 s of a 12-16 s
pass at 10,000 nodes with 100 such JobSets among 500 (benchmarks/RESULTS-controller.md, round
38).

Here the pass asks, at its turn in the queue, whether its pods fit over its whole expected run
beside everything the pass has settled ahead of it (`shared.timeline.NodeTimeline`): running
JobSets, the domains held by JobSets ahead (whole, over their runs, from now or later), and the
pods of JobSets of this kind ahead. Only one that fits from now counts as starting now; the
domains holding the nodes its pods were packed on are then closed to the exclusive JobSets
behind it, so the pass never gives two JobSets it starts now the same nodes. One that does not
fit now keeps its own priority in the inner solve, which may still place it where room is left.
Its pods are packed as the ledger packs them (first fit, nodes outside every exclusive domain
first, each group by name), so best-fit puts them where the pass expects, and is not run again.
Packing them on the domains the fewest JobSets behind could take instead was tried: best-fit,
packing by name, then took the domains the pass gave others and was run again (3-4 s at 10,000
nodes), for no more JobSets of the top priority nor accelerators placed on five seeds
(RESULTS-controller, round 39). Where a JobSet behind could start now only if the pods went
elsewhere, best-fit leaves it waiting, as it does without time; CP-SAT, which places the JobSets
not started now in the tiers below, still starts it.

A JobSet with child Jobs of both kinds that the pass starts now has its pods without an
exclusive key packed the same way, off its own domains (`beside`), and the domains holding them
closed to the exclusive JobSets behind it: unknown to the pass, the inner solve put them on
domains the pass gave JobSets behind, and was run again for each so displaced (1.1-1.3 s at
10,000 nodes with 50 such JobSets among 500, RESULTS-controller, round 44). One the pass
reserves for a later start has them packed at that start, held from then: those nodes are the
reservation's (`Reservation.nodes`), and a JobSet behind that would run into the start does not
count on them (RESULTS-controller, round 48).

With `--schedule cpsat` the greedy pass decides it the same way, and the schedule, which decides
the exclusive JobSets' starts jointly, holds the domains its pods close from now (`closures`):
in its model it needs no domain, and counted as starting now whatever the room, one queued
behind a JobSet of equal priority it could not start beside was lifted into that JobSet's tier,
where CP-SAT started it instead when it held more accelerators.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from placer.model.workload import JobSetRequest
from placer.solver.time.calendar import UnitId
from placer.solver.time.shared.starts import has_shared, only_shared
from placer.solver.time.shared.timeline import NodeTimeline
from placer.solver.time.units import Units

__all__ = ["NodeRoom"]


class NodeRoom:
    """The reservation pass's view of nodes for JobSets without an exclusive child Job: told of
    every domain the pass holds (`held`), asked in queue order when one starts (`start`)."""

    def __init__(
        self,
        units: Units,
        order: Sequence[JobSetRequest],
        durations: Mapping[str, float],
    ) -> None:
        self.units = units
        self.shared = {js.key: js for js in order if only_shared(units.ctx, js)}
        self.mixed = {
            js.key: js for js in order if has_shared(units.ctx, js) and js.key not in self.shared
        }
        """JobSets with child Jobs of both kinds: their pods without an exclusive key are packed
        here when the pass starts them now (`beside`)."""
        self.closed: dict[str, tuple[frozenset[UnitId], float]] = {}
        """Per JobSet started now, the units its pods close and its run's length."""
        self.timeline = NodeTimeline(units, durations, (), (), _rank_now(units))

    def held(self, owner: str, unit: UnitId, start: float, end: float) -> None:
        """`unit` held for `owner` over `[start, end)`: its nodes are closed to every pod."""
        self.timeline.hold(owner, self.units.domains[unit].nodes, start, end)

    def start(
        self, jobset: str, duration_s: float
    ) -> tuple[float | None, frozenset[UnitId]] | None:
        """For a JobSet without an exclusive child Job: its earliest start beside what the pass
        settled ahead of it (None: no time fits), and, when that is now, the units holding the
        nodes its pods take (closed to exclusive child Jobs for its run). Its pods are then
        held where they were packed. None for any other JobSet."""
        js = self.shared.get(jobset)
        if js is None:
            return None
        placed = self.timeline.place(js, self.units.ctx, duration_s)
        if placed is None:
            return None, frozenset()
        start, nodes = placed
        if start > 0:
            return start, frozenset()
        closed = frozenset(u for n in nodes for u in self.units.units_on(n))
        self.closed[jobset] = (closed, duration_s)
        return 0.0, closed

    def beside(
        self, jobset: str, duration_s: float, units: Iterable[UnitId], start_s: float = 0.0
    ) -> frozenset[UnitId]:
        """For a JobSet with child Jobs of both kinds the pass gives `units` from `start_s`:
        the units holding the nodes its pods without an exclusive key take then, off those
        units (closed to exclusive child Jobs for its run; none when they have no room then,
        which the reservation phase finds and moves its start for: `reserving`). Its pods are
        then held where they were packed, and its units whole.

        A later start too: its pods' nodes become the reservation's (`Reservation.nodes`),
        which the inner solve keeps JobSets that would not end by then off. Held only from
        now, a JobSet of such pods alone behind it was counted as starting now on them for a
        run past that start, lifted into the tier the inner solve places first, and kept out
        there; an exclusive JobSet the pass started on the domain it then took lost it."""
        js = self.mixed.get(jobset)
        if js is None:
            return frozenset()
        nodes = frozenset(n for u in units for n in self.units.domains[u].nodes)
        placed = self.timeline.place(
            js, self.units.ctx, duration_s, not_before=start_s, domains=nodes
        )
        if placed is None or placed[0] > start_s:
            return frozenset()
        return frozenset(u for n in placed[1] for u in self.units.units_on(n))

    def closures(self) -> list[tuple[UnitId, float, float]]:
        """The units closed by the JobSets started now so far, each over `[0, its run)`."""
        return [(u, 0.0, end) for units, end in self.closed.values() for u in sorted(units)]


def _rank_now(units: Units) -> dict[str, int]:
    """The ledger's packing rank (`PlacementContext.shared_pod_rank`) as the plan now sees it:
    judged on the cluster once every JobSet ends (`Units.ctx`), so a domain busy now, which the
    ledger counts no class for, is named busy here."""
    return units.ctx.shared_pod_rank(busy=units.free_at.keys())
