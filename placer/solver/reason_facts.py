"""What each domain and node offers a pod shape before any plan: the fixed part of a reason.

A reason (reasons.py) counts, per replicated job, the domains (exclusive) or nodes (shared) by the
first rule that rules each one out. Most of those counts depend only on the snapshot and the pod
shape: which domains running JobSets hold, which nodes a pod may not use, which domains are too
small. This module counts them once per context and (shape, pods per child Job, key) (`Baseline`)
or shape (`SharedBaseline`); reason_counts.py adds what a plan takes. It also words the buckets;
the explain package shares those helpers.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Hashable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import TypeVar

from placer.model.cluster import Node
from placer.model.resources import PODS
from placer.model.topology import Domain, DomainPath
from placer.model.workload import PodShape
from placer.solver.context import JobClass, PlacementContext
from placer.solver.memo import context_memo

__all__ = [
    "RESERVED",
    "TAKEN_HIGHER",
    "TAKEN_OWN",
    "Baseline",
    "Bucket",
    "DomainKey",
    "KeyIndex",
    "SharedBaseline",
    "limiting",
    "listing",
    "node_bucket",
    "owner_list",
    "plural",
    "size_key",
]

_MAX_OWNERS = 5

# Rank of each exclusion kind: the order buckets are listed in.
_HELD, _NOT_READY, _CORDONED, _SELECTOR, _AFFINITY, _TAINT, _SMALL, _RESERVED, _TAKEN = range(9)

Bucket = tuple[int, str]
"""(rank, text): why a domain or node is ruled out; a reason lists buckets by rank."""
DomainKey = tuple[str, DomainPath]
"""(key, path): a domain's identity across keys, as in the taken map."""

TAKEN_HIGHER: Bucket = (_TAKEN, "taken by higher-priority or earlier JobSets")
TAKEN_OWN: Bucket = (_TAKEN, "taken by its own child Jobs")
RESERVED: Bucket = (_RESERVED, "reserved for exclusive child Jobs")

T = TypeVar("T")
B = TypeVar("B", Bucket, Bucket | None)


# -- text --------------------------------------------------------------------------------------


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def owner_list(keys: Collection[str]) -> str:
    """The first JobSets by name and how many more: reasons stay short on a busy fleet."""
    ordered = sorted(set(keys))
    shown = ", ".join(ordered[:_MAX_OWNERS])
    more = len(ordered) - _MAX_OWNERS
    return f"{shown}, +{more} more" if more > 0 else shown


def limiting(node: Node, pod: PodShape) -> str:
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


def _exclusion_bucket(reason: str) -> Bucket:
    """A node exclusion (from `node_exclusion`) as a domain bucket."""
    if reason == "NotReady":
        return _NOT_READY, "with a NotReady node"
    if reason == "cordoned":
        return _CORDONED, "with a cordoned node"
    if reason.startswith("nodeSelector "):
        return _SELECTOR, f"not matching {reason}"
    if reason.startswith("node affinity "):
        return _AFFINITY, f"not matching {reason}"
    return _TAINT, f"with untolerated {reason}"


def listing(counts: Mapping[B, int], suffix: Callable[[Bucket], str] = lambda b: "") -> list[str]:
    """`<count> <text><suffix>` per bucket present: by rank, then the most common, then by text."""
    present = [b for b, n in counts.items() if b is not None and n > 0]
    present.sort(key=lambda b: (b[0], -counts[b], b[1]))
    return [f"{counts[b]} {b[1]}{suffix(b)}" for b in present]


def node_bucket(reason: str) -> Bucket:
    """A node exclusion as a bucket of the shared (per node) form."""
    text = reason if reason in ("NotReady", "cordoned") else f"by {reason}"
    return _exclusion_bucket(reason)[0], text


