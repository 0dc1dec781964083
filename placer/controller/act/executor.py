"""Sending the decided writes through the adapter, with the one retry policy of the controller.

- 409 Conflict: re-read the object and `rebase` the write on it (see writes.py); for an Event, the
  name already exists, which means it was already emitted: done.
- 404 Not Found: the object went away; nothing to do (a lost record drops the JobSet's writes).
- 429 and 5xx (and transport errors): back off exponentially, then give up for this cycle; the next
  cycle decides again from fresh state.
- Anything else (403, 422): a bug or a policy refusal; logged and counted, never retried blindly.

A failed or aborted record write drops every later write of the same JobSet, so no pod is ungated
and no node labeled without its record in the cluster; so does a failed suspend of a preempted
JobSet (no `Preempted` event before it is suspended; the next cycle tries again).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial

from placer.controller.adapter import ClusterAdapter, Kind, Obj
from placer.controller.decide.records.writes import (
    Aborted,
    ActivateCheck,
    EmitEvent,
    LabelNode,
    RecordAssignment,
    SetAdmissionCheck,
    SuspendJobSet,
    UngatePod,
    Write,
)
from placer.model.errors import ClusterError

__all__ = ["ExecReport", "RetriesExhausted", "RetryPolicy", "execute", "with_retries"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 5
    """Tries per write on 429/5xx/transport errors."""
    conflicts: int = 5
    """Rebases per write on 409 before giving up for this cycle."""
    base_delay_s: float = 0.2
    max_delay_s: float = 10.0

    def delay(self, failures: int) -> float:
        return float(min(self.max_delay_s, self.base_delay_s * 2 ** max(0, failures - 1)))


@dataclass
class ExecReport:
    done: list[Write] = field(default_factory=list)
    """Written (or found already written)."""
    failed: list[tuple[Write, str]] = field(default_factory=list)
    dropped: list[tuple[Write, str]] = field(default_factory=list)
    """Not attempted, or abandoned because their premise no longer held."""
    calls: int = 0
    """API calls made, retries and re-reads included."""


def _kind(w: Write) -> Kind:
    match w:
        case RecordAssignment() | SuspendJobSet():
            return "jobsets"
        case UngatePod():
            return "pods"
        case LabelNode():
            return "nodes"
        case EmitEvent():
            return "events"
        case SetAdmissionCheck():
            return "workloads"
        case ActivateCheck():
            return "admissionchecks"
    raise TypeError(w)  # pragma: no cover


def _send(adapter: ClusterAdapter, w: Write) -> Obj:
    match w:
        case RecordAssignment() | SuspendJobSet():
            return adapter.patch("jobsets", w.name, w.patch(), namespace=w.namespace)
        case UngatePod():
            return adapter.patch("pods", w.name, w.patch, namespace=w.namespace)
        case LabelNode():
            return adapter.patch("nodes", w.name, w.patch)
        case EmitEvent():
            return adapter.create("events", w.body)
        case SetAdmissionCheck():
            return adapter.patch("workloads", w.name, w.patch(), namespace=w.namespace)
        case ActivateCheck():
            return adapter.patch("admissionchecks", w.name, w.patch())
    raise TypeError(w)  # pragma: no cover


def _read(adapter: ClusterAdapter, w: Write) -> Obj:
    match w:
        case RecordAssignment() | SuspendJobSet():
            return adapter.get("jobsets", w.name, namespace=w.namespace)
        case UngatePod():
            return adapter.get("pods", w.name, namespace=w.namespace)
        case LabelNode():
            return adapter.get("nodes", w.name)
        case SetAdmissionCheck():
            return adapter.get("workloads", w.name, namespace=w.namespace)
        case ActivateCheck():
            return adapter.get("admissionchecks", w.name)
    raise TypeError(w)  # pragma: no cover


def _rebase(w: Write, current: Obj) -> Write | None:
    match w:
        case (
            RecordAssignment()
            | UngatePod()
            | LabelNode()
            | SetAdmissionCheck()
            | ActivateCheck()
            | SuspendJobSet()
        ):
            return w.rebase(current)
    return None


class _Failed(Exception):
    pass


class RetriesExhausted(ClusterError):
    """A temporary API error persisted through every try of the retry policy."""

    def __init__(self, message: str) -> None:
        super().__init__(message, temporary=True)


def with_retries(
    call: Callable[[], Obj],
    policy: RetryPolicy,
    sleep: Callable[[float], None],
    on_call: Callable[[], None] = lambda: None,
) -> Obj:
    """`call()`, retried with backoff on temporary errors (429, 5xx, transport); raises
    `RetriesExhausted` after `policy.attempts` tries, and any other `ClusterError` at once."""
    failures = 0
    while True:
        on_call()
        try:
            return call()
        except ClusterError as e:
            if e.status in (404, 409) or not (e.temporary or e.status is None):
                raise
            failures += 1
            if failures >= policy.attempts:
                raise RetriesExhausted(f"gave up after {failures} tries: {e}") from e
            log.info("temporary API error (%s); retrying in %.1fs", e, policy.delay(failures))
            sleep(policy.delay(failures))


def _attempt(
    adapter: ClusterAdapter,
    call: Callable[[], Obj],
    policy: RetryPolicy,
    report: ExecReport,
    sleep: Callable[[float], None],
) -> Obj:
    """One call, retried on temporary errors; 404/409/others are raised to the caller."""

    def count() -> None:
        report.calls += 1

    try:
        return with_retries(call, policy, sleep, count)
    except RetriesExhausted as e:
        raise _Failed(str(e)) from e


def _apply(
    adapter: ClusterAdapter,
    w: Write,
    policy: RetryPolicy,
    report: ExecReport,
    on_object: Callable[[Kind, Obj], None],
    sleep: Callable[[float], None],
) -> str:
    """Returns "done" or "gone"; raises _Failed or Aborted."""
    current: Write | None = w
    conflicts = 0
    while current is not None:
        pending = current
        try:
            on_object(
                _kind(pending),
                _attempt(adapter, partial(_send, adapter, pending), policy, report, sleep),
            )
            return "done"
        except ClusterError as e:
            if e.status == 404:
                return "gone"
            if e.status != 409:
                raise _Failed(str(e)) from e
            if isinstance(pending, EmitEvent):
                return "done"
            conflicts += 1
            if conflicts > policy.conflicts:
                raise _Failed(f"still conflicting after {conflicts} rebases") from e
            try:
                fresh = _attempt(adapter, partial(_read, adapter, pending), policy, report, sleep)
            except ClusterError as e2:
                if e2.status == 404:
                    return "gone"
                raise _Failed(str(e2)) from e2
            on_object(_kind(pending), fresh)
            current = _rebase(pending, fresh)
    return "done"


def execute(
    adapter: ClusterAdapter,
    writes: Sequence[Write],
    *,
    policy: RetryPolicy | None = None,
    on_object: Callable[[Kind, Obj], None] = lambda kind, obj: None,
    sleep: Callable[[float], None] = time.sleep,
) -> ExecReport:
    """Send `writes` in order; `on_object` receives every object the API server returns."""
    policy = policy or RetryPolicy()
    report = ExecReport()
    lost: dict[str, str] = {}
    for w in writes:
        if w.jobset and w.jobset in lost:
            report.dropped.append((w, lost[w.jobset]))
            continue
        try:
            outcome = _apply(adapter, w, policy, report, on_object, sleep)
        except Aborted as e:
            log.warning("dropped %s: %s", w.describe(), e)
            report.dropped.append((w, str(e)))
            if isinstance(w, RecordAssignment | SuspendJobSet):
                lost[w.jobset] = str(e)
            continue
        except _Failed as e:
            log.error("failed to %s: %s", w.describe(), e)
            report.failed.append((w, str(e)))
            if isinstance(w, RecordAssignment | SuspendJobSet):
                lost[w.jobset] = f"{w.op} not written: {e}"
            continue
        if outcome == "gone" and isinstance(w, RecordAssignment | SuspendJobSet):
            lost[w.jobset] = "JobSet is gone"
            report.dropped.append((w, "JobSet is gone"))
            continue
        if log.isEnabledFor(logging.INFO):  # one line per write: thousands on a large plan
            log.info("%s%s", w.describe(), "" if outcome == "done" else " (object gone)")
        report.done.append(w)
    return report
