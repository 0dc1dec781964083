"""Preemption in the controller (`--preemption lower-priority`): who may be evicted, and how far
each eviction has come. Pure functions; reconcile.py calls them, writeplan.py turns the steps into
writes, planning.py lets the solver evict the victims found here.

An eviction goes through these steps, each re-derived every cycle from the ledger and the cluster
alone, so a controller restarted between any two finishes the job without leaking or doubling a
domain:

1. commit: one ledger change releases each victim's placement, records an `eviction` entry
   (victim, uid, beneficiaries, time, cost) and places the beneficiaries
   (ledgerplan.ledger_change). From here the victim holds nothing and is not planned; its
   beneficiaries hold its domains.
2. suspend: one merge patch on the victim sets `spec.suspend: true`, stamps the eviction's time in
   `placer.dev/preempted-at` and clears its placement record; events `Preempted` on it and
   `Preempting` on each beneficiary. The stamp is how a later cycle knows this step was done.
3. drain: JobSet suspends the child Jobs, the Job controller deletes their pods. Each beneficiary's
   record is written but its pods stay gated (its nodes unlabeled) while a victim pod, Terminating
   included, is bound to one of its nodes (`Evictions.waiting`).
4. resume: once no pod of the victim is left, it is unsuspended: JobSet resumes its child Jobs,
   whose new pods come back with the placement gate (node-labels binding: selecting labels no
   node carries any more), and the victim is planned again like any pending JobSet (event
   `Requeued`).
5. done: the victim runs again (or is gone) and none of its pods is on a beneficiary's nodes: the
   entry is released by the next commit.

An event goes with the write it reports and is sent again in each later step until this process
has sent it, so a restart between the write and its event loses neither (writeplan.py).

A beneficiary deleted mid-way changes nothing for the victim: it was evicted, it goes back to the
queue. Who may be a victim (`eligibility`): a managed JobSet whose record is in force and whose
pods run, not being evicted already, not managed by Kueue (label `kueue.x-k8s.io/queue-name`:
Kueue preempts by quota and would fight a suspend; such a JobSet never preempts either), not
annotated `placer.dev/preemptible: "false"` nor with an unreadable preemption annotation (a Warning
event, then protected), and preempted fewer than `--max-preemptions-per-day` times in the last 24 h.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from placer.controller.adapter import Obj
from placer.controller.decide.observe.domains import HOLD_PREFIX, DomainIndex, JobsByHolder
from placer.controller.decide.observe.state import ClusterState
from placer.controller.decide.observe.survey import ManagedJobSet, PodEntry, is_finished
from placer.controller.decide.records.ledger import EVICTION, PLACEMENT, LedgerEntry
from placer.controller.decide.review.review import Review
from placer.model.assignment import Assignment
from placer.model.cluster import ClusterSnapshot, JobSetUsage, RunningJobSet
from placer.model.errors import InputError
from placer.model.plan import Plan
from placer.model.preemption import (
    DEFAULT_MAX_PER_DAY,
    PreemptionFacts,
    jobset_preemption_facts,
    recent_preemptions,
    stamped,
)

__all__ = [
    "DEFAULT_MAX_PER_DAY",
    "EVICTION_EVENTS",
    "KUEUE_QUEUE_LABEL",
    "PREEMPTION_WARNING",
    "Eligibility",
    "EvictionStep",
    "Evictions",
    "Victim",
    "chosen_evictions",
    "eligibility",
    "evictable_snapshot",
    "eviction_steps",
    "placements",
]

KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PREEMPTION_WARNING = "InvalidPreemptionAnnotation"
EVICTION_EVENTS = ("Preempted", "Preempting", "Requeued")
"""The events of an eviction: on the victim when suspended, on each beneficiary, on the victim
when resumed."""

Phase = Literal["suspend", "drain", "resume", "done"]


@dataclass(frozen=True)
class Victim:
    """A running JobSet the planner may evict this round."""

    uid: str
    facts: PreemptionFacts


@dataclass(frozen=True)
class Eligibility:
    """Who may be evicted and who may not preempt, this round."""

    victims: Mapping[str, Victim] = field(default_factory=dict)
    no_preempt: frozenset[str] = frozenset()
    """Managed JobSets Kueue manages (label `kueue.x-k8s.io/queue-name`): they never preempt
    and are never victims (logged once each)."""
    warnings: Mapping[str, str] = field(default_factory=dict)
    """JobSet key -> why its preemption annotations are unreadable (a Warning event)."""


def _annotations(obj: Obj) -> Mapping[str, object]:
    return (obj.get("metadata") or {}).get("annotations") or {}


def _kueue_managed(obj: Obj) -> bool:
    return KUEUE_QUEUE_LABEL in ((obj.get("metadata") or {}).get("labels") or {})


def eligibility(
    managed: Sequence[ManagedJobSet], rev: Review, *, now_s: float, max_per_day: int
) -> Eligibility:
    """Who may be evicted this round (see the module docstring)."""
    victims: dict[str, Victim] = {}
    warnings: dict[str, str] = {}
    kueue: set[str] = set()
    for ms in managed:
        if ms.finished:
            continue
        if _kueue_managed(ms.obj):
            kueue.add(ms.key)
            continue
        try:
            facts = jobset_preemption_facts(ms.obj, source="cluster", key=ms.key)
        except InputError as e:
            warnings[ms.key] = f"{e}; this JobSet is never preempted"
            continue
        running = any(p.node and not p.terminal for p in ms.pods)
        if (
            not facts.preemptible
            or ms.key not in rev.in_force
            or ms.suspended
            or ms.evicting
            or not running
            or recent_preemptions(_annotations(ms.obj), now_s) >= max_per_day
        ):
            continue
        victims[ms.key] = Victim(uid=ms.uid, facts=facts)
    return Eligibility(victims=victims, no_preempt=frozenset(kueue), warnings=warnings)


def evictable_snapshot(
    snapshot: ClusterSnapshot,
    index: DomainIndex,
    victims: Mapping[str, Victim],
    records: JobsByHolder,
) -> ClusterSnapshot:
    """The snapshot the solver may evict in: each victim (its record in `records`, not held by
    tokens) is listed on every node of its recorded domains, so evicting it frees them whole, even
    the nodes its pods do not use; every other running JobSet is marked never preemptible (only
    placer's own, running, eligible JobSets may be suspended by placer)."""
    extra: dict[str, set[str]] = {}
    for key in victims:
        for job in (records.get(key) or {}).values():
            for node in index.job_nodes(job):
                extra.setdefault(node, set()).add(key)
    priorities: dict[str, int] = {}
    for n in snapshot.nodes:
        for key, use in n.jobset_usage.items():
            if key in victims and use.priority is not None:
                priorities[key] = max(priorities.get(key, use.priority), use.priority)
    nodes = []
    running = dict(snapshot.running)
    for n in snapshot.nodes:
        keys = extra.get(n.name, set())
        missing = {k for k in keys if k not in n.jobset_usage}
        if keys:
            uses = dict(n.jobset_usage)
            for k in sorted(missing):
                uses[k] = JobSetUsage(priority=priorities.get(k))
            n = n.model_copy(
                update={"jobsets": tuple(sorted({*n.jobsets, *keys})), "jobset_usage": uses}
            )
        nodes.append(n)
        for key in n.jobsets:
            if key in victims or key.startswith(HOLD_PREFIX):
                continue
            base = running.get(key, RunningJobSet())
            running[key] = base.model_copy(
                update={"preemption": PreemptionFacts(preemptible=False)}
            )
    for key, victim in victims.items():
        base = running.get(key, RunningJobSet())
        running[key] = base.model_copy(update={"preemption": victim.facts})
    return snapshot.model_copy(update={"nodes": tuple(nodes), "running": running})


def chosen_evictions(
    plan: Plan, victims: Mapping[str, Victim], placed: Iterable[str]
) -> dict[str, LedgerEntry]:
    """Victim key -> its eviction entry (no time yet: the commit stamps it), for the victims the
    plan evicts that make room for a JobSet given a record (`placed`)."""
    recorded = set(placed)
    result: dict[str, LedgerEntry] = {}
    for p in plan.preempted:
        victim = victims.get(p.key)
        beneficiaries = tuple(sorted(b for b in p.makes_room_for if b in recorded))
        if victim is None or not beneficiaries:
            continue
        result[p.key] = LedgerEntry(
            kind=EVICTION,
            owner=p.key,
            uid=victim.uid,
            record=Assignment(jobset=p.key, jobs={}),
            beneficiaries=beneficiaries,
            note=p.cost_text,
        )
    return result


@dataclass(frozen=True)
class EvictionStep:
    """One eviction in progress, and the step it is at."""

    key: str
    """Its ledger entry key."""
    entry: LedgerEntry
    phase: Phase
    victim: Obj | None
    """The victim JobSet as observed (None: gone, or another incarnation)."""

    @property
    def id(self) -> str:
        """Names this eviction in its events' memory: the victim and the commit's time."""
        return f"{self.entry.owner}@{self.entry.at}"

    @property
    def suspended(self) -> bool:
        """The suspend was written (the victim carries this eviction's stamp)."""
        return (
            self.victim is not None
            and self.entry.at is not None
            and stamped(_annotations(self.victim), self.entry.at)
        )

    @property
    def resumed(self) -> bool:
        """The resume was written (stamped, running again)."""
        return self.suspended and not (self.victim or {}).get("spec", {}).get("suspend")


@dataclass(frozen=True)
class Evictions:
    """Every eviction in progress, as this cycle sees it."""

    steps: tuple[EvictionStep, ...] = ()
    waiting: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Beneficiary -> victims with a pod (Terminating included) still bound to one of its nodes:
    its pods stay gated."""
    lent: Mapping[str, tuple[PodEntry, ...]] = field(default_factory=dict)
    """Beneficiary -> those pods: the room they take counts as its own when its record is judged."""

    @property
    def done(self) -> frozenset[str]:
        """Entry keys to release."""
        return frozenset(s.key for s in self.steps if s.phase == "done")

    @property
    def victims(self) -> frozenset[str]:
        """JobSets being evicted (not planned, not written for, until their entry is released)."""
        return frozenset(s.entry.owner for s in self.steps if s.phase != "done")


def placements(entries: Iterable[LedgerEntry]) -> dict[str, Assignment]:
    """JobSet key -> its placement in these ledger entries."""
    return {e.owner: e.record for e in entries if e.kind == PLACEMENT}


def eviction_steps(
    entries: Mapping[str, LedgerEntry],
    state: ClusterState,
    records: Mapping[str, Assignment],
    index: DomainIndex,
    pods: Mapping[str, Sequence[PodEntry]],
) -> Evictions:
    """Where each eviction in `entries` (those of kind eviction are read) stands. `records`:
    the beneficiaries' placements; `pods`: JobSet key -> its pods (survey.jobset_pods)."""
    steps: list[EvictionStep] = []
    waiting: dict[str, list[str]] = {}
    lent: dict[str, list[PodEntry]] = {}
    for key, entry in sorted(entries.items()):
        if entry.kind != EVICTION:
            continue
        namespace, _, name = entry.owner.partition("/")
        obj = state.jobsets.get((namespace, name))
        uid = str(((obj or {}).get("metadata") or {}).get("uid") or "")
        if obj is not None and entry.uid and uid != entry.uid:
            obj = None
        alive = [
            p
            for p in pods.get(entry.owner, ())
            if not p.terminal
            and (not entry.uid or not p.ref.jobset_uid or p.ref.jobset_uid == entry.uid)
        ]
        blocking = False
        for beneficiary in entry.beneficiaries:
            record = records.get(beneficiary)
            nodes = (
                {n for j in record.jobs.values() for n in index.job_nodes(j)} if record else set()
            )
            on = [p for p in alive if p.node and p.node in nodes]
            if on:
                blocking = True
                waiting.setdefault(beneficiary, []).append(entry.owner)
                lent.setdefault(beneficiary, []).extend(on)
        phase: Phase
        if (
            obj is not None
            and not is_finished(obj)
            and entry.at is not None
            and not stamped(_annotations(obj), entry.at)
        ):
            phase = "suspend"
        elif obj is not None and not is_finished(obj) and (obj.get("spec") or {}).get("suspend"):
            phase = "drain" if alive else "resume"
        else:
            phase = "drain" if blocking else "done"
        steps.append(EvictionStep(key=key, entry=entry, phase=phase, victim=obj))
    return Evictions(
        steps=tuple(steps),
        waiting={b: tuple(sorted(set(v))) for b, v in sorted(waiting.items())},
        lent={b: tuple(v) for b, v in sorted(lent.items())},
    )
