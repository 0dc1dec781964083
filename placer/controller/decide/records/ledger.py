"""The placement ledger: every placement in the cluster, in one object, committed before any write.

Exclusivity is the product's promise, and it must hold whoever runs a controller: several
`--once` runs, controllers with different `--namespace` flags, bindings or solvers, or two leaders
while a lease changes hands. Records on the JobSets alone cannot promise it (a controller reads
only what its cache holds, and two writers decide on the same stale picture), so every placement is
first committed into one ledger object, with the API server's optimistic concurrency:

- every controller reads the ledger before it plans and holds every entry's domains;
- it commits its new placements (and releases of finished JobSets' entries) in one merge patch
  preconditioned on the ledger's resourceVersion, before it writes a record, an event, a pod or a
  node; a concurrent or stale writer's patch is answered 409 and that controller re-plans from the
  new ledger;
- an elected leader first claims the ledger (`term` + 1, `holder` = its identity) and every later
  commit of its own requires both unchanged: once a newer leader has claimed, a deposed leader's
  commit is refused (it reads a term that is not its own) and it writes nothing more.

One object rather than one per domain: a commit covering several child Jobs is atomic, domains of
different levels (a block and its sub-blocks) are compared node by node, and no orphan is left by a
crash between two creates. The object is a ConfigMap in the controller's namespace (no CRD to
install; a namespaced Role grants exactly get/list/watch/create/patch on it). Its 1 MiB limit
bounds the placed JobSets it can hold: an entry is about 240 bytes plus 40 per child Job
(`to_text`, with a two-level domain path), so about 2,900 JobSets of 4 child Jobs; past that
a new placement is refused as "the ledger is full" until finished JobSets free room, while
releases still go through (ledgersize.py).

Entries are keyed `<kind>.<namespace>.<name>` and carry a `kind`: "placement", or "reservation"
(time-aware planning: the domains a waiting JobSet is promised from `start`, epoch seconds, see
reserving.py). A reservation is no exclusive hold: a JobSet expected to end before `start` may
run there (backfill), so reservations are left out of the node-by-node clash check and reach the
planner as `ClusterSnapshot.reservations`. Or "eviction" (`--preemption`, preempting.py): a
running JobSet being preempted, with when and for whom; it holds nothing. An entry of another kind,
or a reservation without a `start`, is held like a placement. Pure functions here; the commit
itself (the API calls) is in commit.py.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from collections.abc import Mapping, Set
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, ValidationError

from placer.controller.adapter import Obj, resource_version
from placer.model.assignment import PREFIX, Assignment, jobs_data, jobs_from

__all__ = [
    "EVICTION",
    "HOLDER_ANNOTATION",
    "LEDGER_LABEL",
    "LEDGER_NAME",
    "PLACEMENT",
    "RESERVATION",
    "TERM_ANNOTATION",
    "Deposed",
    "Fence",
    "Ledger",
    "LedgerChange",
    "LedgerEntry",
    "entry_key",
    "eviction_time",
    "fence_annotation",
    "ledger_object",
    "ledger_patch",
    "read_ledger",
]

log = logging.getLogger(__name__)


def eviction_time(wall_s: float) -> float:
    """An eviction's commit time as the ledger keeps it: the round's wall time to the
    millisecond, rounded down. The victim is stamped with the whole second
    (`preemption.format_stamp`) in the round that commits the eviction, and a later round
    recognizes its own suspend by that stamp from the ledger's copy; rounding to the nearest
    millisecond would carry a time in the last half millisecond of a second into the next one,
    so the later round would suspend the victim again under a second stamp."""
    return math.floor(wall_s * 1000) / 1000


LEDGER_NAME = "placer-ledger"
LEDGER_LABEL = f"{PREFIX}/ledger"
"""Label on the ledger ConfigMap (value "placements"): what the controller lists and watches."""
TERM_ANNOTATION = f"{PREFIX}/ledger-term"
"""Fencing: bumped by every leader when it starts; a leader commits only under its own term."""
HOLDER_ANNOTATION = f"{PREFIX}/ledger-holder"
"""The identity of the leader that claimed the current term."""
FENCE_ANNOTATION_PREFIX = f"{PREFIX}/ledger-fence."
"""Per-Lease fences: `<prefix><digest of the Lease>` = JSON {"lease", "term", "holder"}."""


def fence_annotation(lease: str) -> str:
    """The annotation key holding `lease`'s fence (a digest: Lease names may be 253 long)."""
    return FENCE_ANNOTATION_PREFIX + hashlib.sha256(lease.encode()).hexdigest()[:16]


