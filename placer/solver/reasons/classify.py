"""The one classifier: every domain (or node) a replicated job could use, by the first rule that
rules it out, beside the rest of a plan.

The rule order (`data.KINDS`): held by a running JobSet; missing a declared topology level's
label (Kueue TAS leaves such nodes out); not matching the pod's nodeSelector, node affinity or
taints (no node of the domain does: the most common rule is named); too small
for one child Job (with why: hosts NotReady or cordoned, a resource or host port in use, too few
hosts); reserved for the later start of another JobSet, which this one would not end before
(time-aware planning: the rule the planners apply, `PlacementContext.domain_open_to`); taken in
this plan by higher-, same- or lower-priority JobSets (named); taken by its own
child Jobs. A replicated job without an exclusive key is counted per node: a missing topology
label, nodeSelector, node affinity, taint, NotReady, cordoned, reserved for exclusive child Jobs
of other JobSets, no room for one pod beside the plan's pods. The workers of a Kueue podset group
whose members each fit alone are also judged beside their leader: no domain of the required level
(no node, for a preferred one) taking the leader and every worker pod is their reason. Nodes are
judged by the classifier's node half (`classify_nodes.NodeClassifier`, which it holds); this
module judges domains and turns both sides' verdicts into diagnoses.

The planners (for each JobSet they leave out), `placer explain` and `placer capacity` all call
`Classifier`, so they report the same counts. One classifier serves one plan. A plan leaves
hundreds of JobSets out on a large fleet, and most of them see the cluster the same way: so each
pod shape's view is counted once, in one pass over the domains of its key (or over the nodes), as a
JobSet that holds nothing, has no pods in the plan and would run past every reservation sees it
(`View`); a JobSet then recounts only the domains (nodes) it holds, has planned pods in, has
reserved, or would end in time to use though reserved, and keeps the changes (JobSets that see
the same changes share the counts).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import replace

from placer.model.topology import DomainPath
from placer.model.workload import JobSetRequest
from placer.solver.context import JobClass, PlacementContext
from placer.solver.reasons.classify_nodes import NodeClassifier
from placer.solver.reasons.data import Reason, ReasonTally, RjobDiagnosis
from placer.solver.reasons.keys import KeyIndex
from placer.solver.reasons.occupancy import Occupancy
from placer.solver.reasons.otherwise import NodesOtherwise
from placer.solver.reasons.static import judge_domain
from placer.solver.reasons.tally import Tallies, Verdict, View, short_inside_one
from placer.solver.time.release import expected_duration_s

__all__ = ["Classifier", "diagnose"]


class Classifier:
    """Classifies domains and nodes for the JobSets left out of one plan (`occupancy`)."""

    def __init__(self, ctx: PlacementContext, occupancy: Occupancy | None = None) -> None:
        self.ctx = ctx
        self.occupancy = occupancy or Occupancy()
        self._priority = {js.key: js.reported_priority for js in ctx.jobsets}
        self._signatures: dict[int, str] = {}
        self._static: dict[tuple[str, int, str], dict[int, Reason | None]] = {}
        """(pod signature, pods per child Job, key) -> per domain of the key: the reason the
        cluster alone rules it out (held aside), None when big enough."""
        self._by_kind: dict[tuple[str, int, str], dict[tuple[object, ...], Reason | None]] = {}
        """The same per kind of domain: nodes that offer the shape the same (`ShapeFacts`
        profile) with the same allocatable resources, in the same order. A fleet has many
        domains of few kinds; each kind is judged once."""
        self._allocatables: dict[tuple[object, ...], int] = {}
        self._allocatable_ids: dict[str, int] = {}
        self._keys: dict[str, KeyIndex] = {}
        self._views: dict[tuple[str, int, str, int], View] = {}
        """(pod signature, pods per child Job, key, viewer priority) -> the outsider's view."""
        self._nodes = NodeClassifier(ctx, self.occupancy)
        """The node side: shared replicated jobs, and podset groups beside their leader."""
        self._counted: dict[
            tuple[str, str | None, float],
            tuple[tuple[ReasonTally, ...], int, int, Counter[DomainPath] | None],
        ] = {}
        """(pod signature, required level, expected run) -> the node counts of a JobSet that
        holds nothing (`_shared_counts`)."""
        self._alike: dict[tuple[str, str | None, float], NodesOtherwise] = {}
        """(pod signature, required level, expected run) -> what a JobSet of them holding
        nothing sees otherwise than the outsider (`_alike_changes`)."""
        self._planned: frozenset[str] | None = None
        self._reservers: frozenset[str] | None = None

    # -- per JobSet --

    def diagnose(self, jobset: JobSetRequest) -> tuple[RjobDiagnosis, ...]:
        """One diagnosis per replicated job of `jobset` (with replicas), beside the plan; the
        workers of a podset group whose members each fit alone are judged beside their leader."""
        found = []
        for jc in self.ctx.classes_of(jobset):
            d = self._exclusive(jc) if jc.exclusive_key else self._shared(jc)
            found.append((jc, d))
        by_class = {jc.index: d for jc, d in found}
        result = []
        for jc, d in found:
            group = self.ctx.podset_group(jc)
            alone = group is not None and d.fits and by_class[group[1].index].fits
            if group is not None and alone and jc.index == group[0].index:
                fit = self._nodes.group_fit(*group)
                if fit is not None:
                    d = replace(d, group=fit, fits=False)
            result.append(d)
        return tuple(result)

    def verdicts(self, jc: JobClass) -> list[tuple[Reason, tuple[str, ...]] | None]:
        """Each domain of `jc`'s key (each node, sorted by name, without one) as `jc`'s JobSet
        sees it, judged one by one: the reason and the JobSets it names, None when available.
        What `diagnose` counts (through the shape's shared view); for callers that need to know
        which domain is which."""
        if jc.exclusive_key:
            index = self._key(jc.exclusive_key)
            found = [
                self._domain_verdict(jc, index, i, jc.jobset) for i in range(len(index.domains))
            ]
        else:
            found = [
                self._nodes.verdict(jc, i, jc.jobset.key) for i in range(len(self._nodes.names))
            ]
        return [None if v is None else (v[0], tuple(sorted(v[1]))) for v in found]

    def static_reason(self, jc: JobClass, index: int) -> Reason | None:
        """Why the cluster alone (no plan) rules out domain `index` of `jc`'s key for one child Job
        of `jc`; None when the domain can take one (what `PlacementContext.fits` says)."""
        key = jc.exclusive_key
        assert key is not None
        held = tuple(o for o in self._key(key).held[index] if o != jc.jobset.key)
        return Reason("held", holders=held) if held else self._static_at(jc, index)

    # -- exclusive replicated jobs: domains --

    def _exclusive(self, jc: JobClass) -> RjobDiagnosis:
        key = jc.exclusive_key
        assert key is not None
        me = jc.jobset
        index = self._key(key)
        view = self._view(jc)
        touching = sorted(
            set(index.held_in.get(me.key, ()))
            | set(index.planned_in.get(me.key, ()))
            | set(index.bookings.otherwise(me, self.ctx.options))
        )
        level = jc.rjob.required_topology
        # only the domains it sees otherwise than the outsider change the counts; JobSets of a
        # shape that see the same changes (the same reservations open to them, say) share them
        changes = tuple(
            (i, own)
            for i in touching
            if (own := self._domain_verdict(jc, index, i, me)) != view.verdicts[i]
        )
        found = view.adjusted.get((level, changes))
        if found is None:
            found = view.adjusted[(level, changes)] = self._adjusted(view, index, level, changes)
        listed, available, per_level = found
        replicas = jc.rjob.replicas
        locality = short_inside_one(level, per_level, replicas, available)
        return RjobDiagnosis(
            name=jc.rjob.name,
            exclusive_key=key,
            replicas=replicas,
            pods_per_job=jc.rjob.pods_per_job,
            pod=jc.rjob.pod,
            unit="domain",
            needed=replicas,
            available=available,
            total=len(view.verdicts),
            tallies=listed,
            locality=locality,
            fits=available >= replicas and locality is None,
        )

    def _adjusted(
        self,
        view: View,
        index: KeyIndex,
        level: str | None,
        changes: tuple[tuple[int, Verdict], ...],
    ) -> tuple[tuple[ReasonTally, ...], int, Counter[DomainPath] | None]:
        """The outsider's counts with `changes` (domain, verdict) applied: the reasons listed,
        the domains available, and with a required `level` the room inside each of its
        domains."""
        available = sum(view.room)
        per_level = self._by_level(view, level, index.enclosing(self.ctx, level)) if level else None
        if view.listed is None:
            view.listed = view.tallies.sorted()
        if not changes:
            return view.listed, available, per_level
        changed = Tallies()
        per_level = Counter(per_level) if per_level is not None else None
        enclosing = index.enclosing(self.ctx, level) if level else []
        for i, own in changes:
            changed.add(view.verdicts[i], -1)
            changed.add(own, +1)
            delta = (own is None) - view.room[i]
            available += delta
            path = enclosing[i] if per_level is not None else None
            if per_level is not None and delta and path is not None:
                per_level[path] += delta
        return view.tallies.sorted_with(view.listed, changed), available, per_level

    def _view(self, jc: JobClass) -> View:
        """The outsider's view of `jc`'s key for its shape and size, counted in one pass."""
        key = jc.exclusive_key
        assert key is not None
        shape = (self._signature(jc), jc.rjob.pods_per_job, key, jc.jobset.reported_priority)
        found = self._views.get(shape)
        if found is None:
            index = self._key(key)
            verdicts = [self._domain_verdict(jc, index, i, None) for i in range(len(index.domains))]
            held = index.held_reasons
            tallies = index.held_tallies.extended(
                v for i, v in enumerate(verdicts) if i not in held
            )
            room = [1 if v is None else 0 for v in verdicts]
            listed = tallies.sorted(first=index.held_listed)
            found = self._views[shape] = View(verdicts, tallies, room, listed=listed)
        return found

    def _domain_verdict(
        self, jc: JobClass, index: KeyIndex, i: int, viewer: JobSetRequest | None
    ) -> Verdict:
        """Domain `i` as `viewer` sees it (None: a JobSet holding nothing, with no planned pods,
        at `jc`'s priority): its own running pods hold nothing, its own planned pods are "own"."""
        me = viewer.key if viewer is not None else None
        held = index.held[i]
        if held:
            if me not in held:
                return index.held_reasons[i], held
            held = tuple(o for o in held if o != me)
            if held:
                return Reason("held", holders=held), held
        fixed = self._static_at(jc, i)
        if fixed is not None:
            return fixed, ()
        if i in index.booked:
            against = index.booked[i]
            if viewer is not None:
                closing = self.ctx.reserved_against(index.domains[i], viewer)
                against = tuple(k for k in closing if k in against)
            if against:
                return Reason("reserved-later", holders=against), against
        planned = index.planned[i]
        others = planned - {me} if me is not None else planned
        if not others:
            return (Reason("own"), ()) if planned else None
        priority = jc.jobset.reported_priority
        if others is planned:
            # an outsider: the relations follow from the priorities present, however many takers
            theirs = index.planned_priorities[i]
        else:
            theirs = frozenset(self._priority.get(o) for o in others)
        relations = tuple(sorted({_relation(priority, p) for p in theirs}))
        return Reason("taken", relations=relations), others

    def _signature(self, jc: JobClass) -> str:
        found = self._signatures.get(jc.index)
        if found is None:
            found = self._signatures[jc.index] = jc.rjob.pod.signature()
        return found

    def _key(self, key: str) -> KeyIndex:
        found = self._keys.get(key)
        if found is None:
            found = self._keys[key] = KeyIndex(self.ctx, key, self.occupancy, self._priority)
        return found

    def _static_at(self, jc: JobClass, i: int) -> Reason | None:
        """Domain `i`'s verdict for one child Job of `jc`, judged once per shape and size (held
        domains are only judged when their holder asks)."""
        key = jc.exclusive_key
        assert key is not None
        shape = (self._signature(jc), jc.rjob.pods_per_job, key)
        judged = self._static.get(shape)
        if judged is None:
            judged = self._static[shape] = {}
            self._by_kind[shape] = {}
        if i not in judged:
            domain = self._key(key).domains[i]
            facts = self.ctx.class_facts(jc)
            kind = tuple((facts.profile(n), self._allocatable_id(n)) for n in domain.nodes)
            by_kind = self._by_kind[shape]
            if kind not in by_kind:
                by_kind[kind] = judge_domain(self.ctx, jc, domain)
            judged[i] = by_kind[kind]
        return judged[i]

    def _allocatable_id(self, name: str) -> int:
        """Equal for nodes with equal allocatable resources (what "in use" is measured against)."""
        found = self._allocatable_ids.get(name)
        if found is None:
            allocatable = tuple(sorted(self.ctx.nodes[name].allocatable.items()))
            found = self._allocatables.setdefault(allocatable, len(self._allocatables))
            self._allocatable_ids[name] = found
        return found

    @staticmethod
    def _by_level(
        view: View, level: str, enclosing: list[DomainPath | None]
    ) -> Counter[DomainPath]:
        """The outsider's room per domain of `level`."""
        found = view.by_level.get(level)
        if found is None:
            found = Counter()
            for i, r in enumerate(view.room):
                path = enclosing[i]
                if r and path is not None:
                    found[path] += r
            view.by_level[level] = found
        return found

    # -- shared replicated jobs: nodes --

    def _shared(self, jc: JobClass) -> RjobDiagnosis:
        view = self._nodes.view(jc, self._signature(jc))
        level = jc.rjob.required_topology
        listed, fits, with_room, per_level = self._shared_counts(jc, view, level)
        need = jc.rjob.replicas * jc.rjob.pods_per_job
        locality = short_inside_one(level, per_level, need, fits)
        return RjobDiagnosis(
            name=jc.rjob.name,
            exclusive_key=None,
            replicas=jc.rjob.replicas,
            pods_per_job=jc.rjob.pods_per_job,
            pod=jc.rjob.pod,
            unit="pod",
            needed=need,
            available=fits,
            total=len(view.verdicts),
            tallies=listed,
            locality=locality,
            fits=fits >= need and locality is None,
            nodes_with_room=with_room,
        )

    def _shared_counts(
        self, jc: JobClass, view: View, level: str | None
    ) -> tuple[tuple[ReasonTally, ...], int, int, Counter[DomainPath] | None]:
        """`jc`'s JobSet's count of the nodes: its reasons listed, pods that fit, nodes with
        room, and with a required `level` the room inside each of its domains.

        A node the outsider finds ruled out by a rule, NotReady, cordoned or full, or open, the
        JobSet finds so too: only reservations (its own, or later starts it would end in time
        for) can make it see a node otherwise, and only those are judged again (at 10,000 nodes
        with every waiting JobSet reserved, judging every node again took 80 ms per JobSet:
        RESULTS-reasons). JobSets of one pod shape, required level and expected run with no
        pods in the plan see those nodes alike but for the ones they hold reservations of: the
        changes of one holding nothing are judged once per shape, level and run, and each
        JobSet holding reservations judges again only its own nodes (`_alike`). The counts of
        a JobSet holding nothing are kept whole: 100 such JobSets each walked the 6,300 nodes
        reserved for others (RESULTS-controller, rounds 51 and 52)."""
        me = jc.jobset
        plain = self._holds_nothing(me.key)
        alike = None
        if not self._in_plan(me.key):
            alike = (self._signature(jc), level, expected_duration_s(me, self.ctx.options.time))
            if plain and (found := self._counted.get(alike)) is not None:
                return found
        enclosing = self._nodes.enclosing(level) if level else []
        if alike is None:
            otherwise = self._judged_again(jc, view, enclosing, self._touching(jc, view))
        else:
            otherwise = self._alike_changes(jc, view, enclosing, alike)
            own = self._seen_otherwise(view, self._nodes.bookings.of(me.key))
            if own:
                otherwise = otherwise.copy()
                for i, (verdict, room) in zip(own, self._nodes.judged_as(jc, own), strict=True):
                    otherwise.set(i, verdict, room)
        if view.listed is None:
            view.listed = view.tallies.sorted()
        listed = view.listed
        if otherwise.pairs:
            listed = view.tallies.sorted_with(listed, otherwise.changed())
        per_level = None
        if level:
            per_level = otherwise.room_per_level(self._by_level(view, level, enclosing))
        fits = sum(view.room) + otherwise.fits
        with_room = sum(1 for r in view.room if r) + otherwise.with_room
        counted = (listed, fits, with_room, per_level)
        if plain and alike is not None:
            self._counted[alike] = counted
        return counted

    def _alike_changes(
        self,
        jc: JobClass,
        view: View,
        enclosing: list[DomainPath | None],
        alike: tuple[str, str | None, float],
    ) -> NodesOtherwise:
        """What a JobSet of `jc`'s pod shape, level and run that holds nothing sees otherwise
        than the outsider: judged once per (shape, level, run), as a stand-in JobSet no
        reservation names (`jc`'s JobSet may hold some)."""
        found = self._alike.get(alike)
        if found is None:
            stand_in = replace(jc, jobset=jc.jobset.model_copy(update={"name": _NOBODY_NAME}))
            nodes = self._seen_otherwise(view, self._nodes.bookings.ending_by(alike[2]))
            found = self._alike[alike] = self._judged_again(stand_in, view, enclosing, nodes)
        return found

    def _touching(self, jc: JobClass, view: View) -> list[int]:
        """The nodes a JobSet with pods in the plan may see otherwise than the outsider."""
        me = jc.jobset
        return self._seen_otherwise(
            view,
            [
                *self._nodes.reserved_in.get(me.key, ()),
                *self._nodes.bookings.otherwise(me, self.ctx.options),
            ],
        )

    @staticmethod
    def _seen_otherwise(view: View, nodes: Iterable[int]) -> list[int]:
        """Of `nodes`, those whose outsider's verdict a reservation gave (`_SEEN_OTHERWISE`),
        sorted: the rest every JobSet sees as the outsider does."""
        return sorted(
            i
            for i in set(nodes)
            if (v := view.verdicts[i]) is not None and v[0].kind in _SEEN_OTHERWISE
        )

    def _judged_again(
        self, jc: JobClass, view: View, enclosing: list[DomainPath | None], nodes: list[int]
    ) -> NodesOtherwise:
        """`nodes` judged as `jc`'s JobSet sees them, as changes to the outsider's `view`."""
        found = NodesOtherwise(view, enclosing)
        for i, (verdict, room) in zip(nodes, self._nodes.judged_as(jc, nodes), strict=True):
            found.set(i, verdict, room)
        return found

    def _holds_nothing(self, key: str) -> bool:
        """JobSet `key` holds no reservation of domains or nodes and has no pods in the plan:
        it sees every node as any JobSet of its pods and run that holds nothing does."""
        return not self._in_plan(key) and key not in self._reserving()

    def _in_plan(self, key: str) -> bool:
        """JobSet `key` has pods, or domains reserved for its pods, in the plan."""
        if self._planned is None:
            occupancy = self.occupancy
            self._planned = frozenset(
                {
                    *(k for owners in occupancy.reserved.values() for k in owners),
                    *(k for owners in occupancy.shared.values() for k in owners),
                    *self._nodes.reserved_in,
                }
            )
        return key in self._planned

    def _reserving(self) -> frozenset[str]:
        """The JobSets holding a reservation of the snapshot."""
        if self._reservers is None:
            self._reservers = frozenset(r.jobset for r in self.ctx.snapshot.reservations)
        return self._reservers


_NOBODY_NAME = "\x00holds-nothing"
"""The name of the stand-in JobSet `_alike_changes` judges as: no API object has it."""

_SEEN_OTHERWISE = frozenset({"reserved-later", "reserved"})
"""The outsider's verdicts on a node that the JobSet may not share: the rest hold for everyone."""


def _relation(priority: int, theirs: int | None) -> str:
    """How a taker's priority compares (a JobSet not in the queue counts as higher)."""
    if theirs is None or theirs > priority:
        return "higher-priority"
    return "lower-priority" if theirs < priority else "same-priority"


def diagnose(
    ctx: PlacementContext, jobset: JobSetRequest, occupancy: Occupancy | None = None
) -> tuple[RjobDiagnosis, ...]:
    """`Classifier(ctx, occupancy).diagnose(jobset)`: for one JobSet; a caller explaining many
    JobSets of one plan keeps one `Classifier`."""
    return Classifier(ctx, occupancy).diagnose(jobset)
