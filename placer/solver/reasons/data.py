"""What the classifier finds, as plain frozen data: the one diagnosis every command words.

A `Reason` is why one domain (or node) is ruled out for a replicated job: its kind, in the rule
order of `KINDS`, and what identifies it (the rule broken, the running holders, the priority
relation of the takers, why a domain is too small). A `ReasonTally` counts the domains or nodes
with one reason and names the JobSets involved; an `RjobDiagnosis` is one replicated job against
the cluster and the rest of the plan. `placer.solver.reasons.wording` turns these into text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, get_args

from placer.model.workload import PodShape

__all__ = [
    "KINDS",
    "RANK",
    "GroupFit",
    "HealthKind",
    "HostCause",
    "HostCauseKind",
    "Locality",
    "Reason",
    "ReasonKind",
    "ReasonTally",
    "RjobDiagnosis",
    "RuleKind",
]

ReasonKind = Literal[
    "held",
    "unlabeled",
    "node-selector",
    "affinity",
    "taint",
    "not-ready",
    "cordoned",
    "too-small",
    "reserved-later",
    "reserved",
    "no-room",
    "taken",
    "own",
]

KINDS: tuple[ReasonKind, ...] = get_args(ReasonKind)
"""The rule order (the order of `ReasonKind`): a domain or node is counted by the first kind that
rules it out."""

RANK: dict[str, int] = {k: i for i, k in enumerate(KINDS)}

RuleKind = Literal["unlabeled", "node-selector", "affinity", "taint"]
"""What a node breaks whatever the plan: a declared topology level's label it lacks (Kueue TAS
leaves such a node out of every domain), the pod's nodeSelector, node affinity or taints."""
HealthKind = Literal["not-ready", "cordoned"]
HostCauseKind = RuleKind | HealthKind | Literal["in-use", "short"]


@dataclass(frozen=True, order=True)
class HostCause:
    """Why some hosts of a too-small domain add fewer pods than they could.

    `in-use`: a resource or host port (`what`) is partly taken; `short`: nothing is wrong with the
    hosts, there are too few of them (`what`: the resource that runs out first); the rule kinds
    name the rule broken in `what`."""

    kind: HostCauseKind
    what: str
    hosts: int


@dataclass(frozen=True, order=True)
class Reason:
    """Why a domain (or node) cannot take a child Job (or pod); equal reasons count together."""

    kind: ReasonKind
    rule: str = ""
    """unlabeled: `missing topology label <key>`; node-selector, affinity, taint: the term or taint
    broken; no-room: what runs out."""
    holders: tuple[str, ...] = ()
    """held: the running JobSets holding the domain; reserved-later: the waiting JobSets whose
    reservations of it start before this one would end (time-aware planning); sorted."""
    relations: tuple[str, ...] = ()
    """taken: the priority relations of the takers to the JobSet (`higher-priority`...), sorted."""
    fits: int = 0
    """too-small: pods of the shape the domain's nodes fit."""
    needed: int = 0
    """too-small: pods one child Job has."""
    hosts: tuple[HostCause, ...] = ()
    """too-small: why, most hosts first."""
    _hash: int = field(default=0, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Reasons are dict keys counted once per domain and JobSet: hash the fields once.
        key = (
            self.kind,
            self.rule,
            self.holders,
            self.relations,
            self.fits,
            self.needed,
            self.hosts,
        )
        object.__setattr__(self, "_hash", hash(key))

    def __hash__(self) -> int:
        return self._hash


@dataclass(frozen=True)
class ReasonTally:
    """How many domains (or nodes) one reason rules out, and the JobSets it names."""

    reason: Reason
    count: int
    jobsets: tuple[str, ...] = ()
    """Holders (held), JobSets reserving for a later start (reserved-later), takers (taken),
    JobSets whose exclusive child Jobs reserve (reserved)."""
    _hash: int = field(default=0, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # A plan's diagnoses share their tallies; wording looks them up by value: hash once.
        object.__setattr__(self, "_hash", hash((self.reason, self.count, self.jobsets)))

    def __hash__(self) -> int:
        return self._hash

    @property
    def kind(self) -> ReasonKind:
        return self.reason.kind


@dataclass(frozen=True)
class Locality:
    """Enough is available, but not inside one domain of the required level."""

    level: str
    most: int
    """Most domains (exclusive) or pods (shared) available inside one domain of `level`."""


@dataclass(frozen=True)
class GroupFit:
    """Each member of a Kueue podset group fits alone, but the workers do not fit beside their
    leader (inside one domain of the required level, when there is one)."""

    group: str
    leader: str
    """The leader's replicated job."""
    level: str | None
    """The group's required level; None for a preferred one (anywhere counts)."""
    most: int
    """Most workers' pods that fit beside the leader (inside one domain of `level`)."""


@dataclass(frozen=True)
class RjobDiagnosis:
    """One replicated job of a JobSet against the cluster and the rest of a plan."""

    name: str
    exclusive_key: str | None
    replicas: int
    pods_per_job: int
    pod: PodShape
    unit: Literal["domain", "pod"]
    needed: int
    """Domains (exclusive) or pods (shared) it needs."""
    available: int
    """Domains (exclusive) or pods (shared) it could get beside the rest of the plan."""
    total: int
    """Domains of its key (exclusive) or nodes (shared)."""
    tallies: tuple[ReasonTally, ...]
    """By rule order, then most counted first."""
    locality: Locality | None
    fits: bool
    nodes_with_room: int | None = None
    """Shared replicated jobs: nodes with room for at least one pod."""
    group: GroupFit | None = None
    """The workers of a podset group that does not fit together (then `fits` is False)."""
