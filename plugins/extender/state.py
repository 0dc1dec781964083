"""The extender's in-memory plan state: which child Job holds which domain, and which nodes that is.

Two sources feed it (`placer extender --plan` reads a Plan file, `--kubeconfig` watches the
`placer.dev/assignment` annotations the controller writes); both become `JobEntry` rows, so the
decisions never care where the plan came from. Domain membership needs node labels: the
extender learns them from a snapshot file, the Node watch, or the full NodeList the scheduler sends
when it is not node-cache capable.

`ExtenderStore` is the mutable, thread-safe holder the sources write to; every request reads one
immutable `StateView` from it, so a decision never sees half of an update. Views are rebuilt lazily,
on the first read after a change, because a watch may deliver thousands of node events between two
scheduling requests.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import cast

from pydantic import BaseModel, ConfigDict, Field

from placer.model.assignment import Assignment
from placer.model.plan import DomainRef, Plan
from placer.model.topology import HOSTNAME
from plugins.extender.pods import JobKey, PodInfo

__all__ = [
    "DEFAULT_GUARD_S",
    "MAX_EPOCH_S",
    "MAX_START_S",
    "ExtenderStore",
    "JobEntry",
    "StateView",
    "domain_pattern",
    "entries_from_assignment",
    "entries_from_plan",
    "reservation_start_ok",
    "reservations_from_plan",
    "reserved_reason",
]

log = logging.getLogger(__name__)

MAX_EPOCH_S = 253_402_300_799.0
"""9999-12-31T23:59:59Z, the last instant a reason can print: reservations start before it."""
MAX_START_S = 1e10
"""The latest start a plan file may give (about 317 years after it is read), so that every
reservation it makes is an instant the extender can date."""

DEFAULT_GUARD_S = 1800.0
"""`--reservation-guard` default: how soon a reservation's start must be to keep other pods out."""

Labels = Mapping[str, str]
Pattern = tuple[tuple[str, str], ...]
"""(label key, value) pairs a node must carry to be in a domain: the domain path, top down."""


class JobEntry(BaseModel):
    """One child Job of a placed JobSet, as the extender enforces it."""

    model_config = ConfigDict(frozen=True)
    jobset: str
    """`namespace/name` of the JobSet: the text of "reserved for ..." reasons."""
    job: str
    """Child Job name."""
    domain: DomainRef | None = None
    """The exclusive domain the child Job holds; None for a non-exclusive child Job."""
    planned: dict[int, str] = Field(default_factory=dict)
    """completion index -> planned node: a hard limit when `pinned`, else a preference."""
    pinned: bool = False
    reserved_from: float | None = Field(default=None, ge=0, le=MAX_EPOCH_S, allow_inf_nan=False)
    """Set on a reservation row (time-aware planning): the domain is held for the JobSet's
    expected start at this instant (epoch seconds). Not a child Job: it only keeps other pods
    out, and only once the start is within the store's guard (`ExtenderStore.guard_s`), or from
    now on if `past_max_wait`."""
    past_max_wait: bool = False
    """On a reservation row: its JobSet has waited longer than `--max-wait`, so its domains are
    guarded now whatever the start: a pod that is not placer's landing there would push back
    the JobSet placer promised to start next."""

    @property
    def key(self) -> JobKey:
        namespace, _, name = self.jobset.partition("/")
        return (namespace, name, self.job)


def reservation_start_ok(start: float | None) -> bool:
    """A reservation start the store can hold: a finite epoch second between 1970 and 9999."""
    return start is not None and math.isfinite(start) and 0 <= start <= MAX_EPOCH_S


def domain_pattern(domain: DomainRef) -> Pattern:
    """The labels a member node carries: the whole path when given (values need not be unique per
    level), else just `key=value`."""
    if domain.path:
        return tuple((k, v) for k, v in domain.path)
    return ((domain.key, domain.value),)


