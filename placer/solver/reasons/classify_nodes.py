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

from collections.abc import Hashable, Iterable
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
from placer.solver.shape_index import NodeClasses

__all__ = ["NodeClassifier"]

_NOBODY: frozenset[str] = frozenset()


class NodeClassifier:
    """Classifies the nodes for shared replicated jobs beside one plan (`occupancy`)."""

    def __init__(self, ctx: PlacementContext, occupancy: Occupancy) -> None:
        self.ctx = ctx
        self.occupancy = occupancy
        self._views: dict[str, View] = {}
        """pod signature -> the outsider's view of every node, sorted by name."""
        self._node_states: list[int] | None = None
        self._groups: list[int] | None = None
        self._plan_state: list[Hashable] | None = None
        self._cells_of: tuple[NodeClasses, list[int], list[int], list[int]] | None = None
        """`_cells` of the node classes it was last asked for (one object per context)."""
        self.names = sorted(ctx.nodes)
        self._index = {n: i for i, n in enumerate(self.names)}
        self.reserved_in: dict[str, list[int]] = {}
        """JobSet -> nodes (indices) reserved for its exclusive child Jobs."""
        for n, owners in self.occupancy.reserved.items():
            i = self._index.get(n)
            if i is not None:
                for o in owners:
                    self.reserved_in.setdefault(o, []).append(i)
        planned_here = occupancy.owners
        self.bookings = Bookings(
            (i, tuple(sorted({r.jobset for r in rs})), max(r.start_s for r in rs))
            for i, name in enumerate(self.names)
            if (
                rs := [r for r in ctx.node_reservations(name) if r.jobset not in planned_here(name)]
            )
        )
        """The nodes of domains (or nodes) reserved for a later start, a JobSet's with planned
        pods there left out (as `verdict` leaves it out)."""

    def view(self, jc: JobClass, signature: str) -> View:
        """The outsider's view of every node for `jc`'s pod shape (its `signature`), counted in
        one pass: one verdict per cell (`_cells`), copied to its nodes."""
        found = self._views.get(signature)
        if found is None:
            cell_of, first, sizes = self._cells(self.ctx.class_facts(jc).node_classes)
            judged: list[tuple[Verdict, int]] = []
            tallies = Tallies()
            for i, size in zip(first, sizes, strict=True):
                v = self.verdict(jc, i, None)
                judged.append((v, self.room(jc, i) if v is None else 0))
                tallies.add(v, size)
            verdicts = [judged[c][0] for c in cell_of]
            room = [judged[c][1] for c in cell_of]
            found = self._views[signature] = View(verdicts, tallies, room)
        return found

    def _cells(self, classes: NodeClasses) -> tuple[list[int], list[int], list[int]]:
        """Per node its cell, and per cell its first node and how many nodes it has.

        A cell is a node class (`ShapeFacts.profile`: the same rules, health and room for every
        shape of the index) in one state of the plan and the reservations (`_states`): its nodes
        get one verdict for any shape, judged once per view. Why: judging 10,000 nodes one by
        one took about 0.15 s per pod shape (RESULTS-reasons, round 38), and grouping them
        again for each shape still 3 ms (round 40)."""
        if self._cells_of is None or self._cells_of[0] is not classes:
            states = self._states()
            numbers: dict[tuple[int, int], int] = {}
            cell_of: list[int] = []
            first: list[int] = []
            sizes: list[int] = []
            for i, name in enumerate(self.names):
                cell = numbers.setdefault((classes.class_of[name], states[i]), len(numbers))
                if cell == len(first):
                    first.append(i)
                    sizes.append(0)
                sizes[cell] += 1
                cell_of.append(cell)
            self._cells_of = (classes, cell_of, first, sizes)
        return self._cells_of[1], self._cells_of[2], self._cells_of[3]

    def _states(self) -> list[int]:
        """Per node, a number for what the plan and the reservations make of it (a node with
        planned pods is a state of its own): the half of a cell (`_cells`) that is not the
        node's class."""
        if self._node_states is None:
            reserved, planned = self.occupancy.reserved, self.occupancy.pods
            numbers: dict[Hashable, int] = {}
            self._node_states = [
                numbers.setdefault(
                    name
                    if planned.get(name)
                    else (reserved.get(name, _NOBODY), self.ctx.node_reserved_against(name, None)),
                    len(numbers),
                )
                for name in self.names
            ]
        return self._node_states

    def _plan_states(self) -> list[Hashable]:
        """Per node, what the plan makes of it: the node itself when it has planned pods, else
        the JobSets whose exclusive child Jobs' domains hold it."""
        if self._plan_state is None:
            reserved, planned = self.occupancy.reserved, self.occupancy.pods
            self._plan_state = [
                name if planned.get(name) else reserved.get(name, _NOBODY) for name in self.names
            ]
        return self._plan_state

    def _reservation_groups(self) -> list[int]:
        """Per node, a number for the reservations holding it (nodes of one reserved domain
        share theirs): which of them close a node to a JobSet is then asked once per number,
        not once per node (a fleet with 400 JobSets reserved asked it 1.2 million times for
        146 JobSets without an exclusive key: RESULTS-controller, round 51)."""
        if self._groups is None:
            numbers: dict[tuple[int, ...], int] = {}
            self._groups = [
                numbers.setdefault(
                    tuple(id(r) for r in self.ctx.node_reservations(name)), len(numbers)
                )
                for name in self.names
            ]
        return self._groups

    def judged_as(self, jc: JobClass, indices: Iterable[int]) -> list[tuple[Verdict, int]]:
        """`verdict` and `room` of each node of `indices` as `jc`'s JobSet sees it.

        Nodes of one node class in one state of the plan (`_plan_states`) that the same
        reservations close to the JobSet, held alike, get one verdict, judged once, as in `view`.
        Why: the nodes a JobSet sees otherwise than an outsider are those of reserved domains,
        hundreds per JobSet when every waiting JobSet holds a reservation; judging them one by
        one was a third of the reasons' time at 10,000 nodes (benchmarks/RESULTS-controller.md,
        round 40). Who else the reservations name does not change this JobSet's verdict, so
        the outsider's half of `_states` is left out of the key: with 1,578 domains reserved
        each for another JobSet, it made 725 states of 6,300 such nodes (round 51)."""
        facts, states, me = self.ctx.class_facts(jc), self._plan_states(), jc.jobset.key
        groups = self._reservation_groups()
        judged: dict[Hashable, tuple[Verdict, int]] = {}
        against: dict[int, tuple[tuple[str, ...], frozenset[str]]] = {}
        found: list[tuple[Verdict, int]] = []
        for i in indices:
            name = self.names[i]
            closing = against.get(groups[i])
            if closing is None:
                names = self.ctx.node_reserved_against(name, jc.jobset)
                # held or reserved-later: which of the closing reservations are held (`verdict`)
                reservations = self.ctx.node_reservations(name) if names else ()
                held = frozenset(r.jobset for r in reservations if r.held)
                closing = against[groups[i]] = (names, held)
            key = (facts.profile(name), states[i], closing)
            got = judged.get(key)
            if got is None:
                v = self.verdict(jc, i, me)
                got = judged[key] = (v, self.room(jc, i) if v is None else 0)
            found.append(got)
        return found

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
        # a JobSet the plan puts here takes the node now ("reserved" or "no-room" below), its
        # reservation from now only held it there (`timeaware._keep_start_now`, `_pinned`)
        here = self.occupancy.owners(name)
        against = tuple(
            k
            for k in self.ctx.node_reserved_against(name, jc.jobset if me is not None else None)
            if k not in here
        )
        if against:
            # a node a recorded placement holds now (the controller's ledger) is held, not
            # reserved for a start to come
            held = {r.jobset for r in self.ctx.node_reservations(name) if r.held}
            if held.issuperset(against):
                return Reason("held", holders=against), against
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
