"""The one classifier: every domain (or node) a replicated job could use, by the first rule that
rules it out, beside the rest of a plan.

The rule order (`data.KINDS`): held by a running JobSet; not matching the pod's nodeSelector,
node affinity or taints (no node of the domain does: the most common rule is named); too small
for one child Job (with why: hosts NotReady or cordoned, a resource or host port in use, too few
hosts); taken in this plan by higher-, same- or lower-priority JobSets (named); taken by its own
child Jobs. A replicated job without an exclusive key is counted per node: rule, NotReady,
cordoned, reserved for exclusive child Jobs of other JobSets, no room for one pod.

The planners (for each JobSet they leave out), `placer explain` and `placer capacity` all call
`Classifier`, so they report the same counts. One classifier serves one plan: what does not depend
on the JobSet asking (a shape's verdict on each domain, who planned pods where) is worked out once,
in one pass over the domains of a key or the nodes, and reused for every JobSet of that shape.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from placer.model.cluster import Node
from placer.model.resources import subtract_resources
from placer.model.topology import Domain, DomainPath
from placer.model.workload import JobSetRequest
from placer.solver.context import JobClass, PlacementContext
from placer.solver.reasons.data import (
    RANK,
    HostCause,
    HostCauseKind,
    Locality,
    Reason,
    ReasonTally,
    RjobDiagnosis,
)
from placer.solver.reasons.nodes import (
    capacity_beside,
    empty_capacity,
    health_kind,
    limiting,
    node_rule,
    rule_kind,
)
from placer.solver.reasons.occupancy import Occupancy

__all__ = ["Classifier", "diagnose"]

_NOBODY: frozenset[str] = frozenset()


@dataclass
class _Tallies:
    """Reasons counted so far, with the JobSets each names."""

    counts: Counter[Reason] = field(default_factory=Counter)
    named: dict[Reason, set[str]] = field(default_factory=dict)

    def add(self, reason: Reason, names: frozenset[str] | tuple[str, ...] = ()) -> None:
        self.counts[reason] += 1
        if names:
            self.named.setdefault(reason, set()).update(names)

    def sorted(self) -> tuple[ReasonTally, ...]:
        """By rule order, then the most common, then the reason itself (stable text)."""
        order = sorted(self.counts, key=lambda r: (RANK[r.kind], -self.counts[r], r))
        return tuple(
            ReasonTally(r, self.counts[r], tuple(sorted(self.named.get(r, ())))) for r in order
        )


@dataclass(frozen=True)
class _SharedNode:
    """One node for one shared pod shape, whoever asks: a rule or health reason, else the room
    left beside the plan's pods (no-room reason when none)."""

    name: str
    reason: Reason | None
    room: int


