"""The classifier's node half: every node as the pod of a shared replicated job sees it, beside
one plan.

A replicated job without an exclusive key is counted per node, by the first rule that rules the
node out: a missing topology label, nodeSelector, node affinity, taint, NotReady, cordoned,
in a domain reserved for the later start of another JobSet that this one would not end before
(time-aware planning, `PlacementContext.node_open_to`), reserved for exclusive child Jobs of
other JobSets, no room for one pod beside the plan's pods.
The workers of a Kueue podset group are also judged here beside their leader, node by node inside
each domain of the required level (`group_fit`).

Why apart from `classify`: the node side keeps state of its own (the nodes sorted by name, which
JobSets reserved which, an outsider's view per pod signature) and shares nothing with the domain
side but the snapshot and the plan; `classify.Classifier` holds one `NodeClassifier` and is its
only caller, so this module is not part of the package's public surface. What one node offers one
pod (rule, health, room) is `nodes`.
"""

from __future__ import annotations

from collections.abc import Hashable
from decimal import Decimal

from placer.model.resources import PODS, add_resources, subtract_resources
from placer.model.topology import DomainPath
from placer.solver.context import JobClass, PlacementContext
from placer.solver.greedy.group_room import NodeRoom, group_room
from placer.solver.reasons.bookings import Bookings
from placer.solver.reasons.data import GroupFit, Reason
from placer.solver.reasons.nodes import (
    capacity_after_planned,
    health_kind,
    limiting,
    node_rule,
    rule_kind,
)
from placer.solver.reasons.occupancy import Occupancy
from placer.solver.reasons.tally import Tallies, Verdict, View

__all__ = ["NodeClassifier"]

_NOBODY: frozenset[str] = frozenset()