def reserved_reason(entry: JobEntry) -> str:
    """What a refused foreign pod is told (and `kubectl describe pod` shows)."""
    if entry.reserved_from is not None:
        when = datetime.fromtimestamp(entry.reserved_from, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        late = " (waiting past --max-wait)" if entry.past_max_wait else ""
        return f"reserved for {entry.jobset} from {when}{late}"
    return f"reserved for {entry.jobset}"


def reservations_from_plan(plan: Plan, planned_at_s: float) -> list[JobEntry]:
    """Reservation rows of the plan's waiting JobSets (`reserved_domains`), their start counted
    from `planned_at_s` (epoch seconds: when the plan was read, the plan carries no instant)."""
    rows: list[JobEntry] = []
    for outcome in plan.jobsets:
        start = outcome.expected_start_seconds
        if outcome.status == "placed" or not outcome.reserved_domains or start is None:
            continue
        for i, domain in enumerate(outcome.reserved_domains):
            rows.append(
                JobEntry(
                    jobset=outcome.key,
                    job=f"reservation-{i}",
                    domain=domain,
                    reserved_from=planned_at_s + start,
                    past_max_wait=outcome.past_max_wait,
                )
            )
    return rows


def entries_from_plan(plan: Plan, *, pinned: bool = False) -> list[JobEntry]:
    """Rows for every child Job of the plan's placed JobSets. Unschedulable and partial outcomes
    hold nothing: all-or-nothing means they will not start, so they must not keep others out.
    Jobs without a domain are always pinned to their planned nodes (there is nothing else to
    steer them by), as `Assignment.from_outcome` records them."""
    rows: list[JobEntry] = []
    for outcome in plan.jobsets:
        if outcome.status != "placed":
            continue
        for job in outcome.jobs:
            rows.append(
                JobEntry(
                    jobset=outcome.key,
                    job=job.name,
                    domain=job.domain,
                    planned={p.index: p.node for p in job.pods},
                    pinned=pinned or job.domain is None,
                )
            )
    return rows


def entries_from_assignment(assignment: Assignment) -> list[JobEntry]:
    """Rows for one JobSet from the durable record the controller keeps on it."""
    rows: list[JobEntry] = []
    for job, placed in sorted(assignment.jobs.items()):
        if placed.domain is None and not placed.nodes:
            continue
        rows.append(
            JobEntry(
                jobset=assignment.jobset,
                job=job,
                domain=placed.domain,
                planned=dict(placed.nodes),
                pinned=assignment.pinned or placed.domain is None,
            )
        )
    return rows


class StateView:
    """An immutable picture of the plan and the known node labels; what one request decides on."""

    def __init__(
        self,
        entries: Iterable[JobEntry],
        labels: Mapping[str, Labels],
        *,
        synced: bool = True,
        version: int = 0,
    ) -> None:
        self.synced = synced
        self.version = version
        self.jobs: dict[JobKey, JobEntry] = {}
        # shape (label keys of a domain path) -> {label values -> the entry holding that domain}
        self._shapes: dict[tuple[str, ...], dict[tuple[str, ...], JobEntry]] = {}
        # planned node of an exclusive child Job -> that entry (member whatever its labels say)
        self._planned: dict[str, JobEntry] = {}
        # placements first: a reservation on a domain placed now (backfill) yields to it
        for entry in sorted(entries, key=lambda e: (e.reserved_from is not None, e.key)):
            if entry.reserved_from is not None:
                self._reserve(entry)
                continue
            if entry.key in self.jobs:
                log.warning("child Job %s/%s listed twice; keeping the first", *entry.key[::2])
                continue
            self.jobs[entry.key] = entry
            if entry.domain is None:
                continue
            pattern = domain_pattern(entry.domain)
            shape = tuple(k for k, _ in pattern)
            values = tuple(v for _, v in pattern)
            holder = self._shapes.setdefault(shape, {}).setdefault(values, entry)
            if holder is not entry:
                log.warning(
                    "domain %s held by both %s and %s; keeping %s",
                    entry.domain.value,
                    holder.jobset,
                    entry.jobset,
                    holder.jobset,
                )
                continue
            for node in entry.planned.values():
                self._planned.setdefault(node, entry)
        self.owner: dict[str, JobEntry] = dict(self._planned)
        """node -> the entry whose domain it is in, for every node known to be in one."""
        for node, node_labels in labels.items():
            found = self._match(node, node_labels)
            if found is not None:
                self.owner[node] = found
        for shape, by_values in self._shapes.items():
            if shape == (HOSTNAME,):
                # A hostname domain is one node; its name is its hostname unless labels say else.
                for (value,), entry in by_values.items():
                    if value not in labels:
                        self.owner.setdefault(value, entry)
        grouped: dict[JobKey, set[str]] = {}
        for node, entry in self.owner.items():
            grouped.setdefault(entry.key, set()).add(node)
        self.members: dict[JobKey, frozenset[str]] = {k: frozenset(v) for k, v in grouped.items()}
        """child Job -> the nodes of its domain that the view knows of."""
        self.reasons: dict[str, str] = {n: reserved_reason(e) for n, e in self.owner.items()}
        """node -> why a pod outside the plan may not use it (precomputed: filter's hot path)."""

    def _reserve(self, entry: JobEntry) -> None:
        """A reservation row: it holds its domain against pods outside the plan, unless a
        placement (backfill) or an earlier reservation already does."""
        if entry.domain is None:
            return
        pattern = domain_pattern(entry.domain)
        shape = tuple(k for k, _ in pattern)
        self._shapes.setdefault(shape, {}).setdefault(tuple(v for _, v in pattern), entry)

    def _match(self, node: str, labels: Labels) -> JobEntry | None:
        planned = self._planned.get(node)
        if planned is not None:
            return planned
        for shape, by_values in self._shapes.items():
            values = tuple(labels.get(k) for k in shape)
            if None in values:
                continue
            entry = by_values.get(cast(tuple[str, ...], values))  # no None: skipped above
            if entry is not None:
                return entry
        return None

    def job_of(self, pod: PodInfo) -> JobEntry | None:
        key = pod.job_key
        return self.jobs.get(key) if key is not None else None

    def owner_of(self, node: str, labels: Labels | None = None) -> JobEntry | None:
        """The entry whose domain holds `node`. With `labels` (fresh from the request), decide
        from them; else from what the state learned."""
        if labels is None:
            return self.owner.get(node)
        return self._match(node, labels)

    @property
    def reserved_nodes(self) -> int:
        return len(self.owner)


class ExtenderStore:
    """The thread-safe, mutable plan state; sources write, requests read `view()`."""

    def __init__(
        self,
        *,
        synced: bool = True,
        guard_s: float = DEFAULT_GUARD_S,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._lock = threading.Lock()
        self.guard_s = guard_s
        """A reservation keeps other pods out once its start is at most this far away (one
        whose JobSet is past `--max-wait`: at once)."""
        self._clock = clock
        self._reservations: tuple[JobEntry, ...] = ()
        self._guard_changes_at = math.inf
        """When the next reservation enters the guard: the view is rebuilt then."""
        self._jobsets: dict[str, tuple[JobEntry, ...]] = {}
        self._labels: dict[str, dict[str, str]] = {}
        self._synced = synced
        self._version = 0
        self._view: StateView | None = None

    def _changed(self) -> None:
        self._version += 1
        self._view = None

    # -- plan ------------------------------------------------------------------------------------

    def replace_plan(self, entries: Iterable[JobEntry]) -> None:
        """Swap the whole plan (a `--plan` file, or a controller that re-planned everything)."""
        grouped: dict[str, list[JobEntry]] = {}
        for e in entries:
            grouped.setdefault(e.jobset, []).append(e)
        with self._lock:
            self._jobsets = {k: tuple(v) for k, v in grouped.items()}
            self._changed()

    def set_jobset(self, jobset: str, entries: Sequence[JobEntry]) -> None:
        """Replace one JobSet's rows (`namespace/name`); no rows releases its domains."""
        with self._lock:
            old = self._jobsets.get(jobset, ())
            if not entries:
                if jobset in self._jobsets:
                    del self._jobsets[jobset]
                    self._changed()
                return
            if tuple(entries) != old:
                self._jobsets[jobset] = tuple(entries)
                self._changed()

    def replace_reservations(self, entries: Iterable[JobEntry]) -> None:
        """Swap every reservation row (rows with `reserved_from`)."""
        rows = tuple(sorted(entries, key=lambda e: (e.jobset, e.job)))
        with self._lock:
            if rows != self._reservations:
                self._reservations = rows
                self._changed()

    def jobsets(self) -> list[str]:
        with self._lock:
            return sorted(self._jobsets)

    # -- nodes -----------------------------------------------------------------------------------

    def set_node(self, name: str, labels: Labels) -> None:
        self.learn_nodes({name: labels})

    def remove_node(self, name: str) -> None:
        with self._lock:
            if self._labels.pop(name, None) is not None:
                self._changed()

    def learn_nodes(self, labels: Mapping[str, Labels]) -> bool:
        """Record the labels of the given nodes (others untouched); True if anything changed."""
        with self._lock:
            changed = False
            for name, node_labels in labels.items():
                if self._labels.get(name) != node_labels:
                    self._labels[name] = dict(node_labels)
                    changed = True
            if changed:
                self._changed()
            return changed

    def replace_nodes(self, labels: Mapping[str, Labels]) -> None:
        """Swap all node labels (after a full relist)."""
        with self._lock:
            self._labels = {n: dict(v) for n, v in labels.items()}
            self._changed()

    def known_nodes(self) -> int:
        with self._lock:
            return len(self._labels)

    # -- readiness -------------------------------------------------------------------------------

    @property
    def synced(self) -> bool:
        return self._synced

    def set_synced(self, synced: bool) -> None:
        with self._lock:
            if synced != self._synced:
                self._synced = synced
                self._changed()

    def view(self) -> StateView:
        """The current picture; built on the first read after a change, then shared."""
        now = self._clock()
        view = self._view
        if view is not None and now < self._guard_changes_at:
            return view
        with self._lock:
            if self._view is None or now >= self._guard_changes_at:
                entries = [e for rows in self._jobsets.values() for e in rows]
                horizon = now + self.guard_s
                later = [r.reserved_from or 0.0 for r in self._reservations if not r.past_max_wait]
                entries += [
                    r
                    for r in self._reservations
                    if r.past_max_wait or (r.reserved_from or 0.0) <= horizon
                ]
                self._guard_changes_at = min(
                    (t - self.guard_s for t in later if t > horizon), default=math.inf
                )
                self._view = StateView(
                    entries, self._labels, synced=self._synced, version=self._version
                )
            return self._view
