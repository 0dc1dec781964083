"""The writes a reconcile cycle decided on, as plain data, and how each one survives a 409.

`writeplan.plan_writes` produces them; `executor.execute` sends them through the adapter. Each write
knows the object state it was decided on (its resourceVersion). When the API server answers 409, the
executor re-reads the object and asks the write to `rebase` on it: the same intent recomputed on the
fresh object, `None` if the fresh object already is as intended, or `Aborted` if the decision no
longer holds (the JobSet was recreated, another writer changed the record). So retries never write
anything the pure decision did not mean.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

from pydantic import BaseModel, ConfigDict

from placer.controller.adapter import Obj, resource_version
from placer.controller.decide.records.bindings import node_label_patch, ungate_patch
from placer.model.assignment import ASSIGNMENT_ANNOTATION
from placer.model.preemption import PREEMPTED_AT, stamped, with_stamp
from placer.model.snapshots.running import TERMINAL_PHASES

__all__ = [
    "Aborted",
    "ActivateCheck",
    "EmitEvent",
    "LabelNode",
    "RecordAssignment",
    "SetAdmissionCheck",
    "SuspendJobSet",
    "UngatePod",
    "Write",
]


class Aborted(Exception):
    """The write's premise no longer holds; it and the writes depending on it are dropped."""


def _uid(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("uid") or "")


class _Identity(TypedDict):
    namespace: str
    name: str
    uid: str
    resource_version: str


def _identity(obj: Obj) -> _Identity:
    """The object a write targets, as read: namespace, name, uid and the resourceVersion its
    patch is preconditioned on."""
    meta = obj.get("metadata") or {}
    return _Identity(
        namespace=str(meta.get("namespace") or "default"),
        name=str(meta.get("name") or ""),
        uid=_uid(obj),
        resource_version=resource_version(obj),
    )


class _Write(BaseModel):
    model_config = ConfigDict(frozen=True)
    jobset: str = ""
    """`namespace/name` of the JobSet this write serves ("" for cleanup of released nodes)."""

    def describe(self) -> str:  # pragma: no cover - overridden
        raise NotImplementedError


class RecordAssignment(_Write):
    """Store the assignment on the JobSet. Always the first write for a placement. With
    `annotation` None, clear it (a suspended JobSet released, releases.py)."""

    op: Literal["record"] = "record"
    namespace: str
    name: str
    uid: str
    resource_version: str
    previous: str | None
    """The record text the decision was based on (None: there was none)."""
    annotation: str | None

    def patch(self) -> Obj:
        return {
            "metadata": {
                "resourceVersion": self.resource_version,
                "annotations": {ASSIGNMENT_ANNOTATION: self.annotation},
            }
        }

    def rebase(self, current: Obj) -> RecordAssignment | None:
        if self.uid and _uid(current) != self.uid:
            raise Aborted(f"JobSet {self.jobset} was deleted and recreated")
        text = ((current.get("metadata") or {}).get("annotations") or {}).get(ASSIGNMENT_ANNOTATION)
        if text == self.annotation:
            return None
        if text != self.previous:
            raise Aborted(f"the placement record of {self.jobset} was changed by another writer")
        return self.model_copy(update={"resource_version": resource_version(current)})

    def describe(self) -> str:
        if self.annotation is None:
            return f"clear the placement record of JobSet {self.jobset}"
        return f"record assignment on JobSet {self.jobset}"


def _annotations_of(obj: Obj) -> dict[str, Any]:
    return dict((obj.get("metadata") or {}).get("annotations") or {})


