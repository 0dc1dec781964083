"""The aggregated problem the CP-SAT model is built from: classes of domains, groups of nodes.

`aggregate` (aggregate.py) produces it and `coarsen` derives a smaller one for admission; every
model builder, hint and materialization step reads it and none changes it, so it is frozen. The
class index (`classes_for`, `class_by_id`, `group_by_id`) is built once here, so the model's rules
never rescan every class to find the ones a JobClass fits.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cached_property

from placer.model.topology import Domain
from placer.solver.context import JobClass, PlacementContext

__all__ = ["AggregatedProblem", "DomainClass", "NodeGroup", "room_owners"]


@dataclass(frozen=True)
class DomainClass:
    """Interchangeable domains of one exclusive key: the model counts how many of them are used."""

    id: str
    key: str
    members: tuple[Domain, ...]
    """Interchangeable domains, sorted by path: materialization takes them in this order."""
    fits: frozenset[int]
    """Indices of the exclusive JobClasses one member can host."""
    stranded: Mapping[int, int]
    """JobClass index -> free accelerators left idle in a member that JobClass takes."""
    parents: Mapping[str, str]
    """Locality level -> id of the enclosing domain at that level."""
    shared_capacity: Mapping[int, int]
    """Non-exclusive JobClass index -> its pods that fit on one member left unreserved."""
    shared_resources: Mapping[str, int]
    """Free resources of one member (scaled integers) for the shared-pod relaxation."""
    evicts: tuple[str, ...] = ()
    """Running JobSets (victim candidates) in each member: using a member evicts them all."""

    @property
    def size(self) -> int:
        return len(self.members)


@dataclass(frozen=True)
class NodeGroup:
    """Nodes outside every exclusive domain with the same capacity for every shared JobClass."""

    id: str
    nodes: tuple[str, ...]
    capacity: Mapping[int, int]
    """Non-exclusive JobClass index -> pods that fit on one node."""
    resources: Mapping[str, int]
    """Free resources of one node (scaled integers)."""
    parents: Mapping[str, str] = field(default_factory=dict)
    """Level a shared JobClass must stay in or counts domains of -> id of the enclosing domain."""


def room_owners(classes: Sequence[DomainClass], groups: Sequence[NodeGroup] = ()) -> dict[str, str]:
    """Node -> id of the class or group whose shared room the model counts it in: its node group,
    else the first class (in class order) with a domain holding it. Overlapping keys put a node
    in several classes' domains; its room is counted once, in that first one."""
    owner = {n: g.id for g in groups for n in g.nodes}
    for c in classes:
        for d in c.members:
            for n in d.nodes:
                owner.setdefault(n, c.id)
    return owner


@dataclass(frozen=True)
class AggregatedProblem:
    """What the model needs to know, in class terms; built by `aggregate`, never modified."""

    ctx: PlacementContext
    exclusive: tuple[JobClass, ...]
    """JobClasses whose child Jobs each need a domain of their exclusive key to themselves."""
    shared: tuple[JobClass, ...]
    """JobClasses without an exclusive key: their pods share nodes outside reserved domains."""
    domain_classes: tuple[DomainClass, ...]
    node_groups: tuple[NodeGroup, ...]
    overlaps: tuple[tuple[str, str], ...] = ()
    """Pairs of class ids whose domains share a node (exclusive keys that overlap)."""
    span_levels: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Exclusive key -> levels above it whose domains a JobSet should span as few of as possible."""
    required_level: Mapping[int, str] = field(default_factory=dict)
    """JobClass index -> level all its child Jobs must share (Kueue required topology)."""
    shared_levels: tuple[str, ...] = ()
    """Required-topology levels of shared JobClasses: their pods must share one such domain."""
    preferred_level: Mapping[int, str] = field(default_factory=dict)
    """JobClass index -> level its child Jobs should share (Kueue preferred topology)."""
    packing_levels: Mapping[int, tuple[str, ...]] = field(default_factory=dict)
    """Shared JobClass index -> levels (coarse to fine) whose domains its pods should use as few
    of as possible (Kueue required or preferred topology; see `aggregate.packing_levels`)."""
    impossible: Mapping[str, str] = field(default_factory=dict)
    """JobSet key -> why no plan can admit it, found before solving."""
    resource_scale: Mapping[str, Decimal] = field(default_factory=dict)
    """Resource -> the integer unit the shared-pod relaxation counts it in."""
    _classes_by_job: Mapping[int, tuple[DomainClass, ...]] = field(
        init=False, repr=False, compare=False
    )
    _class_by_id: Mapping[str, DomainClass] = field(init=False, repr=False, compare=False)
    _group_by_id: Mapping[str, NodeGroup] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_job: dict[int, list[DomainClass]] = {jc.index: [] for jc in self.exclusive}
        for c in self.domain_classes:
            for i in c.fits:
                by_job.setdefault(i, []).append(c)
        object.__setattr__(self, "_classes_by_job", {i: tuple(cs) for i, cs in by_job.items()})
        object.__setattr__(self, "_class_by_id", {c.id: c for c in self.domain_classes})
        object.__setattr__(self, "_group_by_id", {g.id: g for g in self.node_groups})

    def classes_for(self, jc: JobClass) -> tuple[DomainClass, ...]:
        """Domain classes one child Job of `jc` fits, in class order."""
        return self._classes_by_job.get(jc.index, ())

    def class_by_id(self, class_id: str) -> DomainClass:
        return self._class_by_id[class_id]

    def group_by_id(self, group_id: str) -> NodeGroup:
        return self._group_by_id[group_id]

    def shared_room(self, jc_index: int, where: str) -> int:
        """Pods of a shared JobClass that fit on a node group or on a domain class's members."""
        found = self._class_by_id.get(where)
        if found is not None:
            return found.size * found.shared_capacity.get(jc_index, 0)
        group = self._group_by_id[where]
        return len(group.nodes) * group.capacity.get(jc_index, 0)

    @cached_property
    def room_owner(self) -> Mapping[str, str]:
        """`room_owners` of this problem's classes and groups, computed once when first asked."""
        return room_owners(self.domain_classes, self.node_groups)

    def parents_of(self, where: str) -> Mapping[str, str]:
        """Enclosing domains of a domain class or node group, by level."""
        found = self._class_by_id.get(where)
        if found is not None:
            return found.parents
        return self._group_by_id[where].parents
