"""The time-aware pass's last step: on each outcome of the inner solve, its expected start,
reserved domains, whether it runs as backfill, whom it waits for, and whether it has waited past
`--max-wait`; for a JobSet that never fits, why, from the cluster it was judged on (`never`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from placer.model.cluster import NODE_RESERVATION_KEY, DomainReservation
from placer.model.plan import DomainRef, JobSetOutcome
from placer.solver.time.never import NeverReasons
from placer.solver.time.overlap import sharing
from placer.solver.time.reservations import Reservation, UnitId
from placer.solver.time.shared.starts import SharedStart
from placer.solver.time.units import Units, domain_id

__all__ = ["Annotator"]


class Annotator:
    """Expected start, reserved domains, backfill, who it waits for and whether it is past
    `--max-wait` (`overdue`), on each outcome; a JobSet that never fits gets its reason from
    the cluster it was judged on last (`never.NeverReasons`)."""

    def __init__(
        self,
        units: Units,
        reservations: dict[str, Reservation],
        estimates: dict[str, Reservation],
        held: Sequence[DomainReservation],
        priorities: dict[str, int],
        overdue: frozenset[str] = frozenset(),
        shared: Mapping[str, SharedStart] | None = None,
    ) -> None:
        self.units = units
        self.reservations = reservations
        self.estimates = estimates
        self.held_on: dict[tuple[str, str], list[DomainReservation]] = {}
        for h in held:
            if h.key == NODE_RESERVATION_KEY:
                unit = (h.key, domain_id(h.path))
            else:
                unit = units.unit_of(h.key, h.path) or (h.key, domain_id(h.path))
            self.held_on.setdefault(unit, []).append(h)
        self.priorities = priorities
        self.overdue = overdue
        self.shared = shared or {}
        """JobSets without an exclusive child Job: their starts, node by node (`shared_starts`)."""
        self.never = NeverReasons(units)

    def _under(self, o: JobSetOutcome) -> list[UnitId]:
        """The units a placed JobSet runs in: each child Job's domain and those sharing a node
        with it, and for pods without an exclusive key every unit holding their nodes; and
        every node of those as a node reservation names it (`NODE_RESERVATION_KEY`)."""
        found: list[UnitId] = []
        nodes: set[str] = set()
        for j in o.jobs:
            if j.domain is not None:
                unit = self.units.unit_of(j.domain.key, j.domain.path)
                found += self._sharing(unit or (j.domain.key, domain_id(j.domain.path)))
                nodes.update(self.units.domains[unit].nodes if unit else ())
            else:
                found += sorted({u for p in j.pods for u in self.units.units_on(p.node)})
            nodes.update(p.node for p in j.pods)
        return found + [(NODE_RESERVATION_KEY, n) for n in sorted(nodes)]

    def _sharing(self, unit: UnitId) -> list[UnitId]:
        """The unit and those sharing a node with it (overlapping keys: a pool run now ahead of
        its block's reservation is backfill too)."""
        layout = self.units.layout
        number = layout.number.get(unit)
        if number is None:
            return [unit]
        return [layout.ids[u] for u in sorted(sharing(layout, number))]

    def outcome(self, o: JobSetOutcome) -> JobSetOutcome:
        update: dict[str, object] = {"priority": self.priorities.get(o.key, o.priority)}
        if o.status == "placed":
            ahead = [
                h
                for unit in self._under(o)
                for h in self.held_on.get(unit, [])
                if h.jobset != o.key
            ]
            update |= {"expected_start_seconds": 0.0, "backfill": bool(ahead)}
            return o.model_copy(update=update)
        if o.key in self.overdue:
            update["past_max_wait"] = True
        shared = self.shared.get(o.key)
        if shared is not None and not shared.with_domains:
            return o.model_copy(update=update | self._shared(o.key, shared))
        reserved = self.reservations.get(o.key)
        if reserved is not None and not reserved.start_s:
            reserved = None  # meant to start now, yet not placed: estimated like the rest
        r = reserved or self.estimates.get(o.key)
        if r is None:
            return o.model_copy(update=update)
        if r.start_s is None:
            return o.model_copy(update=update | self._never(o.key))
        refs = [
            DomainRef(
                key=u[0], value=self.units.domains[u].value, path=list(self.units.domains[u].path)
            )
            for group in r.units.values()
            for u in group
        ]
        waits_for = self.units.waits_for(r)
        held = reserved is not None and r.start_s > 0
        update |= {
            "expected_start_seconds": r.start_s,
            "reserved_domains": refs if held else [],
            "reserved_nodes": sorted(r.nodes) if held else [],
            "waits_for": waits_for,
        }
        if shared is not None:
            update |= self._behind_shared(o.key, r.start_s, shared, waits_for)
        return o.model_copy(update=update)

    def _never(self, key: str) -> dict[str, object]:
        """No expected start, and why from the cluster the JobSet was judged on last."""
        why = self.never.reason(key)
        return {"expected_start_seconds": None} | ({"reason": why} if why is not None else {})

    def _behind_shared(
        self, key: str, domains_s: float, start: SharedStart, waits_for: list[str]
    ) -> dict[str, object]:
        """A JobSet with child Jobs of both kinds: it starts when its pods without an exclusive
        key have room too (`shared_starts`, from its domains' start on). Later than its
        domains', it holds no reservation: one from the later start could overlap the next
        JobSet's on those domains, and the pass gave them for the earlier one."""
        if start.start_s is None:
            return self._never(key) | {"reserved_domains": [], "reserved_nodes": []}
        ends = self.units.timeline.ends_s
        both = sorted({*waits_for, *start.waits_for}, key=lambda k: (-ends.get(k, 0.0), k))
        if start.start_s <= domains_s:
            return {"waits_for": both}
        return {
            "expected_start_seconds": start.start_s,
            "reserved_domains": [],
            "reserved_nodes": [],
            "waits_for": both,
        }

    def _shared(self, key: str, start: SharedStart) -> dict[str, object]:
        """A JobSet without an exclusive child Job: its start node by node, no domain held."""
        if start.start_s is None:
            return self._never(key)
        return {"expected_start_seconds": start.start_s, "waits_for": list(start.waits_for)}