# -- what each node offers a pod shape ---------------------------------------------------------


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
    """node name -> facts for one pod shape, computed on first use, once per node profile."""

    def __init__(self, ctx: PlacementContext, pod: PodShape) -> None:
        super().__init__()
        self.ctx = ctx
        self.shape = ctx.shape_facts(pod)
        self._by_profile: dict[Hashable, _NodeFacts] = {}

    def __missing__(self, name: str) -> _NodeFacts:
        profile = self.shape.profile(name)
        fact = self._by_profile.get(profile)
        if fact is None:
            fact = _NodeFacts(
                self.shape.exclusion(name),
                self.shape.raw(name),
                limiting(self.ctx.nodes[name], self.shape.pod),
            )
            self._by_profile[profile] = fact
        self[name] = fact
        return fact


def _memoized(ctx: PlacementContext, key: tuple[object, ...], make: Callable[[], T]) -> T:
    """`make()` once per context and key: these facts depend on the snapshot, never on a plan."""
    memo = context_memo(ctx)
    found = memo.get(key)
    if found is None:
        found = memo[key] = make()
    return found  # type: ignore[return-value]


def _node_facts(ctx: PlacementContext, pod: PodShape) -> _LazyFacts:
    return _memoized(ctx, ("reasons.nodes", pod.signature()), lambda: _LazyFacts(ctx, pod))


# -- the domains of one key ---------------------------------------------------------------------


class KeyIndex:
    """The domains of one key, indexed for reasons: by path, by node, by running holder."""

    def __init__(self, ctx: PlacementContext, key: str) -> None:
        self.ctx = ctx
        self.domains: list[Domain] = ctx.domains(key)
        self.by_path: dict[DomainPath, int] = {d.path: i for i, d in enumerate(self.domains)}
        self.of_node: dict[str, int] = {n: i for i, d in enumerate(self.domains) for n in d.nodes}
        """node -> the domain holding it (a node has one value per key, so one domain)."""
        self.held: list[tuple[str, ...]] = [ctx.domain_held_by(d) for d in self.domains]
        self.held_in: dict[str, list[int]] = {}
        """running JobSet -> the domains it holds."""
        for i, owners in enumerate(self.held):
            for o in owners:
                self.held_in.setdefault(o, []).append(i)
        self._enclosing: dict[str, list[DomainPath | None]] = {}

    @staticmethod
    def of(ctx: PlacementContext, key: str) -> KeyIndex:
        return _memoized(ctx, ("reasons.key", key), lambda: KeyIndex(ctx, key))

    def enclosing(self, level: str) -> list[DomainPath | None]:
        """Per domain, the one domain of `level` around all its nodes (None if it spans several)."""
        found = self._enclosing.get(level)
        if found is None:
            topology, nodes = self.ctx.topology, self.ctx.nodes
            found = []
            for d in self.domains:
                paths = {topology.enclosing(nodes[n], level) for n in d.nodes}
                found.append(paths.pop() if len(paths) == 1 else None)
            self._enclosing[level] = found
        return found


# -- exclusive replicated jobs: per domain ------------------------------------------------------


class Baseline:
    """One (pod shape, pods per child Job, key): each domain's bucket before any plan.

    `fixed[i]` is the bucket of a domain ruled out whatever the plan (held by a running JobSet,
    a node excluded, too small), as a JobSet holding nothing sees it; None marks an open domain,
    which the plan may take.
    """

    def __init__(self, ctx: PlacementContext, jc: JobClass) -> None:
        key = jc.exclusive_key
        assert key is not None
        self.index = KeyIndex.of(ctx, key)
        self.static = _static_buckets(ctx, self.index.domains, jc)
        self.fixed = [
            self._held_bucket(owners) or static
            for owners, static in zip(self.index.held, self.static, strict=True)
        ]
        self.counts: Counter[Bucket | None] = Counter(self.fixed)
        """Buckets under an empty plan; None counts the available domains."""
        self.fixed_listing = listing(self.counts)
        """The listing of the fixed buckets: a plan adds only "taken" ones, which list last."""

    @staticmethod
    def of(ctx: PlacementContext, jc: JobClass) -> Baseline:
        memo_key = ("reasons.baseline", *size_key(jc))
        return _memoized(ctx, memo_key, lambda: Baseline(ctx, jc))

    @staticmethod
    def _held_bucket(owners: Collection[str]) -> Bucket | None:
        return (_HELD, f"held by {owner_list(owners)}") if owners else None

    def judge(self, i: int, viewer: str | None, planned: frozenset[str]) -> Bucket | None:
        """Why domain `i` cannot take a child Job of `viewer` (a JobSet key; None for one that
        holds nothing and has no planned pods) with `planned` owning pods in it; None if it can."""
        held = self._held_bucket([o for o in self.index.held[i] if o != viewer])
        if held is not None:
            return held
        if self.static[i] is not None:
            return self.static[i]
        if not planned:
            return None
        return TAKEN_OWN if planned == {viewer} else TAKEN_HIGHER


