"""Reading the cluster: which JobSets placer manages, where they stand, what their record says.

Pure functions over a `ClusterState`; the first step of every reconcile cycle. A JobSet is managed
when it opted in for the binding in use: the placement gate on a pod template (gate binding), or the
exclusive-topology plus node-selector annotations (node-labels binding); under the gate binding
also when `placer webhook` gated its pods (then its placement keeps it managed once they run). Its
`Assignment` record is read back from the annotation; a record copied from another object or
unreadable is ignored with a warning, never trusted.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal

from placer.controller.adapter import Obj
from placer.controller.decide.observe.state import ClusterState
from placer.controller.decide.records.bindings import (
    node_selector_label_problem,
    node_selector_problem,
)
from placer.controller.decide.records.ledger import Ledger
from placer.model.assignment import ASSIGNMENT_ANNOTATION, PLACEMENT_GATE, Assignment
from placer.model.durations import EXPECTED_DURATION
from placer.model.errors import InputError
from placer.model.jobset.parse import parse_jobset
from placer.model.kube.objects import PriorityClassObject, read_as
from placer.model.kube.pods import PodRef, pod_ref
from placer.model.priorities import PriorityClasses
from placer.model.snapshots.priority_classes import priority_classes_of
from placer.model.snapshots.running import TERMINAL_PHASES
from placer.model.workload import EXCLUSIVE_TOPOLOGY, NODE_SELECTOR_STRATEGY, JobSetRequest

__all__ = [
    "BINDINGS",
    "Binding",
    "ManagedJobSet",
    "ParseMemo",
    "PodEntry",
    "RefMemo",
    "is_finished",
    "is_managed",
    "jobset_pods",
    "read_record",
    "survey",
]

log = logging.getLogger(__name__)

Binding = Literal["gate", "node-labels"]
BINDINGS: tuple[Binding, ...] = ("gate", "node-labels")


def _templates(obj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The job templates of every replicatedJob (malformed entries skipped; the parser reports)."""
    rjobs = (obj.get("spec") or {}).get("replicatedJobs") or []
    return [rj.get("template") or {} for rj in rjobs if isinstance(rj, Mapping)]


def _pod_spec(job_template: Mapping[str, Any]) -> Mapping[str, Any]:
    return ((job_template.get("spec") or {}).get("template") or {}).get("spec") or {}


def is_managed(obj: Mapping[str, Any], binding: Binding) -> bool:
    """Did this JobSet opt in to placer under `binding`?"""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    if binding == "gate":
        return any(
            any(
                isinstance(g, Mapping) and g.get("name") == PLACEMENT_GATE
                for g in _pod_spec(t).get("schedulingGates") or []
            )
            for t in _templates(obj)
        )
    on_templates = [(t.get("metadata") or {}).get("annotations") or {} for t in _templates(obj)]
    exclusive = EXCLUSIVE_TOPOLOGY in annotations or any(
        EXCLUSIVE_TOPOLOGY in a for a in on_templates
    )
    flagged = NODE_SELECTOR_STRATEGY in annotations or any(
        NODE_SELECTOR_STRATEGY in a for a in on_templates
    )
    return exclusive and flagged


def _gated_by_webhook(obj: Obj, key: str, pods: Sequence[PodEntry], *, committed: bool) -> bool:
    """Opted in through `placer webhook` (gate binding): its pods carry the gate although the
    template does not, or, once they are all ungated, placer holds its placement (a ledger
    entry, or its own record annotation)."""
    if committed or any(p.gated for p in pods):
        return True
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    return ASSIGNMENT_ANNOTATION in annotations and read_record(obj, key)[0] is not None


def is_finished(obj: Mapping[str, Any]) -> bool:
    """Completed, failed or being deleted: its domains go back to the pool."""
    if (obj.get("metadata") or {}).get("deletionTimestamp"):
        return True
    status = obj.get("status") or {}
    if status.get("terminalState") in ("Completed", "Failed"):
        return True
    return any(
        c.get("type") in ("Completed", "Failed") and c.get("status") == "True"
        for c in status.get("conditions") or []
        if isinstance(c, Mapping)
    )


@dataclass(frozen=True)
class PodEntry:
    pod: Obj
    ref: PodRef

    @property
    def name(self) -> str:
        return str(self.pod["metadata"]["name"])

    @property
    def node(self) -> str:
        return str((self.pod.get("spec") or {}).get("nodeName") or "")

    @property
    def terminal(self) -> bool:
        return (self.pod.get("status") or {}).get("phase") in TERMINAL_PHASES

    @property
    def gated(self) -> bool:
        return any(
            isinstance(g, Mapping) and g.get("name") == PLACEMENT_GATE
            for g in (self.pod.get("spec") or {}).get("schedulingGates") or []
        )

    @property
    def deleting(self) -> bool:
        return bool(self.pod["metadata"].get("deletionTimestamp"))


