"""Domains already given away: which nodes a recorded child Job covers, and holding them.

The planner only knows a domain is taken when a node in it lists a holder in `Node.jobsets` (the
snapshot loader fills that from running pods). Between committing a placement and its pods running,
the domains are taken only on paper, so before planning we add a holder token per recorded child Job
to every node of its domain (`holds`, then `reserve`). A token never equals a JobSet key, so a held
domain is closed to everyone, the JobSet itself included: re-placing one child Job can never land
on a sibling's domain. Pure functions over frozen models; `model_copy` for the changed nodes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import cast

from placer.model.assignment import JobAssignment
from placer.model.cluster import ClusterSnapshot, Node
from placer.model.plan import DomainRef

__all__ = [
    "HOLD_PREFIX",
    "DomainIndex",
    "Hold",
    "JobsByHolder",
    "domain_id",
    "hold_token",
    "holds",
    "reserve",
]

HOLD_PREFIX = "placer:"

JobsByHolder = Mapping[str, Mapping[str, JobAssignment]]
"""Holder (a JobSet key, or a ledger holder label) -> child Job name -> where it is recorded."""


@dataclass(frozen=True)
class Hold:
    """One recorded child Job as the planner sees it taken: the token put on its nodes, and the
    JobSet whose expected end is the hold's end (time-aware planning)."""

    token: str
    owner: str
    """`namespace/name` of the JobSet the child Job belongs to."""
    job_name: str
    job: JobAssignment


def hold_token(namespace: str, job: str) -> str:
    """The token of a managed JobSet's recorded child Job (`holds` builds every token)."""
    return f"{HOLD_PREFIX}{namespace}/{job}"


def holds(records: JobsByHolder, foreign: JobsByHolder) -> list[Hold]:
    """Every hold the planner adds, in a stable order: one per child Job of `records` (JobSet key
    -> its recorded child Jobs), token `placer:<namespace>/<job>`; one per child Job that
    `foreign` holds (a ledger holder label, `<kind>.<namespace>.<name>` or
    `record.<namespace>.<name>`, -> child Jobs), token `placer:<label>:<job>`, which never equals
    a managed child Job's."""
    result: list[Hold] = []
    for key, jobs in sorted(records.items()):
        namespace = key.split("/", 1)[0]
        for name, job in sorted(jobs.items()):
            result.append(Hold(hold_token(namespace, name), key, name, job))
    for label, jobs in sorted(foreign.items()):
        owner = label.split(".", 1)[-1].replace(".", "/", 1)
        for name, job in sorted(jobs.items()):
            result.append(Hold(f"{HOLD_PREFIX}{label}:{name}", owner, name, job))
    return result


def _pairs(domain: DomainRef) -> tuple[tuple[str, str], ...]:
    pairs = [(str(k), str(v)) for k, v in domain.path]
    if (domain.key, domain.value) not in pairs:
        pairs.append((domain.key, domain.value))
    return tuple(pairs)


def domain_id(domain: DomainRef) -> str:
    return "/".join(v for _, v in _pairs(domain))


class DomainIndex:
    """Node names per domain path, computed once per distinct list of path keys."""

    def __init__(self, snapshot: ClusterSnapshot) -> None:
        self.snapshot = snapshot
        self.nodes: dict[str, Node] = snapshot.by_name()
        self._by_keys: dict[tuple[str, ...], dict[tuple[str, ...], tuple[str, ...]]] = {}

    def members(self, domain: DomainRef) -> tuple[str, ...]:
        """The domain's nodes, sorted by name."""
        pairs = _pairs(domain)
        keys = tuple(k for k, _ in pairs)
        if keys not in self._by_keys:
            groups: dict[tuple[str, ...], list[str]] = {}
            for n in self.snapshot.nodes:
                values = tuple(n.labels.get(k) for k in keys)
                if all(v is not None for v in values):  # then every value is a str
                    groups.setdefault(cast(tuple[str, ...], values), []).append(n.name)
            self._by_keys[keys] = {v: tuple(sorted(names)) for v, names in groups.items()}
        return self._by_keys[keys].get(tuple(v for _, v in pairs), ())

    def job_nodes(self, job: JobAssignment) -> tuple[str, ...]:
        """Nodes a recorded child Job holds: its domain, else the nodes its pods were given."""
        if job.domain is not None:
            return self.members(job.domain)
        return tuple(sorted(set(job.nodes.values())))


def reserve(snapshot: ClusterSnapshot, holders: Mapping[str, Sequence[str]]) -> ClusterSnapshot:
    """The snapshot with holder tokens (`holders`: node -> tokens) added to nodes' `jobsets`."""
    if not holders:
        return snapshot
    nodes = []
    for n in snapshot.nodes:
        extra = holders.get(n.name)
        if extra:
            n = n.model_copy(update={"jobsets": tuple(sorted({*n.jobsets, *extra}))})
        nodes.append(n)
    return snapshot.model_copy(update={"nodes": tuple(nodes)})
