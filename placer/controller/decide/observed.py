"""The frozen inputs of one reconcile round: what was observed, and what was already announced.

A cycle reads the cache once, then every decision of that round works on this one value (survey,
review, planning, the ledger commit, `plan_writes`) rather than on a growing list of parameters;
what the process remembers across cycles (events already sent) is passed the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from placer.controller.decide.domains import DomainIndex
from placer.controller.decide.ledger import Ledger
from placer.controller.decide.state import ClusterState
from placer.controller.decide.survey import ManagedJobSet
from placer.model.cluster import ClusterSnapshot

__all__ = ["Announced", "Observed"]


@dataclass(frozen=True)
class Observed:
    """One consistent view: the cached objects, the ledger in them, the managed JobSets (their
    records read from the ledger or their annotations), the planner's snapshot and its domains."""

    state: ClusterState
    ledger: Ledger
    managed: tuple[ManagedJobSet, ...]
    snapshot: ClusterSnapshot
    index: DomainIndex


@dataclass(frozen=True)
class Announced:
    """Events this process already sent, so they are not repeated every cycle."""

    unschedulable: Mapping[str, str] = field(default_factory=dict)
    """JobSet key -> the `Unschedulable` message last emitted."""
    placed: frozenset[tuple[str, str]] = frozenset()
    """(JobSet key, plan id) whose `Placed` event was sent (or found already sent)."""
