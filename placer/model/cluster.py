"""The cluster as the planner sees it: nodes with free capacity, and who holds which node.

Loaders (`placer.model.snapshots.load`) build a `ClusterSnapshot` from kubectl JSON, the compact
description or a live cluster; the controller builds one from its watch cache. Free capacity is
already net of the requests of non-terminal pods bound to each node, so solvers never look at pods.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from placer.model.durations import DurationSource
from placer.model.preemption import PreemptionFacts
from placer.model.priorities import PriorityClasses
from placer.model.resources import ResourceMap
from placer.model.scheduling import Taint

__all__ = [
    "NODE_RESERVATION_KEY",
    "ClusterSnapshot",
    "DomainReservation",
    "JobSetUsage",
    "Node",
    "RunningJobSet",
]


class JobSetUsage(BaseModel):
    """What the non-terminal pods of one running JobSet use on one node.

    Kept so that a what-if can let a running JobSet finish (`placer.model.whatif.remove_jobset`):
    its requests go back to `free`, its host ports are released, its hold on domains ends.
    """

    model_config = ConfigDict(frozen=True)
    requests: ResourceMap = Field(default_factory=dict)
    """Summed requests of its pods here, only of resources the node offers, one `pods` slot each."""
    host_ports: tuple[tuple[int, str], ...] = ()
    priority: int | None = None
    """Its pods' priority when the source states it (pod `spec.priority`, PriorityClass)."""


class RunningJobSet(BaseModel):
    """When a running JobSet started and how long it is expected to run, for the release timeline.

    Loaders fill it from the pods' `status.startTime` (the earliest) and, when the snapshot holds
    the JobSet object, its expected duration; the controller from its placement record.
    """

    model_config = ConfigDict(frozen=True)
    started_at: datetime | None = None
    expected_duration_s: float | None = None
    """None: the planner's default duration applies."""
    duration_source: DurationSource = "default"
    preemption: PreemptionFacts = Field(default_factory=PreemptionFacts)
    """Its checkpoint interval and whether it may be preempted (`placer.model.preemption`)."""


NODE_RESERVATION_KEY = "placer.dev/node"
"""The key of a `DomainReservation` holding one node, named by its path's value (the node's
name): a node the pods without an exclusive key of a JobSet with child Jobs of both kinds are
expected to take at its start (`JobSetOutcome.reserved_nodes`)."""


class DomainReservation(BaseModel):
    """A domain held for a pending JobSet's expected start (time-aware planning).

    Times are seconds after the planning instant. Until `start_s` the domain may run a JobSet
    expected to end by then (backfill); from `start_s` it is the pending JobSet's alone. With
    `key` `NODE_RESERVATION_KEY` the domain is one node, held whole the same way: without it a
    JobSet backfilled there delayed the pods without an exclusive key of the JobSet it was
    reserved for, and with them its start, past the reservations made behind it.
    """

    model_config = ConfigDict(frozen=True)
    jobset: str
    key: str
    path: tuple[tuple[str, str], ...]
    start_s: float
    end_s: float
    held: bool = False
    """A node a recorded placement holds from now until `end_s` (the controller's ledger, which
    takes no other record there): `jobset` names the hold, and reasons say "held by running"."""


class Node(BaseModel):
    model_config = ConfigDict(frozen=True)
    name: str
    labels: dict[str, str] = Field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    allocatable: ResourceMap = Field(default_factory=dict)
    free: ResourceMap = Field(default_factory=dict)
    """allocatable minus requests of non-terminal pods bound here (incl. one `pods` slot each)."""
    ready: bool = True
    unschedulable: bool = False
    used_host_ports: tuple[tuple[int, str], ...] = ()
    jobsets: tuple[str, ...] = ()
    """`namespace/name` of JobSets with non-terminal pods on this node (sorted)."""
    jobset_usage: dict[str, JobSetUsage] = Field(default_factory=dict)
    """`namespace/name` -> what its pods use here; may miss JobSets when the source did not say."""

    @property
    def usable(self) -> bool:
        return self.ready and not self.unschedulable


class ClusterSnapshot(BaseModel):
    model_config = ConfigDict(frozen=True)
    nodes: tuple[Node, ...]
    priority_classes: dict[str, int] = Field(default_factory=dict)
    levels: tuple[str, ...] = ()
    """Topology levels (node label keys) coarse to fine, when the source states them."""
    kueue_topology: str = ""
    """Name of the Kueue Topology the levels come from, if they do: then, as in Kueue TAS, a node
    missing one of the levels' labels is in no domain and takes no pod."""
    source: str = ""
    running: dict[str, RunningJobSet] = Field(default_factory=dict)
    """`namespace/name` -> start and expected duration, for the JobSets the source dated."""
    non_preempting_classes: tuple[str, ...] = ()
    """PriorityClasses with `preemptionPolicy: Never`: JobSets of them never preempt (sorted)."""
    default_priority_class: str | None = None
    """The PriorityClass with `globalDefault: true`: the Priority admission plugin gives it (its
    value and its preemption policy) to every pod that names no class, so a JobSet whose
    templates name none has it."""
    reservations: tuple[DomainReservation, ...] = ()
    """Domains held for pending JobSets' future starts (the reservation pass, or the controller's
    ledger); every solver treats them through `PlacementContext.domain_open_to`."""

    @property
    def priorities(self) -> PriorityClasses:
        """The classes as a JobSet's templates resolve them (values and the default)."""
        return PriorityClasses(
            self.priority_classes,
            self.default_priority_class,
            frozenset(self.non_preempting_classes),
        )

    def node(self, name: str) -> Node:
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(name)

    def by_name(self) -> dict[str, Node]:
        return {n.name: n for n in self.nodes}
