"""Why a JobSet was left out of a plan, in counts, Kueue-style, sorted so the text is stable.

Every solver calls `unschedulable_reason` for each JobSet it could not place, with the domains the
rest of the plan took. Per replicated job it counts the domains (exclusive) or nodes (shared) by the
FIRST rule that rules each one out, in this order: held by a running JobSet, a node excluded
(NotReady, cordoned, nodeSelector, node affinity, taint), too small for the child Job's pods, taken
by the plan. It names the replicated jobs that cannot get what they need; when each of them could,
alone, it says that they do not fit together.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from decimal import Decimal

from placer.model.cluster import Node
from placer.model.resources import PODS
from placer.model.topology import Domain, DomainPath
from placer.model.workload import JobSetRequest, PodShape
from placer.solver.context import JobClass, PlacementContext, node_exclusion, node_pod_capacity
from placer.solver.memo import context_memo

__all__ = ["format_shape", "unschedulable_reason"]

_MAX_OWNERS = 5

# Rank of each exclusion kind: the order buckets are listed in.
_HELD, _NOT_READY, _CORDONED, _SELECTOR, _AFFINITY, _TAINT, _SMALL, _RESERVED, _TAKEN = range(9)


def unschedulable_reason(
    ctx: PlacementContext,
    jobset: JobSetRequest,
    taken: Mapping[tuple[str, DomainPath], str],
    *,
    shared: Mapping[str, Collection[str]] | None = None,
) -> str:
    """Why `jobset` does not fit beside the domains `taken` ((key, path) -> JobSet key).

    `shared` (node -> JobSet keys with planned non-exclusive pods there) also closes domains.
    """
    reserved = _reserved_nodes(ctx, taken)
    owners = _Owners(reserved, shared or {})
    blocking: list[str] = []
    fitting: list[str] = []
    for jc in ctx.classes_of(jobset):
        if jc.exclusive_key:
            line, ok = _exclusive_line(ctx, jc, owners)
        else:
            line, ok = _shared_line(ctx, jc, reserved)
        (fitting if ok else blocking).append(line)
    if blocking:
        return "; ".join(blocking)
    if not fitting:
        return "no child Jobs to place"
    return "each replicated job fits alone, but not all together beside the rest of the plan: " + (
        "; ".join(fitting)
    )


def format_shape(pod: PodShape) -> str:
    """`{google.com/tpu: 4}`: the accelerators a pod asks for, else all its requests."""
    shown = pod.accelerators or pod.requests
    return "{" + ", ".join(f"{k}: {_fmt(v, k)}" for k, v in sorted(shown.items())) + "}"


def _fmt(value: Decimal, name: str = "") -> str:
    if name == "memory" or name.endswith("storage"):
        for suffix, unit in (("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
            if value >= unit and value % unit == 0:
                return f"{int(value // unit)}{suffix}"
    if value == value.to_integral_value():
        return str(int(value))
    if name == "cpu" and (value * 1000) == (value * 1000).to_integral_value():
        return f"{int(value * 1000)}m"
    return str(value.normalize())


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _owner_list(keys: Collection[str]) -> str:
    ordered = sorted(set(keys))
    shown = ", ".join(ordered[:_MAX_OWNERS])
    more = len(ordered) - _MAX_OWNERS
    return f"{shown}, +{more} more" if more > 0 else shown


@dataclass(frozen=True)
class _Owners:
    """Who has planned pods on a node: the exclusive child Job's JobSet, or shared pods' ones."""

    reserved: Mapping[str, str]
    shared: Mapping[str, Collection[str]]

    def of(self, node: str) -> set[str]:
        found = set(self.shared.get(node, ()))
        if node in self.reserved:
            found.add(self.reserved[node])
        return found


def _reserved_nodes(
    ctx: PlacementContext, taken: Mapping[tuple[str, DomainPath], str]
) -> dict[str, str]:
    """node -> the JobSet whose exclusive child Job took a domain holding it.

    Taken domains never overlap (a plan may not give a node to two child Jobs); should a caller's
    map overlap anyway, the first JobSet by name keeps the node, so the text stays stable.
    """
    owners: dict[str, str] = {}
    memo = context_memo(ctx)
    for (key, path), owner in taken.items():
        by_path: dict[DomainPath, Domain] | None = memo.get(("reasons.paths", key))  # type: ignore[assignment]
        if by_path is None:
            by_path = memo[("reasons.paths", key)] = {d.path: d for d in ctx.domains(key)}
        domain = by_path.get(tuple(path))
        for n in domain.nodes if domain else ():
            if n not in owners or owner < owners[n]:
                owners[n] = owner
    return owners


def _exclusion_bucket(reason: str) -> tuple[int, str]:
    """A node exclusion (from `node_exclusion`) as a domain bucket: (rank, text)."""
    if reason == "NotReady":
        return _NOT_READY, "with a NotReady node"
    if reason == "cordoned":
        return _CORDONED, "with a cordoned node"
    if reason.startswith("nodeSelector "):
        return _SELECTOR, f"not matching {reason}"
    if reason.startswith("node affinity "):
        return _AFFINITY, f"not matching {reason}"
    return _TAINT, f"with untolerated {reason}"


def _limiting(node: Node, pod: PodShape) -> str:
    """The resource (or host port) that caps how many pods of `pod` fit on `node`."""
    best: tuple[int, str] | None = None
    free = node.free
    for name, need in sorted(pod.requests.items()):
        if need > 0:
            have = free.get(name, Decimal(0))
            fit = int(have // need) if have > 0 else 0
            if best is None or fit < best[0]:
                best = (fit, name)
    if PODS in free and (best is None or int(free[PODS]) < best[0]):
        best = (int(free[PODS]), PODS)
    used = set(node.used_host_ports)
    for port, proto in pod.host_ports:
        if (port, proto) in used:
            return f"host port {port}/{proto}"
    return best[1] if best else PODS


@dataclass(frozen=True)
class _NodeFacts:
    """What one node offers a pod shape, whatever the plan: the shape's static view of it."""

    exclusion: str | None
    raw: int
    """Pods that fit by resources and ports alone, exclusions ignored."""
    limit: str

    @property
    def capacity(self) -> int:
        return 0 if self.exclusion else self.raw