class SuspendJobSet(_Write):
    """Preemption (preempting.py): suspend a victim, or resume it once its pods are gone.

    Suspending is one merge patch that sets `spec.suspend`, stamps the eviction's time on the
    JobSet (`placer.dev/preempted-at`, which `--max-preemptions-per-day` counts and which tells a
    restarted controller this step was done) and clears its placement record: all or nothing."""

    op: Literal["suspend"] = "suspend"
    namespace: str
    name: str
    uid: str
    resource_version: str
    suspend: bool
    at: float = 0.0
    """Suspend: the eviction's commit time (epoch seconds), the stamp it adds."""
    annotations: dict[str, str | None] = {}

    @classmethod
    def evict(cls, jobset: str, obj: Obj, at: float) -> SuspendJobSet:
        current = _annotations_of(obj)
        annotations: dict[str, str | None] = {PREEMPTED_AT: with_stamp(current, at)}
        if ASSIGNMENT_ANNOTATION in current:
            annotations[ASSIGNMENT_ANNOTATION] = None
        return cls(
            jobset=jobset,
            **_identity(obj),
            suspend=True,
            at=at,
            annotations=annotations,
        )

    @classmethod
    def resume(cls, jobset: str, obj: Obj) -> SuspendJobSet:
        return cls(
            jobset=jobset,
            **_identity(obj),
            suspend=False,
        )

    def patch(self) -> Obj:
        meta: Obj = {"resourceVersion": self.resource_version}
        if self.annotations:
            meta["annotations"] = dict(self.annotations)
        return {"metadata": meta, "spec": {"suspend": self.suspend}}

    def rebase(self, current: Obj) -> SuspendJobSet | None:
        if self.uid and _uid(current) != self.uid:
            raise Aborted(f"JobSet {self.jobset} was deleted and recreated")
        if self.suspend:
            if stamped(_annotations_of(current), self.at):
                return None  # this eviction's suspend was written already
            return SuspendJobSet.evict(self.jobset, current, self.at)
        if not (current.get("spec") or {}).get("suspend"):
            return None
        return SuspendJobSet.resume(self.jobset, current)

    def describe(self) -> str:
        if self.suspend:
            return f"suspend JobSet {self.jobset} (preempted)"
        return f"resume JobSet {self.jobset} (its preemption is over)"


class UngatePod(_Write):
    """One pod patch: add the node-affinity requirements and remove the placement gate."""

    op: Literal["ungate"] = "ungate"
    namespace: str
    name: str
    uid: str
    job: str
    requirements: tuple[dict[str, Any], ...]
    patch: Obj

    def rebase(self, current: Obj) -> UngatePod | None:
        if self.uid and _uid(current) != self.uid:
            raise Aborted(f"pod {self.namespace}/{self.name} was replaced")
        if (current.get("status") or {}).get("phase") in TERMINAL_PHASES or (
            current.get("metadata") or {}
        ).get("deletionTimestamp"):
            return None  # ended or going away meanwhile: nothing left to release
        patch = ungate_patch(current, list(self.requirements))
        return None if patch is None else self.model_copy(update={"patch": patch})

    def describe(self) -> str:
        reqs = ", ".join(f"{r['key']} In {r['values']}" for r in self.requirements)
        return f"ungate pod {self.namespace}/{self.name} ({self.job}: {reqs or 'no requirement'})"


class LabelNode(_Write):
    """Set (value) or clear (None) the node-selector label, taint and ownership mark on a node."""

    op: Literal["node"] = "node"
    name: str
    value: str | None
    patch: Obj

    def rebase(self, current: Obj) -> LabelNode | None:
        patch = node_label_patch(current, self.value)
        return None if patch is None else self.model_copy(update={"patch": patch})

    def describe(self) -> str:
        return (
            f"label node {self.name} for {self.value}"
            if self.value
            else f"unlabel node {self.name}"
        )


class EmitEvent(_Write):
    op: Literal["event"] = "event"
    namespace: str
    reason: str
    body: Obj
    plan_id: str = ""
    """For `Placed`: the placement announced."""

    def describe(self) -> str:
        return f"event {self.reason} on JobSet {self.jobset}: {self.body.get('message')}"


_CHECK_FIELDS = ("state", "message", "requeueAfterSeconds", "podSetUpdates")


def _entries(workload: Obj) -> list[Obj]:
    checks = (workload.get("status") or {}).get("admissionChecks") or []
    return [e for e in checks if isinstance(e, dict)]