class NodeClassifier:
    """Classifies the nodes for shared replicated jobs beside one plan (`occupancy`)."""

    def __init__(self, ctx: PlacementContext, occupancy: Occupancy) -> None:
        self.ctx = ctx
        self.occupancy = occupancy
        self._views: dict[str, View] = {}
        self._node_states: list[Hashable] | None = None
        """pod signature -> the outsider's view of every node, sorted by name."""
        self.names = sorted(ctx.nodes)
        self._index = {n: i for i, n in enumerate(self.names)}
        self.reserved_in: dict[str, list[int]] = {}
        """JobSet -> nodes (indices) reserved for its exclusive child Jobs."""
        for n, owners in self.occupancy.reserved.items():
            i = self._index.get(n)
            if i is not None:
                for o in owners:
                    self.reserved_in.setdefault(o, []).append(i)
        self.bookings = Bookings(
            (i, tuple(sorted({r.jobset for r in rs})), max(r.start_s for r in rs))
            for i, name in enumerate(self.names)
            if (rs := ctx.node_reservations(name))
        )
        """The nodes of domains reserved for a later start."""

    def view(self, jc: JobClass, signature: str) -> View:
        """The outsider's view of every node for `jc`'s pod shape (its `signature`), counted in
        one pass."""
        found = self._views.get(signature)
        if found is None:
            facts, states = self.ctx.class_facts(jc), self._states()
            judged: dict[tuple[Hashable, Hashable], tuple[Verdict, int]] = {}
            verdicts: list[Verdict] = []
            room: list[int] = []
            tallies = Tallies()
            for i, name in enumerate(self.names):
                key = (facts.profile(name), states[i])
                got = judged.get(key)
                if got is None:
                    v = self.verdict(jc, i, None)
                    got = judged[key] = (v, self.room(jc, i) if v is None else 0)
                verdicts.append(got[0])
                room.append(got[1])
                tallies.add(got[0])
            found = self._views[signature] = View(verdicts, tallies, room)
        return found

    def _states(self) -> list[Hashable]:
        """Per node, what the plan and the reservations make of it: nodes of one node class
        (`ShapeFacts.profile`: the same rules, health and room for every shape) in one state
        get one verdict, judged once per view. A node with planned pods is a state of its own.
        Why: judging 10,000 nodes one by one took about 0.15 s per pod shape (RESULTS-reasons,
        round 38)."""
        if self._node_states is None:
            reserved, planned = self.occupancy.reserved, self.occupancy.pods
            self._node_states = [
                name
                if planned.get(name)
                else (reserved.get(name, _NOBODY), self.ctx.node_reserved_against(name, None))
                for name in self.names
            ]
        return self._node_states

    def verdict(self, jc: JobClass, i: int, me: str | None) -> Verdict:
        """Node `i` for `jc`'s pod, as JobSet `me` (None: an outsider) sees it; `me`, when
        given, is `jc`'s JobSet (whose expected run decides which reservations close the node)."""
        name = self.names[i]
        node = self.ctx.nodes[name]
        pod = jc.rjob.pod
        rule = node_rule(self.ctx, node, pod, self.ctx.class_facts(jc))
        if rule:
            return Reason(rule_kind(rule), rule=rule), ()
        health = health_kind(node)
        if health is not None:
            return Reason(health), ()
        reserved = self.occupancy.reserved.get(name, _NOBODY)
        # a JobSet whose exclusive child Jobs the plan puts here takes the node now ("reserved"
        # below), its reservation from now only held them there (`timeaware._keep_start_now`)
        against = tuple(
            k
            for k in self.ctx.node_reserved_against(name, jc.jobset if me is not None else None)
            if k not in reserved
        )
        if against:
            return Reason("reserved-later", holders=against), against
        others = reserved - {me} if me is not None else reserved
        if others:
            return Reason("reserved"), others
        if self.room(jc, i) == 0:
            free = node.free
            planned = self.occupancy.requests_on(name)
            if planned:
                free = subtract_resources(free, planned)
            return Reason("no-room", rule=limiting(free, set(node.used_host_ports), pod)), ()
        return None

    def room(self, jc: JobClass, i: int) -> int:
        name = self.names[i]
        return capacity_after_planned(
            self.ctx.nodes[name], jc.rjob.pod, self.occupancy.requests_on(name)
        )

    def group_fit(self, workers: JobClass, leader: JobClass) -> GroupFit | None:
        """None when some domain of the group's required level (any node, for a preferred one)
        takes the leader and every worker pod beside it; else how close the best one comes.

        A domain's room beside the leader is Kueue's (`group_room`), counted over what the
        plan leaves on its nodes."""
        me = workers.jobset.key
        level = workers.rjob.required_topology
        enclosing: list[DomainPath | None] = (
            self.enclosing(level) if level else [()] * len(self.names)
        )
        extra = {**leader.rjob.pod.requests, PODS: Decimal(1)}
        parts: dict[DomainPath, list[NodeRoom]] = {}
        for i, name in enumerate(self.names):
            path = enclosing[i]
            if path is None:
                continue
            w = self.room(workers, i) if self.verdict(workers, i, me) is None else 0
            beside: int | None = None
            if self.verdict(leader, i, me) is None and self.room(leader, i):
                planned = self.occupancy.requests_on(name)
                with_leader = add_resources(planned, extra) if planned else extra
                beside = capacity_after_planned(self.ctx.nodes[name], workers.rjob.pod, with_leader)
            parts.setdefault(path, []).append((w, beside))
        most = max((group_room(p) for p in parts.values()), default=0)
        if most >= workers.rjob.pod_count:
            return None
        group = workers.rjob.podset_group or ""
        return GroupFit(group=group, leader=leader.rjob.name, level=level, most=most)

    def enclosing(self, level: str) -> list[DomainPath | None]:
        """Per node (sorted by name), the domain of `level` it is in (None: none)."""
        topology, nodes = self.ctx.topology, self.ctx.nodes
        return [topology.enclosing(nodes[n], level) for n in self.names]