class _LazyFacts(dict[str, _NodeFacts]):
    """node name -> facts for one pod shape, computed on first use."""

    def __init__(self, ctx: PlacementContext, pod: PodShape) -> None:
        super().__init__()
        self.ctx = ctx
        self.pod = pod

    def __missing__(self, name: str) -> _NodeFacts:
        n = self.ctx.nodes[name]
        ert = self.ctx.options.extended_resource_toleration
        fact = _NodeFacts(
            node_exclusion(n, self.pod, extended_resource_toleration=ert),
            node_pod_capacity(n, self.pod),
            _limiting(n, self.pod),
        )
        self[name] = fact
        return fact


def _node_facts(ctx: PlacementContext, pod: PodShape) -> _LazyFacts:
    memo = context_memo(ctx)
    key = ("reasons.nodes", pod.signature())
    facts = memo.get(key)
    if facts is None:
        facts = memo[key] = _LazyFacts(ctx, pod)
    return facts  # type: ignore[return-value]


def _static_buckets(ctx: PlacementContext, jc: JobClass) -> list[tuple[int, str] | None]:
    """Per domain of `jc`'s key: node exclusions or too few resources, or None if big enough.

    These do not depend on the plan, only on the pod shape and size: memoized per context.
    """
    key = jc.exclusive_key
    assert key is not None
    memo = context_memo(ctx)
    memo_key = ("reasons.static", jc.rjob.pod.signature(), jc.rjob.pods_per_job, key)
    found = memo.get(memo_key)
    if found is not None:
        return found  # type: ignore[return-value]
    facts = _node_facts(ctx, jc.rjob.pod)
    need = jc.rjob.pods_per_job
    buckets: list[tuple[int, str] | None] = []
    for domain in ctx.domains(key):
        nodes = [facts[n] for n in domain.nodes]
        bucket: tuple[int, str] | None = None
        fits = sum(f.capacity for f in nodes)
        if fits < need:
            excluded = [f.exclusion for f in nodes if f.exclusion]
            if excluded and sum(f.raw for f in nodes) >= need:
                counts = Counter(_exclusion_bucket(r) for r in excluded)
                bucket = min(counts, key=lambda b: (-counts[b], b))
            else:
                short = Counter(f.limit for f in nodes if not f.exclusion)
                limit = min(short, key=lambda s: (-short[s], s)) if short else "eligible nodes"
                bucket = _SMALL, f"too small: fits {_plural(fits, 'pod')}, short of {limit}"
        buckets.append(bucket)
    memo[memo_key] = buckets
    return buckets


def _domain_bucket(
    ctx: PlacementContext,
    jc: JobClass,
    domain: Domain,
    static: tuple[int, str] | None,
    owners: _Owners,
) -> tuple[int, str] | None:
    """Why `domain` cannot take a child Job of `jc` now: its first reason; None if it can."""
    js = jc.jobset
    held = [o for o in ctx.domain_held_by(domain) if o != js.key]
    if held:
        return _HELD, f"held by {_owner_list(held)}"
    if static is not None:
        return static
    planned = {o for n in domain.nodes for o in owners.of(n)}
    if planned == {js.key}:
        return _TAKEN, "taken by its own child Jobs"
    if planned:
        return _TAKEN, "taken by higher-priority or earlier JobSets"
    return None


