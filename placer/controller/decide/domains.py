"""Domains already given away: which nodes a recorded child Job covers, and holding them.

The planner only knows a domain is taken when a node in it lists a holder in `Node.jobsets` (the
snapshot loader fills that from running pods). Between committing a placement and its pods running,
the domains are taken only on paper, so before planning we add a holder token per recorded child Job
(`placer:<namespace>/<job>`) to every node of its domain (`reserve`). A token never equals a JobSet
key, so a held domain is closed to everyone, the JobSet itself included: re-placing one child Job
can never land on a sibling's domain. Pure functions over frozen models; `model_copy` for the
changed nodes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from placer.model.assignment import JobAssignment
from placer.model.cluster import ClusterSnapshot, Node
from placer.model.plan import DomainRef

__all__ = ["HOLD_PREFIX", "DomainIndex", "domain_id", "hold_token", "reserve"]

HOLD_PREFIX = "placer:"


def hold_token(namespace: str, job: str) -> str:
    return f"{HOLD_PREFIX}{namespace}/{job}"


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
                if all(v is not None for v in values):
                    groups.setdefault(values, []).append(n.name)  # type: ignore[arg-type]
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