def _static_buckets(
    ctx: PlacementContext, domains: list[Domain], jc: JobClass
) -> list[Bucket | None]:
    """Per domain: node exclusions or too few resources for one child Job; None if big enough."""
    facts = _node_facts(ctx, jc.rjob.pod)
    need = jc.rjob.pods_per_job
    buckets: list[Bucket | None] = []
    for domain in domains:
        nodes = [facts[n] for n in domain.nodes]
        bucket: Bucket | None = None
        fits = sum(f.capacity for f in nodes)
        if fits < need:
            excluded = [f.exclusion for f in nodes if f.exclusion]
            if excluded and sum(f.raw for f in nodes) >= need:
                counts = Counter(_exclusion_bucket(r) for r in excluded)
                bucket = min(counts, key=lambda b: (-counts[b], b))
            else:
                short = Counter(f.limit for f in nodes if not f.exclusion)
                limit = min(short, key=lambda s: (-short[s], s)) if short else "eligible nodes"
                bucket = _SMALL, f"too small: fits {plural(fits, 'pod')}, short of {limit}"
        buckets.append(bucket)
    return buckets


def size_key(jc: JobClass) -> tuple[str, int, str | None]:
    """Classes with equal pod shape, child Job size and key share their counts."""
    return jc.rjob.pod.signature(), jc.rjob.pods_per_job, jc.exclusive_key


# -- shared replicated jobs: per node -----------------------------------------------------------


class SharedBaseline:
    """One pod shape over every node, before any plan: exclusions, room, where the room is."""

    def __init__(self, ctx: PlacementContext, pod: PodShape) -> None:
        self.ctx = ctx
        self.facts = _node_facts(ctx, pod)
        self.names = sorted(ctx.nodes)
        self.counts: Counter[Bucket] = Counter()
        """Excluded nodes and nodes with no room for one pod."""
        self.fits = 0
        self.with_room = 0
        for name in self.names:
            fact = self.facts[name]
            if fact.exclusion:
                self.counts[node_bucket(fact.exclusion)] += 1
            elif fact.raw == 0:
                self.counts[self.no_room(name)] += 1
            else:
                self.fits += fact.raw
                self.with_room += 1
        self._enclosing: dict[str, dict[str, DomainPath | None]] = {}

    @staticmethod
    def of(ctx: PlacementContext, pod: PodShape) -> SharedBaseline:
        return _memoized(ctx, ("reasons.shared", pod.signature()), lambda: SharedBaseline(ctx, pod))

    def no_room(self, name: str) -> Bucket:
        return _SMALL, f"no room for one pod ({self.facts[name].limit})"

    def enclosing(self, level: str) -> dict[str, DomainPath | None]:
        """node -> its domain of `level`."""
        found = self._enclosing.get(level)
        if found is None:
            topology, nodes = self.ctx.topology, self.ctx.nodes
            found = {n: topology.enclosing(nodes[n], level) for n in self.names}
            self._enclosing[level] = found
        return found