@dataclass(frozen=True)
class ManagedJobSet:
    """One managed JobSet as seen this cycle."""

    obj: Obj
    request: JobSetRequest | None
    """None when the manifest does not parse; `error` says why."""
    error: str
    assignment: Assignment | None
    annotation: str | None
    """The raw record text, to detect concurrent changes when writing a new one."""
    finished: bool
    suspended: bool
    restarts: int
    pods: tuple[PodEntry, ...]
    committed: bool = False
    """`assignment` is the JobSet's entry in the placement ledger (else it is the annotation's)."""
    warning: str = ""
    """Something in the manifest that was ignored (an unreadable expected duration): a Warning
    event, the JobSet is still planned."""
    evicting: bool = False
    """The ledger records its eviction (preempting.py): it holds nothing, its old record is
    ignored, and it is not planned until the eviction is done and it runs again."""
    released: bool = False
    """Suspended with its pods gone (releases.py): its entry is released this round and its
    record annotation, if any, cleared."""

    @property
    def namespace(self) -> str:
        return str(self.obj["metadata"].get("namespace") or "default")

    @property
    def name(self) -> str:
        return str(self.obj["metadata"]["name"])

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def uid(self) -> str:
        return str(self.obj["metadata"].get("uid") or "")

    @property
    def resource_version(self) -> str:
        return str(self.obj["metadata"].get("resourceVersion") or "")


RefMemo = dict[tuple[str, str, str], PodRef | None]
"""`pod_ref` by (namespace, name, resourceVersion): labels change only with the version."""


def jobset_pods(state: ClusterState, refs: RefMemo | None = None) -> dict[str, list[PodEntry]]:
    """JobSet key -> its pods (any restart attempt), sorted by pod name. `refs` (kept by the
    caller across cycles) saves re-reading the labels of pods that did not change."""
    result: dict[str, list[PodEntry]] = {}
    for (namespace, name), pod in sorted(state.pods.items()):
        version = str(pod["metadata"].get("resourceVersion") or "")
        if refs is None or not version:
            ref = pod_ref(pod)
        elif (memo_key := (namespace, name, version)) in refs:
            ref = refs[memo_key]
        else:
            ref = refs[memo_key] = pod_ref(pod)
        if ref is not None:
            result.setdefault(ref.jobset_key, []).append(PodEntry(pod, ref))
    return result


def read_record(obj: Obj, key: str) -> tuple[Assignment | None, str | None]:
    """The placement record annotation on a JobSet (None when absent or not trusted), and its
    raw text."""
    text = ((obj.get("metadata") or {}).get("annotations") or {}).get(ASSIGNMENT_ANNOTATION)
    if text is None:
        return None, None
    try:
        record = Assignment.from_annotation(text, obj=key)
    except InputError as e:
        log.warning("%s: ignoring placement record: %s", key, e)
        return None, text
    if record.jobset != key:
        log.warning("%s: ignoring placement record written for %s", key, record.jobset)
        return None, text
    return record, text


ParseMemo = dict[str, tuple[JobSetRequest | None, str, str]]
"""Parsed requests (request, error, warning) by a digest of what parsing reads (spec,
annotations, priority classes)."""


_DURATION_FIELD = f"metadata.annotations[{EXPECTED_DURATION}]"
_DEADLINE_FIELD = ".template.spec.activeDeadlineSeconds"


def _without_durations(obj: Obj) -> Obj:
    """The JobSet as if it stated no expected duration: neither the annotation nor any child
    Job's `activeDeadlineSeconds` (a copy; the cached object is never changed)."""
    meta = obj.get("metadata") or {}
    annotations = {
        k: v for k, v in (meta.get("annotations") or {}).items() if k != EXPECTED_DURATION
    }
    spec = obj.get("spec") or {}
    rjobs = []
    for rj in spec.get("replicatedJobs") or []:
        template = (rj or {}).get("template") or {}
        job = {
            k: v for k, v in (template.get("spec") or {}).items() if k != "activeDeadlineSeconds"
        }
        rjobs.append({**rj, "template": {**template, "spec": job}})
    return {
        **obj,
        "metadata": {**meta, "annotations": annotations},
        "spec": {**spec, "replicatedJobs": rjobs},
    }