def _exclusive_line(ctx: PlacementContext, jc: JobClass, owners: _Owners) -> tuple[str, bool]:
    key = jc.exclusive_key
    assert key is not None
    domains = ctx.domains(key)
    counts: Counter[tuple[int, str]] = Counter()
    taken_by: set[str] = set()
    available: list[Domain] = []
    for d, static in zip(domains, _static_buckets(ctx, jc), strict=True):
        bucket = _domain_bucket(ctx, jc, d, static, owners)
        if bucket is None:
            available.append(d)
            continue
        counts[bucket] += 1
        if bucket == (_TAKEN, "taken by higher-priority or earlier JobSets"):
            taken_by.update(o for n in d.nodes for o in owners.of(n) if o != jc.jobset.key)
    parts = []
    for bucket in sorted(counts, key=lambda b: (b[0], -counts[b], b[1])):
        text = bucket[1]
        if bucket[0] == _TAKEN and text.startswith("taken by higher"):
            text += f" ({_owner_list(taken_by)})"
        parts.append(f"{counts[bucket]} {text}")
    replicas = jc.rjob.replicas
    head = (
        f"{jc.rjob.name}: needs {_plural(replicas, 'domain')} of {key} for "
        f"{_plural(jc.rjob.pods_per_job, 'pod')} of {format_shape(jc.rjob.pod)}; "
        f"{len(available)} available of {len(domains)}"
    )
    line = head + (": " + ", ".join(parts) if parts else "")
    ok = len(available) >= replicas
    level = jc.rjob.required_topology
    if ok and level:
        per_enclosing = Counter(_enclosing(ctx, d, level) for d in available)
        per_enclosing.pop(None, None)
        most = max(per_enclosing.values(), default=0)
        if most < replicas:
            line += f"; at most {most} in one domain of {level} (required)"
            ok = False
    return line, ok


def _enclosing(ctx: PlacementContext, domain: Domain, level: str) -> DomainPath | None:
    paths = {ctx.topology.enclosing(ctx.nodes[n], level) for n in domain.nodes}
    return paths.pop() if len(paths) == 1 else None


def _shared_line(
    ctx: PlacementContext, jc: JobClass, reserved: Mapping[str, str]
) -> tuple[str, bool]:
    """Kueue's form: how many pods fit, on how many nodes, and why the others are excluded."""
    pod = jc.rjob.pod
    facts = _node_facts(ctx, pod)
    counts: Counter[tuple[int, str]] = Counter()
    reserved_by: set[str] = set()
    fits = 0
    per_node: dict[str, int] = {}
    for name in sorted(ctx.nodes):
        fact = facts[name]
        reason = fact.exclusion
        if reason:
            text = reason if reason in ("NotReady", "cordoned") else f"by {reason}"
            counts[(_rank_of(reason), text)] += 1
            continue
        if name in reserved:
            counts[(_RESERVED, "reserved for exclusive child Jobs")] += 1
            reserved_by.add(reserved[name])
            continue
        if fact.raw == 0:
            counts[(_SMALL, f"no room for one pod ({fact.limit})")] += 1
            continue
        fits += fact.raw
        per_node[name] = fact.raw
    need = jc.rjob.replicas * jc.rjob.pods_per_job
    parts = []
    for bucket in sorted(counts, key=lambda b: (b[0], -counts[b], b[1])):
        text = bucket[1]
        if bucket[0] == _RESERVED:
            text += f" ({_owner_list(reserved_by)})"
        parts.append(f"{counts[bucket]} {text}")
    line = (
        f"{jc.rjob.name}: needs {_plural(need, 'pod')} of {format_shape(pod)}; fits {fits} "
        f"on {len(per_node)} of {_plural(len(ctx.nodes), 'node')}"
    )
    if parts:
        line += "; excluded: " + ", ".join(parts)
    ok = fits >= need
    level = jc.rjob.required_topology
    if ok and level:
        per_enclosing: Counter[DomainPath | None] = Counter()
        for name, cap in per_node.items():
            per_enclosing[ctx.topology.enclosing(ctx.nodes[name], level)] += cap
        per_enclosing.pop(None, None)
        most = max(per_enclosing.values(), default=0)
        if most < need:
            line += f"; at most {most} in one domain of {level} (required)"
            ok = False
    return line, ok


def _rank_of(reason: str) -> int:
    return _exclusion_bucket(reason)[0]
