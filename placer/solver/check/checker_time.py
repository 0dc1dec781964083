"""The plan checker's rules for time: reservations never overlap, backfill ends in time.

Part of the independent checker (`checker.check` calls it on every plan): judged from the plan's
own fields (`expected_start_seconds`, `reserved_domains`, `reserved_nodes`, `backfill`) and the
JobSets' expected durations, sharing nothing with the reservation pass that produced them. With
overlapping exclusive keys (pools inside blocks) two domains sharing a node count as one for both
rules: the nodes of a domain come from the snapshot's labels (`nodes_of`). A reserved node is a
domain of its own for backfill, and may not be held while a domain around it is reserved for
another JobSet; two JobSets may reserve one node at once (their pods may fit there together).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping

from placer.model.cluster import NODE_RESERVATION_KEY
from placer.model.options import SolveOptions
from placer.model.plan import DomainRef, JobPlacement, JobSetOutcome
from placer.model.workload import JobSetRequest
from placer.solver.time.release import expected_duration_s

__all__ = ["check_reservations"]

_DomainId = tuple[str, tuple[tuple[str, str], ...]]
NodesOf = Callable[[DomainRef], frozenset[str]]
"""A domain's nodes, from the snapshot's labels."""


def _id(ref: DomainRef) -> _DomainId:
    return (ref.key, tuple(ref.path))


def check_reservations(
    outcomes: Mapping[str, JobSetOutcome],
    given: Mapping[str, JobSetRequest],
    options: SolveOptions,
    problems: set[str],
    nodes_of: NodesOf | None = None,
) -> None:
    duration = {k: expected_duration_s(js, options.time) for k, js in given.items()}
    windows: dict[_DomainId, list[tuple[float, float, str]]] = {}
    refs: dict[_DomainId, DomainRef] = {}
    for key, o in outcomes.items():
        if o.reserved_nodes and not o.reserved_domains:
            problems.add(f"{key}: reserved nodes without reserved domains")
        if not o.reserved_domains:
            continue
        start = o.expected_start_seconds
        if o.status == "placed" or start is None or start <= 0:
            problems.add(f"{key}: reserved domains without a future expected start")
            continue
        exclusive_jobs = sum(
            r.replicas for r in given[key].replicated_jobs if r.exclusive_key is not None
        )
        if len(o.reserved_domains) != exclusive_jobs:
            problems.add(
                f"{key}: {len(o.reserved_domains)} domains reserved for {exclusive_jobs} child Jobs"
            )
        _check_reserved_topology(key, o, given[key], problems)
        for ref in [*o.reserved_domains, *map(_node_ref, o.reserved_nodes)]:
            windows.setdefault(_id(ref), []).append((start, start + duration[key], key))
            refs[_id(ref)] = ref
    for domain, spans in windows.items():
        if domain[0] != NODE_RESERVATION_KEY:
            _check_overlaps(domain, spans, problems)
    near = _Near(refs, _with_nodes(nodes_of))
    for a, b in near.pairs():
        if a[0] != NODE_RESERVATION_KEY or b[0] != NODE_RESERVATION_KEY:
            _check_overlaps_across(a, b, windows, problems)
    for key, o in outcomes.items():
        if o.status == "placed":
            _check_backfill(key, o, duration[key], windows, near, problems)


def _node_ref(node: str) -> DomainRef:
    """A reserved node as a domain of its own (`NODE_RESERVATION_KEY`)."""
    return DomainRef(key=NODE_RESERVATION_KEY, value=node, path=[(NODE_RESERVATION_KEY, node)])


def _with_nodes(nodes_of: NodesOf | None) -> NodesOf:
    """`nodes_of`, a reserved node's being itself (without `nodes_of`: only those known)."""

    def nodes(ref: DomainRef) -> frozenset[str]:
        if ref.key == NODE_RESERVATION_KEY:
            return frozenset({ref.value})
        return nodes_of(ref) if nodes_of is not None else frozenset()

    return nodes


def _check_reserved_topology(
    key: str, o: JobSetOutcome, jobset: JobSetRequest, problems: set[str]
) -> None:
    """A JobSet with one exclusive replicated job and a required topology is reserved inside one
    domain of that level: domains it could not use together are no reservation. (With several
    replicated jobs the plan does not say which domain is whose, so there is nothing to judge.)"""
    exclusive = [r for r in jobset.replicated_jobs if r.exclusive_key is not None]
    if len(exclusive) != 1 or exclusive[0].required_topology is None:
        return
    level = exclusive[0].required_topology
    values = {dict(ref.path).get(level) for ref in o.reserved_domains}
    if None not in values and len(values) > 1:
        problems.add(
            f"{key}: reserved domains span {len(values)} domains of its required topology {level}"
        )


