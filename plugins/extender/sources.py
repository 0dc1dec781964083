"""Where the extender's rows come from: plan files, snapshot files and API objects, turned into
`JobEntry` rows and node labels. Pure conversions; no network.

`--plan` alone gives the reservations and, through the planned nodes, part of each domain's
membership; a domain's unplanned nodes are known only from node labels, which `--cluster` (the same
snapshot files `placer plan` reads), the Node watch, or the NodeLists of a non-node-cache-capable
scheduler provide. `jobset_entries` reads the `placer.dev/assignment` annotation of one JobSet
object; the watch loop that calls it lives in `kube_source`, the one module importing the
Kubernetes client.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from placer.model.assignment import ASSIGNMENT_ANNOTATION, Assignment
from placer.model.errors import InputError
from placer.model.plan import Plan
from placer.model.read.files import read_input_text
from placer.model.read.loading import load_json
from plugins.extender.state import (
    MAX_START_S,
    JobEntry,
    entries_from_assignment,
    entries_from_plan,
    reservation_start_ok,
    reservations_from_plan,
)
from plugins.extender.store import DEFAULT_GUARD_S, ExtenderStore

__all__ = [
    "TERMINAL_STATES",
    "jobset_entries",
    "ledger_reservations",
    "load_cluster_labels",
    "load_plan",
    "node_labels",
    "store_from_files",
]

log = logging.getLogger(__name__)

TERMINAL_STATES = frozenset({"Completed", "Failed"})
"""JobSet `status.terminalState` values after which its domains are free again."""


def load_plan(path: str | Path) -> Plan:
    """Read a Plan document; any problem is one InputError naming the file (and the JobSet and
    field when one is out of range: a start the extender could not date, a NaN that would turn
    its reservation guard off)."""
    source = str(path)
    doc = load_json(read_input_text(path, field="--plan"), source=source, what="plan JSON")
    try:
        plan = Plan.model_validate(doc)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise InputError(
            f"not a placer plan: {first['msg']}", source=source, field=where, code="plan"
        ) from None
    for i, outcome in enumerate(plan.jobsets):
        start = outcome.expected_start_seconds
        if start is not None and start > MAX_START_S:
            raise InputError(
                f"must be at most {MAX_START_S:.0f} seconds (about 300 years), got {start:g}",
                source=source,
                obj=outcome.key,
                field=f"jobsets.{i}.expected_start_seconds",
                code="plan",
            )
    return plan


def load_cluster_labels(paths: Sequence[str | Path]) -> dict[str, dict[str, str]]:
    """node name -> labels, from the snapshot files `placer plan --cluster` reads."""
    from placer.model.snapshots.load import load_snapshot  # the loader pulls in the resource parser

    snapshot = load_snapshot(list(paths))
    return {n.name: dict(n.labels) for n in snapshot.nodes}


def store_from_files(
    plan_path: str | Path,
    cluster_paths: Sequence[str | Path] = (),
    *,
    pinned: bool = False,
    guard_s: float = DEFAULT_GUARD_S,
) -> ExtenderStore:
    """A ready store from a plan file, with node labels from snapshot files when given. The
    plan's reservations (`reserved_domains`) start `expected_start_seconds` after the file is
    read: a plan records no instant of its own."""
    plan = load_plan(plan_path)
    store = ExtenderStore(synced=True, guard_s=guard_s)
    entries = entries_from_plan(plan, pinned=pinned)
    store.replace_plan(entries)
    store.replace_reservations(reservations_from_plan(plan, time.time()))
    if cluster_paths:
        store.replace_nodes(load_cluster_labels(cluster_paths))
    elif any(e.domain is not None for e in entries):
        log.warning(
            "no --cluster given: nodes of reserved domains are known only where the plan puts "
            "pods, or from full NodeList requests"
        )
    view = store.view()
    log.info(
        "plan %s: %d child Jobs of %d JobSets, %d reserved nodes known",
        plan_path,
        len(view.jobs),
        len(store.jobsets()),
        view.reserved_nodes,
    )
    return store


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def jobset_entries(obj: Mapping[str, Any]) -> tuple[str, list[JobEntry]]:
    """`(namespace/name, rows)` for one JobSet object. No rows when it carries no assignment, has
    finished, or carries an unreadable one or one copied from another JobSet (both logged): a
    record the extender cannot trust must not keep anyone out."""
    meta = _meta(obj)
    key = f"{meta.get('namespace') or 'default'}/{meta.get('name') or ''}"
    status = obj.get("status")
    if isinstance(status, Mapping) and status.get("terminalState") in TERMINAL_STATES:
        return key, []
    annotations = meta.get("annotations")
    text = annotations.get(ASSIGNMENT_ANNOTATION) if isinstance(annotations, Mapping) else None
    if not isinstance(text, str) or not text:
        return key, []
    try:
        assignment = Assignment.from_annotation(text, obj=f"JobSet/{key}")
    except InputError as e:
        log.warning("ignoring the placement record: %s", e)
        return key, []
    if assignment.jobset != key:
        log.warning(
            "JobSet/%s carries the placement record of %s; ignoring it", key, assignment.jobset
        )
        return key, []
    return key, entries_from_assignment(assignment)


def ledger_reservations(obj: Mapping[str, Any] | None) -> list[JobEntry]:
    """Reservation rows from the controller's placement ledger ConfigMap (`placer-ledger`): each
    reserved domain with its expected start (epoch seconds). Placements are read from the
    JobSets' records as before; unreadable entries were logged by the reader and hold nothing."""
    from placer.controller.decide.records.ledger import read_ledger

    if obj is None:
        return []
    ledger = read_ledger(dict(obj), str(_meta(obj).get("namespace") or ""))
    rows: list[JobEntry] = []
    for entry in ledger.entries.values():
        if not entry.soft or entry.start is None:
            continue
        if not reservation_start_ok(entry.start):
            log.warning(
                "ledger entry of %s: start %r is not an instant the extender can keep; ignored",
                entry.owner,
                entry.start,
            )
            continue
        for name, job in sorted(entry.record.jobs.items()):
            if job.domain is not None:
                rows.append(
                    JobEntry(
                        jobset=entry.owner,
                        job=f"reservation-{name}",
                        domain=job.domain,
                        reserved_from=entry.start,
                        past_max_wait=entry.past_max_wait,
                    )
                )
    return rows


def node_labels(obj: Mapping[str, Any]) -> tuple[str, dict[str, str]]:
    """`(name, labels)` of one Node object (API JSON shape)."""
    meta = _meta(obj)
    labels = meta.get("labels")
    clean = {str(k): str(v) for k, v in labels.items()} if isinstance(labels, Mapping) else {}
    return str(meta.get("name") or ""), clean