PLACEMENT = "placement"
RESERVATION = "reservation"
EVICTION = "eviction"
"""A running JobSet being preempted (preempting.py): the intent, committed in the same change that
releases its placement and places its beneficiaries, so a restarted controller finishes the
eviction from the ledger alone. It holds no domain (its record is empty)."""


class Deposed(Exception):
    """The ledger was claimed by a newer leader: this replica must write nothing more."""


@dataclass(frozen=True)
class Fence:
    """An elected leader's claim on the ledger: its identity and the term it raised it to.

    Terms are counted per Lease: replicas elected on one Lease fence each other (a newer leader
    deposes an older one), while controllers elected on different Leases (each managing its own
    namespaces) share the ledger without deposing each other; their commits are still serialized
    by the ledger's resourceVersion and checked node by node. With one term for every Lease, two
    such controllers deposed each other at every claim and exited in turn (found by the
    multi-controller trials on the real control plane, benchmarks/cluster_trials.py).
    """

    holder: str
    term: int
    lease: str = ""
    """`namespace/name` of the Lease this leader was elected on; "" keeps the ledger's original
    single term (`TERM_ANNOTATION`, `HOLDER_ANNOTATION`)."""


class LedgerEntry(BaseModel):
    """One placement (or, later, another kind of hold) committed in the ledger."""

    model_config = ConfigDict(frozen=True)
    kind: str = PLACEMENT
    owner: str
    """`namespace/name` of the JobSet the entry belongs to."""
    uid: str = ""
    """The JobSet's uid: an entry of a deleted and recreated JobSet is not the new one's."""
    record: Assignment
    start: float | None = None
    """Reservations: when the JobSet is expected to start there (epoch seconds)."""
    end: float | None = None
    """Reservations: when it is expected to end (epoch seconds)."""
    past_max_wait: bool = False
    """Reservations: the JobSet has waited longer than `--max-wait`, so the scheduler extender
    keeps other pods off these domains from now on, not only within its guard of `start`."""
    at: float | None = None
    """Evictions: when the eviction was committed (epoch seconds); also stamped on the victim
    (preempting.PREEMPTED_AT), which is how a restarted controller knows it was suspended."""
    beneficiaries: tuple[str, ...] = ()
    """Evictions: the JobSets placed on what the victim frees (`namespace/name`, sorted)."""
    note: str = ""
    """Evictions: what the eviction costs, as the `Preempted` event says it."""

    @property
    def soft(self) -> bool:
        """A reservation the planner treats by the backfill rule rather than as a hold."""
        return self.kind == RESERVATION and self.start is not None

    def to_text(self) -> str:
        """Compact JSON (the ledger's size is bounded): the child Jobs as the placement record
        writes them (`assignment.jobs_data`), with the entry's own fields beside them."""
        data: dict[str, object] = {
            "kind": self.kind,
            "owner": self.owner,
            "uid": self.uid,
            "plan": self.record.plan_id,
            **jobs_data(self.record.jobs),
        }
        if self.record.pinned:
            data["pinned"] = True
        if self.record.jobset != self.owner:
            data["jobset"] = self.record.jobset
        if self.start is not None:
            data["start"] = round(self.start, 3)
        if self.end is not None:
            data["end"] = round(self.end, 3)
        if self.past_max_wait:
            data["past_max_wait"] = True
        if self.at is not None:
            data["at"] = round(self.at, 3)
        if self.beneficiaries:
            data["for"] = list(self.beneficiaries)
        if self.note:
            data["note"] = self.note
        return json.dumps(data, sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_text(cls, text: str) -> LedgerEntry:
        """The inverse of `to_text`; ValueError or ValidationError when it does not parse."""
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("a ledger entry is an object")
        owner = str(data.get("owner") or "")
        record = Assignment(
            jobset=str(data.get("jobset") or owner),
            jobs=jobs_from(data.get("jobs"), data.get("levels")),
            pinned=bool(data.get("pinned")),
            plan_id=str(data.get("plan") or ""),
        )
        start, end, at = data.get("start"), data.get("end"), data.get("at")
        return cls(
            kind=str(data.get("kind") or PLACEMENT),
            owner=owner,
            uid=str(data.get("uid") or ""),
            record=record,
            start=None if start is None else float(start),
            end=None if end is None else float(end),
            past_max_wait=data.get("past_max_wait") is True,
            at=None if at is None else float(at),
            beneficiaries=tuple(str(b) for b in data.get("for") or ()),
            note=str(data.get("note") or ""),
        )


def entry_key(kind: str, owner: str) -> str:
    """`<kind>.<namespace>.<name>`: a valid ConfigMap key (namespaces hold no dots)."""
    return f"{kind}.{owner.replace('/', '.', 1)}"


@dataclass(frozen=True)
class Ledger:
    """The ledger as read: its version (precondition of the next commit), fence and entries."""

    namespace: str
    name: str = LEDGER_NAME
    resource_version: str = ""
    """"" while the ledger does not exist (the first commit creates it)."""
    term: int = 0
    holder: str = ""
    fences: Mapping[str, Fence] = field(default_factory=dict)
    """The per-Lease fences, by Lease (`Fence.lease`)."""
    entries: Mapping[str, LedgerEntry] = field(default_factory=dict)
    unreadable: Set[str] = frozenset()
    """Keys whose value does not parse: kept as they are, and their owners planned around."""
    sizes: Mapping[str, int] = field(default_factory=dict)
    """Bytes of every stored value, readable or not: what the API server's size limit counts
    (ledgersize.py)."""

    @property
    def exists(self) -> bool:
        return bool(self.resource_version)

    def fence_of(self, lease: str) -> Fence:
        """The current claim under `lease` (term 0 and no holder if none)."""
        if not lease:
            return Fence(holder=self.holder, term=self.term)
        return self.fences.get(lease, Fence(holder="", term=0, lease=lease))

    def placement(self, owner: str, uid: str) -> LedgerEntry | None:
        """The committed placement of this JobSet (this incarnation of it), if any."""
        entry = self.entries.get(entry_key(PLACEMENT, owner))
        if entry is None or (uid and entry.uid and entry.uid != uid):
            return None
        return entry

    def eviction(self, owner: str, uid: str) -> LedgerEntry | None:
        """The eviction in progress of this JobSet (this incarnation of it), if any."""
        entry = self.entries.get(entry_key(EVICTION, owner))
        if entry is None or entry.kind != EVICTION or (uid and entry.uid and entry.uid != uid):
            return None
        return entry


def read_ledger(obj: Obj | None, namespace: str) -> Ledger:
    """The ledger from its ConfigMap (None: not created yet). Bad entries are logged, kept."""
    if obj is None:
        return Ledger(namespace=namespace)
    meta = obj.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    entries: dict[str, LedgerEntry] = {}
    unreadable: set[str] = set()
    sizes: dict[str, int] = {}
    for key, text in sorted((obj.get("data") or {}).items()):
        sizes[key] = len(str(text).encode())
        try:
            entries[key] = LedgerEntry.from_text(text)
        except (ValueError, ValidationError) as e:
            log.warning("ledger %s: unreadable entry %s: %s", meta.get("name"), key, e)
            unreadable.add(key)
    try:
        term = int(annotations.get(TERM_ANNOTATION) or 0)
    except ValueError:
        term = 0
    fences: dict[str, Fence] = {}
    for key, text in sorted(annotations.items()):
        if not key.startswith(FENCE_ANNOTATION_PREFIX):
            continue
        try:
            value = json.loads(text)
            fence = Fence(
                holder=str(value["holder"]), term=int(value["term"]), lease=value["lease"]
            )
        except (ValueError, KeyError, TypeError) as e:
            log.warning("ledger %s: unreadable fence %s: %s", meta.get("name"), key, e)
            continue
        if isinstance(fence.lease, str) and key == fence_annotation(fence.lease):
            fences[fence.lease] = fence
    return Ledger(
        namespace=str(meta.get("namespace") or namespace),
        name=str(meta.get("name") or LEDGER_NAME),
        resource_version=resource_version(obj),
        term=term,
        holder=str(annotations.get(HOLDER_ANNOTATION) or ""),
        fences=fences,
        entries=entries,
        unreadable=frozenset(unreadable),
        sizes=sizes,
    )


@dataclass(frozen=True)
class LedgerChange:
    """One commit: entries put (new or replaced) and removed, and the fence it is made under."""

    put: Mapping[str, LedgerEntry] = field(default_factory=dict)
    remove: frozenset[str] = frozenset()
    fence: Fence | None = None
    claim: bool = False
    """Set the ledger's term and holder to `fence` (a leader starting) instead of requiring them."""

    def __bool__(self) -> bool:
        return bool(self.put or self.remove or self.claim)

    def check_fence(self, ledger: Ledger) -> None:
        """Raise `Deposed` when a leader's commit would follow a newer leader's claim."""
        if self.fence is None or self.claim:
            return
        current = ledger.fence_of(self.fence.lease)
        if (current.term, current.holder) != (self.fence.term, self.fence.holder):
            under = f" under lease {self.fence.lease}" if self.fence.lease else ""
            raise Deposed(
                f"the ledger is at term {current.term} of {current.holder or 'nobody'}{under}; "
                f"this replica led term {self.fence.term}"
            )


def _annotations(ledger: Ledger, change: LedgerChange) -> dict[str, str]:
    fence = change.fence
    if fence is None or not change.claim:
        return {}
    term = max(ledger.fence_of(fence.lease).term, fence.term)
    if not fence.lease:
        return {TERM_ANNOTATION: str(term), HOLDER_ANNOTATION: fence.holder}
    value = {"holder": fence.holder, "lease": fence.lease, "term": term}
    return {fence_annotation(fence.lease): json.dumps(value, sort_keys=True)}


def ledger_object(ledger: Ledger, change: LedgerChange) -> Obj:
    """The ConfigMap that creates the ledger with `change` applied (the first commit ever)."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": ledger.name,
            "namespace": ledger.namespace,
            "labels": {LEDGER_LABEL: "placements"},
            "annotations": {TERM_ANNOTATION: "0", **_annotations(ledger, change)},
        },
        "data": {k: e.to_text() for k, e in sorted(change.put.items())},
    }


def ledger_patch(ledger: Ledger, change: LedgerChange) -> Obj:
    """The merge patch committing `change`, preconditioned on the version it was decided on."""
    data: dict[str, str | None] = {k: None for k in sorted(change.remove - change.put.keys())}
    data.update({k: e.to_text() for k, e in sorted(change.put.items())})
    meta: Obj = {"resourceVersion": ledger.resource_version}
    annotations = _annotations(ledger, change)
    if annotations:
        meta["annotations"] = annotations
    patch: Obj = {"metadata": meta}
    if data:
        patch["data"] = data
    return patch