def _check_overlaps(
    domain: _DomainId, spans: Iterable[tuple[float, float, str]], problems: set[str]
) -> None:
    ordered = sorted(spans)
    for (s1, e1, k1), (s2, _, k2) in itertools.pairwise(ordered):
        if s2 < e1:
            problems.add(
                f"{domain[0]}={'/'.join(v for _, v in domain[1])}: reservations of {k1} "
                f"({s1:.0f}-{e1:.0f} s) and {k2} (from {s2:.0f} s) overlap"
            )


class _Near:
    """Reserved domains sharing nodes with a domain (overlapping keys; none without `nodes_of`,
    and none when every node lies in one reserved domain at most)."""

    def __init__(self, refs: Mapping[_DomainId, DomainRef], nodes_of: NodesOf | None) -> None:
        self.nodes_of = nodes_of
        self.on_node: dict[str, set[_DomainId]] = {}
        if nodes_of is None:
            return
        for domain, ref in refs.items():
            for n in nodes_of(ref):
                self.on_node.setdefault(n, set()).add(domain)

    def pairs(self) -> list[tuple[_DomainId, _DomainId]]:
        """Every two reserved domains sharing a node, once each."""
        found = {
            (a, b)
            for ids in self.on_node.values()
            if len(ids) > 1
            for a, b in itertools.combinations(sorted(ids), 2)
        }
        return sorted(found)

    def of(self, ref: DomainRef) -> list[_DomainId]:
        """The domain itself and the reserved domains sharing a node with it."""
        if self.nodes_of is None or not self.on_node:
            return [_id(ref)]
        found = {d for n in self.nodes_of(ref) for d in self.on_node.get(n, ())}
        return [_id(ref), *sorted(found - {_id(ref)})]


def _label(domain: _DomainId) -> str:
    return f"{domain[0]}={'/'.join(v for _, v in domain[1])}"


def _check_overlaps_across(
    a: _DomainId,
    b: _DomainId,
    windows: Mapping[_DomainId, list[tuple[float, float, str]]],
    problems: set[str],
) -> None:
    """Two reserved domains sharing a node are never held at once, by two JobSets or by one."""
    for (s1, e1, k1), (s2, e2, k2) in itertools.product(windows[a], windows[b]):
        if s1 < e2 and s2 < e1:
            problems.add(
                f"{_label(a)} and {_label(b)} share nodes: reservations of {k1} "
                f"({s1:.0f}-{e1:.0f} s) and {k2} ({s2:.0f}-{e2:.0f} s) overlap"
            )


def _reserved_under(job: JobPlacement, near: _Near) -> list[tuple[_DomainId, str]]:
    """The reserved domains a placed child Job runs in, each with where, for the message: its
    own domain and those sharing nodes with it; for pods without an exclusive key, the reserved
    domains holding their nodes (such pods run into a reservation as a child Job does)."""
    if job.domain is not None:
        value, own = job.domain.value, _id(job.domain)
        return [
            (d, value if d == own else f"{value}, sharing nodes with {_label(d)}")
            for d in near.of(job.domain)
        ]
    nodes = sorted({p.node for p in job.pods})
    return [
        (d, f"{n}, a node of {_label(d)}") for n in nodes for d in sorted(near.on_node.get(n, ()))
    ]


def _check_backfill(
    key: str,
    o: JobSetOutcome,
    duration_s: float,
    windows: Mapping[_DomainId, list[tuple[float, float, str]]],
    near: _Near,
    problems: set[str],
) -> None:
    ahead = False
    for job in o.jobs:
        for domain, where in _reserved_under(job, near):
            for start, _, holder in windows.get(domain, []):
                if holder == key:
                    continue
                ahead = True
                if duration_s > start:
                    problems.add(
                        f"{key}: {job.name} runs {duration_s:.0f} s on {where}, "
                        f"reserved for {holder} from {start:.0f} s"
                    )
    if ahead and not o.backfill:
        problems.add(
            f"{key}: runs on domains reserved for later JobSets but is not marked backfill"
        )