class SetAdmissionCheck(_Write):
    """Set placer's entry in a Kueue Workload's `status.admissionChecks[]` (kueue/check.py).

    A JSON merge patch of the status subresource replaces the whole list, so it carries every
    entry as read, ours changed, and the Workload's resourceVersion as precondition: another
    check's controller writing meanwhile is a 409, and the write is rebased on what it wrote.
    """

    op: Literal["admission-check"] = "admission-check"
    namespace: str
    name: str
    uid: str
    resource_version: str
    entry: Obj
    """The new entry (its `name` is placer's check)."""
    previous_state: str
    """The state the decision was made on: a Workload whose check Kueue reset meanwhile (an
    eviction) is decided again next cycle, not overwritten."""
    checks: tuple[Obj, ...]

    def patch(self) -> Obj:
        return {
            "metadata": {"resourceVersion": self.resource_version},
            "status": {"admissionChecks": list(self.checks)},
        }

    @classmethod
    def on(
        cls, workload: Obj, entry: Obj, *, jobset: str, previous_state: str
    ) -> SetAdmissionCheck:
        checks = tuple(entry if e.get("name") == entry["name"] else e for e in _entries(workload))
        return cls(
            jobset=jobset,
            **_identity(workload),
            entry=entry,
            previous_state=previous_state,
            checks=checks,
        )

    def rebase(self, current: Obj) -> SetAdmissionCheck | None:
        if self.uid and _uid(current) != self.uid:
            raise Aborted(f"Workload {self.namespace}/{self.name} was deleted and recreated")
        now = next((e for e in _entries(current) if e.get("name") == self.entry["name"]), None)
        if now is None:
            raise Aborted(
                f"Workload {self.namespace}/{self.name} no longer has check {self.entry['name']}"
            )
        if all(now.get(f) == self.entry.get(f) for f in _CHECK_FIELDS):
            return None
        if now.get("state") != self.previous_state:
            raise Aborted(
                f"check {self.entry['name']} of Workload {self.namespace}/{self.name} went "
                f"{self.previous_state} -> {now.get('state')} meanwhile"
            )
        return SetAdmissionCheck.on(
            current, self.entry, jobset=self.jobset, previous_state=self.previous_state
        )

    def describe(self) -> str:
        return (
            f"set check {self.entry['name']} of Workload {self.namespace}/{self.name} to "
            f"{self.entry['state']}: {self.entry.get('message')}"
        )


ACTIVE_REASON = "Active"


def _active(check: Obj) -> bool:
    return any(
        isinstance(c, dict) and c.get("type") == "Active" and c.get("status") == "True"
        for c in (check.get("status") or {}).get("conditions") or []
    )


class ActivateCheck(_Write):
    """Set the `Active` condition of one of placer's AdmissionChecks: Kueue keeps a ClusterQueue
    listing a check inactive until the check's controller says it serves it."""

    op: Literal["activate"] = "activate"
    name: str
    resource_version: str
    conditions: tuple[Obj, ...]

    @classmethod
    def on(cls, check: Obj, *, now: str) -> ActivateCheck | None:
        """None when the check is Active already."""
        if _active(check):
            return None
        meta = check.get("metadata") or {}
        others = [
            c
            for c in (check.get("status") or {}).get("conditions") or []
            if isinstance(c, dict) and c.get("type") != "Active"
        ]
        active: Obj = {
            "type": "Active",
            "status": "True",
            "reason": ACTIVE_REASON,
            "message": "placer serves this check (controllerName placer.dev/placement)",
            "lastTransitionTime": now,
        }
        if meta.get("generation") is not None:
            active["observedGeneration"] = meta["generation"]
        return cls(
            name=str(meta.get("name") or ""),
            resource_version=resource_version(check),
            conditions=(*others, active),
        )

    def patch(self) -> Obj:
        return {
            "metadata": {"resourceVersion": self.resource_version},
            "status": {"conditions": list(self.conditions)},
        }

    def rebase(self, current: Obj) -> ActivateCheck | None:
        now = next((str(c.get("lastTransitionTime")) for c in self.conditions), "")
        return ActivateCheck.on(current, now=now)

    def describe(self) -> str:
        return f"mark AdmissionCheck {self.name} Active"


Write = (
    RecordAssignment
    | UngatePod
    | LabelNode
    | EmitEvent
    | SetAdmissionCheck
    | ActivateCheck
    | SuspendJobSet
)