class Classifier:
    """Classifies domains and nodes for the JobSets left out of one plan (`occupancy`)."""

    def __init__(self, ctx: PlacementContext, occupancy: Occupancy | None = None) -> None:
        self.ctx = ctx
        self.occupancy = occupancy or Occupancy()
        self._priority = {js.key: js.priority for js in ctx.jobsets}
        self._static: dict[tuple[str, int, str], list[Reason | None]] = {}
        """(pod signature, pods per child Job, key) -> per domain of the key: the reason the
        cluster alone rules it out (held aside), None when big enough."""
        self._planned: dict[str, list[frozenset[str]]] = {}
        """key -> per domain: JobSets with planned pods in it."""
        self._enclosing: dict[tuple[str, str], list[DomainPath | None]] = {}
        """(key, level) -> per domain of the key: the one domain of `level` around it, or None."""
        self._shared: dict[str, list[_SharedNode]] = {}
        """pod signature -> every node, sorted by name, as `_SharedNode`."""
        self._signatures: dict[int, str] = {}

    # -- per JobSet --

    def diagnose(self, jobset: JobSetRequest) -> tuple[RjobDiagnosis, ...]:
        """One diagnosis per replicated job of `jobset` (with replicas), beside the plan."""
        return tuple(
            self._exclusive(jc) if jc.exclusive_key else self._shared_rjob(jc)
            for jc in self.ctx.classes_of(jobset)
        )

    def static_reason(self, jc: JobClass, index: int) -> Reason | None:
        """Why the cluster alone (no plan) rules out domain `index` of `jc`'s key for one child Job
        of `jc`; None when the domain can take one (what `PlacementContext.fits` says)."""
        key = jc.exclusive_key
        assert key is not None
        domain = self.ctx.domains(key)[index]
        holders = tuple(sorted(o for o in self.ctx.domain_held_by(domain) if o != jc.jobset.key))
        if holders:
            return Reason("held", holders=holders)
        return self._static_of(jc)[index]

    # -- exclusive replicated jobs: domains --

    def _exclusive(self, jc: JobClass) -> RjobDiagnosis:
        key = jc.exclusive_key
        assert key is not None
        me = jc.jobset.key
        domains = self.ctx.domains(key)
        static = self._static_of(jc)
        planned = self._planned_of(key)
        tallies = _Tallies()
        available: list[int] = []
        for i, d in enumerate(domains):
            held = tuple(sorted(o for o in self.ctx.domain_held_by(d) if o != me))
            if held:
                tallies.add(Reason("held", holders=held), held)
                continue
            fixed = static[i]
            if fixed is not None:
                tallies.add(fixed)
                continue
            others = planned[i] - {me}
            if others:
                relations = tuple(sorted({self._relation(jc.jobset, o) for o in others}))
                tallies.add(Reason("taken", relations=relations), others)
            elif planned[i]:
                tallies.add(Reason("own"))
            else:
                available.append(i)
        replicas = jc.rjob.replicas
        locality = None
        level = jc.rjob.required_topology
        if len(available) >= replicas and level:
            enclosing = self._enclosing_of(key, level)
            per = Counter(enclosing[i] for i in available if enclosing[i] is not None)
            most = max(per.values(), default=0)
            if most < replicas:
                locality = Locality(level, most)
        return RjobDiagnosis(
            name=jc.rjob.name,
            exclusive_key=key,
            replicas=replicas,
            pods_per_job=jc.rjob.pods_per_job,
            pod=jc.rjob.pod,
            unit="domain",
            needed=replicas,
            available=len(available),
            total=len(domains),
            tallies=tallies.sorted(),
            locality=locality,
            fits=len(available) >= replicas and locality is None,
        )

    def _relation(self, me: JobSetRequest, other: str) -> str:
        theirs = self._priority.get(other)
        if theirs is None or theirs > me.priority:
            return "higher-priority"
        return "lower-priority" if theirs < me.priority else "same-priority"

    def _signature(self, jc: JobClass) -> str:
        found = self._signatures.get(jc.index)
        if found is None:
            found = self._signatures[jc.index] = jc.rjob.pod.signature()
        return found

    def _static_of(self, jc: JobClass) -> list[Reason | None]:
        """Each domain's verdict for one child Job of `jc`, computed in one pass over the key."""
        key = jc.exclusive_key
        assert key is not None
        shape = (self._signature(jc), jc.rjob.pods_per_job, key)
        found = self._static.get(shape)
        if found is None:
            found = self._static[shape] = [self._judge(jc, d) for d in self.ctx.domains(key)]
        return found

    def _judge(self, jc: JobClass, domain: Domain) -> Reason | None:
        """Rule (every node breaks one), too small (with why), or None when one child Job fits."""
        need = jc.rjob.pods_per_job
        fits = self.ctx.domain_capacity(jc, domain)
        if fits >= need:
            return None
        pod = jc.rjob.pod
        nodes = [self.ctx.nodes[n] for n in domain.nodes]
        rules = [node_rule(self.ctx, n, pod) for n in nodes]
        if rules and all(rules):
            counts = Counter(r for r in rules if r)
            rule = min(counts, key=lambda r: (-counts[r], r))
            return Reason(rule_kind(rule), rule=rule)
        causes: Counter[tuple[HostCauseKind, str]] = Counter()
        eligible: list[Node] = []
        for n, broken in zip(nodes, rules, strict=True):
            health = health_kind(n)
            if broken:
                causes[(rule_kind(broken), broken)] += 1
            elif health is not None:
                causes[(health, "")] += 1
            else:
                eligible.append(n)
                if capacity_beside(n, pod, None) < empty_capacity(n, pod):
                    causes[("in-use", limiting(n.free, set(n.used_host_ports), pod))] += 1
        if not causes:
            limits = Counter(limiting(n.free, set(n.used_host_ports), pod) for n in eligible)
            limit = min(limits, key=lambda s: (-limits[s], s)) if limits else "eligible nodes"
            causes[("short", limit)] = len(eligible)
        hosts = sorted((HostCause(k, w, c) for (k, w), c in causes.items()), key=_most_first)
        return Reason("too-small", fits=fits, needed=need, hosts=tuple(hosts))

    def _planned_of(self, key: str) -> list[frozenset[str]]:
        found = self._planned.get(key)
        if found is None:
            occ = self.occupancy
            found = self._planned[key] = [
                frozenset(o for n in d.nodes for o in occ.owners(n))
                if occ.reserved or occ.shared
                else _NOBODY
                for d in self.ctx.domains(key)
            ]
        return found

    def _enclosing_of(self, key: str, level: str) -> list[DomainPath | None]:
        found = self._enclosing.get((key, level))
        if found is None:
            topology, nodes = self.ctx.topology, self.ctx.nodes
            found = []
            for d in self.ctx.domains(key):
                paths = {topology.enclosing(nodes[n], level) for n in d.nodes}
                found.append(paths.pop() if len(paths) == 1 else None)
            self._enclosing[(key, level)] = found
        return found

    # -- shared replicated jobs: nodes --

    def _shared_rjob(self, jc: JobClass) -> RjobDiagnosis:
        me = jc.jobset.key
        reserved = self.occupancy.reserved
        tallies = _Tallies()
        room: dict[str, int] = {}
        for node in self._shared_nodes(jc):
            if node.reason is not None:
                tallies.add(node.reason)
                continue
            others = reserved.get(node.name, _NOBODY) - {me}
            if others:
                tallies.add(Reason("reserved"), others)
            elif node.room == 0:
                limit = self._limit_beside(node.name, jc)
                tallies.add(Reason("no-room", rule=limit))
            else:
                room[node.name] = node.room
        need = jc.rjob.replicas * jc.rjob.pods_per_job
        fits = sum(room.values())
        locality = None
        level = jc.rjob.required_topology
        if fits >= need and level:
            per: Counter[DomainPath] = Counter()
            for name, n in room.items():
                path = self.ctx.topology.enclosing(self.ctx.nodes[name], level)
                if path is not None:
                    per[path] += n
            most = max(per.values(), default=0)
            if most < need:
                locality = Locality(level, most)
        return RjobDiagnosis(
            name=jc.rjob.name,
            exclusive_key=None,
            replicas=jc.rjob.replicas,
            pods_per_job=jc.rjob.pods_per_job,
            pod=jc.rjob.pod,
            unit="pod",
            needed=need,
            available=fits,
            total=len(self.ctx.nodes),
            tallies=tallies.sorted(),
            locality=locality,
            fits=fits >= need and locality is None,
            nodes_with_room=len(room),
        )

    def _shared_nodes(self, jc: JobClass) -> list[_SharedNode]:
        """Every node for `jc`'s pod shape, worked out in one pass and kept for the shape."""
        signature = self._signature(jc)
        found = self._shared.get(signature)
        if found is None:
            pod = jc.rjob.pod
            requests = self.occupancy.requests
            found = []
            for name in sorted(self.ctx.nodes):
                node = self.ctx.nodes[name]
                rule = node_rule(self.ctx, node, pod)
                health = health_kind(node)
                if rule:
                    found.append(_SharedNode(name, Reason(rule_kind(rule), rule=rule), 0))
                elif health is not None:
                    found.append(_SharedNode(name, Reason(health), 0))
                else:
                    found.append(
                        _SharedNode(name, None, capacity_beside(node, pod, requests.get(name)))
                    )
            self._shared[signature] = found
        return found

    def _limit_beside(self, name: str, jc: JobClass) -> str:
        """What runs out on node `name` for `jc`'s pod once the plan's pods are placed."""
        node = self.ctx.nodes[name]
        planned = self.occupancy.requests.get(name)
        free = node.free
        if planned:
            free = subtract_resources(free, planned)
        return limiting(free, set(node.used_host_ports), jc.rjob.pod)


def _most_first(cause: HostCause) -> tuple[int, HostCause]:
    return (-cause.hosts, cause)


def diagnose(
    ctx: PlacementContext, jobset: JobSetRequest, occupancy: Occupancy | None = None
) -> tuple[RjobDiagnosis, ...]:
    """`Classifier(ctx, occupancy).diagnose(jobset)`: for one JobSet; a caller explaining many
    JobSets of one plan keeps one `Classifier`."""
    return Classifier(ctx, occupancy).diagnose(jobset)