def priorities_of(state: ClusterState) -> PriorityClasses:
    """The cluster's PriorityClasses as a JobSet's templates resolve them, read as a snapshot's
    are (the planning snapshot reads the same objects)."""
    return priority_classes_of(
        ("cluster", read_as(PriorityClassObject, pc, "cluster"))
        for pc in state.priority_classes.values()
    )


def _parse_request(obj: Obj, order: int, priorities: PriorityClasses) -> tuple[JobSetRequest, str]:
    """`parse_jobset`; an unreadable or negative expected duration (the annotation
    `placer.dev/expected-duration`, or a child Job's `activeDeadlineSeconds`) is not worth a
    JobSet: it is planned with the default duration, and the error becomes the warning."""
    read = partial(
        parse_jobset,
        source="cluster",
        order=order,
        priorities=priorities,
    )
    try:
        return read(obj), ""
    except InputError as e:
        if e.field != _DURATION_FIELD and not e.field.endswith(_DEADLINE_FIELD):
            raise
        return read(_without_durations(obj)), f"{e}; planned with the default duration"


def _parse(
    obj: Obj, order: int, priorities: PriorityClasses, memo: ParseMemo | None
) -> tuple[JobSetRequest | None, str, str]:
    """`parse_jobset`, memoized: status and record updates do not change what placement needs."""
    meta = obj.get("metadata") or {}
    annotations = {
        k: v for k, v in (meta.get("annotations") or {}).items() if k != ASSIGNMENT_ANNOTATION
    }
    digest = ""
    if memo is not None:
        digest = json.dumps(
            [
                meta.get("uid"),
                meta.get("creationTimestamp"),
                obj.get("spec"),
                annotations,
                dict(priorities.values),
                priorities.default,
                sorted(priorities.non_preempting),
            ],
            sort_keys=True,
            default=str,
        )
        if digest in memo:
            request, error, warning = memo[digest]
            if request is not None and request.order != order:
                request = request.model_copy(update={"order": order})
            return request, error, warning
    result: tuple[JobSetRequest | None, str, str]
    try:
        request, warning = _parse_request(obj, order, priorities)
        result = (request, "", warning)
    except InputError as e:
        result = (None, str(e), "")
    if memo is not None:
        memo[digest] = result
    return result


def survey(
    state: ClusterState,
    *,
    binding: Binding,
    namespaces: Sequence[str] = (),
    memo: ParseMemo | None = None,
    refs: RefMemo | None = None,
    ledger: Ledger | None = None,
    pods: Mapping[str, list[PodEntry]] | None = None,
) -> list[ManagedJobSet]:
    """Every managed JobSet in `namespaces` (all when empty), in key order. A JobSet's record is
    its entry in `ledger` when there is one (the commit is what counts), else its annotation.
    `memo` and `refs` (kept by the caller across cycles) save re-parsing unchanged manifests and
    pod labels; `pods`: `jobset_pods(state, refs)` when the caller already has it."""
    priorities = priorities_of(state)
    if pods is None:
        pods = jobset_pods(state, refs)
    result: list[ManagedJobSet] = []
    for order, ((ns, name), obj) in enumerate(sorted(state.jobsets.items())):
        if namespaces and ns not in namespaces:
            continue
        key = f"{ns}/{name}"
        uid = str(obj["metadata"].get("uid") or "")
        entry = ledger.placement(key, uid) if ledger is not None else None
        evicting = ledger is not None and ledger.eviction(key, uid) is not None
        if entry is not None and entry.record.jobset != key:
            log.warning("%s: ignoring ledger entry written for %s", key, entry.record.jobset)
            entry = None
        mine = tuple(
            p
            for p in pods.get(key, ())
            if not uid or not p.ref.jobset_uid or p.ref.jobset_uid == uid
        )
        if not is_managed(obj, binding) and not (
            binding == "gate"
            and _gated_by_webhook(obj, key, mine, committed=entry is not None or evicting)
        ):
            continue
        request, error, warning = _parse(obj, order, priorities, memo)
        if request is not None and binding == "node-labels":
            error = node_selector_problem(obj) or node_selector_label_problem(request)
            request = None if error else request
        record, text = read_record(obj, key)
        if entry is not None:
            record = entry.record
        if evicting and entry is None:
            record = None  # released by its eviction; the annotation is cleared when suspended
        status = obj.get("status") or {}
        result.append(
            ManagedJobSet(
                obj=obj,
                request=request,
                error=error,
                assignment=record,
                annotation=text,
                finished=is_finished(obj),
                suspended=bool((obj.get("spec") or {}).get("suspend")),
                restarts=int(status.get("restarts") or 0),
                pods=mine,
                committed=entry is not None,
                warning=warning,
                evicting=evicting,
            )
        )
    return result
