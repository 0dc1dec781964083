"""The extender's plan state as data: which child Job holds which domain, and which nodes that is.

Two sources feed it (`placer extender --plan` reads a Plan file, `--kubeconfig` watches the
`placer.dev/assignment` annotations the controller writes); both become `JobEntry` rows (built
here from a Plan or an Assignment; `sources` calls the builders), so the decisions never care where
the plan came from. Domain membership needs node labels: the extender learns them from a snapshot
file, the Node watch, or the full NodeList the scheduler sends when it is not node-cache capable.

`StateView` indexes the rows and labels into the immutable picture one request decides on
(`decide`). The mutable, thread-safe holder the sources write to, which builds the views, is
`ExtenderStore` in store.py.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import cast

from pydantic import BaseModel, ConfigDict, Field

from placer.model.assignment import Assignment
from placer.model.cluster import NODE_RESERVATION_KEY
from placer.model.plan import DomainRef, Plan
from placer.model.topology import HOSTNAME
from plugins.extender.pods import JobKey, PodInfo

__all__ = [
    "MAX_EPOCH_S",
    "MAX_START_S",
    "JobEntry",
    "Labels",
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
    """Reservation rows of the plan's waiting JobSets (`reserved_domains`, and `reserved_nodes`
    as domains of `NODE_RESERVATION_KEY`, as the controller's ledger records them), their start
    counted from `planned_at_s` (epoch seconds: when the plan was read, the plan carries no
    instant)."""
    rows: list[JobEntry] = []
    for outcome in plan.jobsets:
        start = outcome.expected_start_seconds
        if outcome.status == "placed" or not outcome.reserved_domains or start is None:
            continue
        nodes = [
            DomainRef(key=NODE_RESERVATION_KEY, value=n, path=[(NODE_RESERVATION_KEY, n)])
            for n in outcome.reserved_nodes
        ]
        for i, domain in enumerate([*outcome.reserved_domains, *nodes]):
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
            elif shape == (NODE_RESERVATION_KEY,):
                # a node reserved for a coordinator's pods is named by its name, no label
                for (value,), entry in by_values.items():
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
            values: tuple[str | None, ...] = (node,)  # a reserved node: by name, not labels
            if shape != (NODE_RESERVATION_KEY,):
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
