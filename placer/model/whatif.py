"""What-if transforms of a snapshot: drain nodes, add node pools, let a running JobSet finish.

`placer explain` and `placer capacity` apply these (`--drain`, `--add-pool`, `--remove`) before they
plan, and the explanations call `remove_jobset` to check "wait for X to finish" remedies. Each is a
pure function from a snapshot to a new snapshot, so a what-if never touches its input and can be
combined with others in any order the user gives.

- `drain`: nodes leave the cluster (a node name, or every node with a label `KEY=VALUE`: a whole
  domain). Pods on them are gone with them; nothing else changes.
- `add_pools_from`: nodes of the pools in a compact cluster description (`kind: ClusterDescription`,
  see `placer.model.snapshots.compact`), with its overrides and running load, appended.
- `remove_jobset`: a running JobSet finishes: its pods' requests go back to `free` and its host
  ports are released on every node (from `Node.jobset_usage`), and it no longer holds domains.
  When a node does not know the JobSet's usage (an older snapshot), only the hold is released, and
  the returned note says so.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from decimal import Decimal
from pathlib import Path

from placer.model.cluster import ClusterSnapshot, Node
from placer.model.errors import InputError
from placer.model.messages import echo
from placer.model.read.manifests import object_key, read_documents
from placer.model.resources import add_resources
from placer.model.snapshots.compact import DESCRIPTION_KIND, parse_description

__all__ = [
    "WhatIf",
    "add_pools_from",
    "apply_whatifs",
    "drain",
    "given_back",
    "remove_jobset",
    "running_jobsets",
    "running_priority",
    "without_jobsets",
]

WhatIf = tuple[str, str]
"""(kind, argument): ("drain", NODE | "KEY=VALUE"), ("add-pool", PATH), ("remove", "ns/name")."""


def drain(snapshot: ClusterSnapshot, target: str) -> tuple[ClusterSnapshot, str]:
    """Remove the node named `target`, or every node labeled `KEY=VALUE`; returns a note."""
    if "=" in target:
        key, _, value = target.partition("=")
        gone = {n.name for n in snapshot.nodes if n.labels.get(key) == value}
        missing = f"no node labeled {key}={value}"
    else:
        gone = {n.name for n in snapshot.nodes if n.name == target}
        missing = f"no node named {echo(target)}"
    if not gone:
        raise InputError(missing, field="--drain", code="unknown-node")
    nodes = tuple(n for n in snapshot.nodes if n.name not in gone)
    note = f"drained {_count(len(gone), 'node')} ({target})"
    return snapshot.model_copy(update={"nodes": nodes}), note


def add_pools_from(snapshot: ClusterSnapshot, path: str | Path) -> tuple[ClusterSnapshot, str]:
    """Append the nodes of every ClusterDescription in the file (pools, overrides, running load)."""
    source = str(path)
    if not Path(path).exists():
        raise InputError("no such file or directory (--add-pool)", source=source, code="missing")
    existing = {n.name for n in snapshot.nodes}
    added: list[Node] = []
    classes = dict(snapshot.priority_classes)
    for doc_source, doc in read_documents([path]):
        if doc.get("kind") != DESCRIPTION_KIND:
            raise InputError(
                f"expected kind {DESCRIPTION_KIND}, got {doc.get('kind') or 'no kind'}",
                source=doc_source,
                obj=object_key(doc),
                field="kind",
                code="add-pool",
            )
        part = parse_description(doc, source=doc_source)
        for n in part.nodes:
            if n.name in existing:
                raise InputError(
                    f"node {echo(n.name)} already exists in the cluster",
                    source=doc_source,
                    field="pools",
                    code="duplicate",
                )
            existing.add(n.name)
            added.append(n)
        for name, value in part.priority_classes.items():
            classes.setdefault(name, value)
    if not added:
        raise InputError("adds no nodes", source=source, field="pools", code="add-pool")
    nodes = (*snapshot.nodes, *added)
    note = f"added {_count(len(added), 'node')} from {source}"
    update = {"nodes": nodes, "priority_classes": dict(sorted(classes.items()))}
    return snapshot.model_copy(update=update), note


def running_jobsets(snapshot: ClusterSnapshot) -> list[str]:
    """`namespace/name` of every JobSet with pods on the snapshot, sorted."""
    return sorted({j for n in snapshot.nodes for j in n.jobsets})


def running_priority(snapshot: ClusterSnapshot, key: str) -> int | None:
    """The highest priority recorded for a running JobSet's pods, or None if none is known."""
    found = [
        u.priority
        for n in snapshot.nodes
        if (u := n.jobset_usage.get(key)) is not None and u.priority is not None
    ]
    return max(found) if found else None


def given_back(
    n: Node, leaving: Collection[str]
) -> tuple[dict[str, Decimal], tuple[tuple[int, str], ...], int]:
    """What node `n` offers once its running JobSets `leaving` ended: its free resources with
    their recorded usage added back (never above allocatable), its host ports without theirs
    (kept where a staying JobSet binds the same one), and how many of them had no usage
    recorded (there only their hold ends). One rule for every what-if and the time-aware pass."""
    free = dict(n.free)
    freed_ports: set[tuple[int, str]] = set()
    missing = 0
    for key in leaving:
        usage = n.jobset_usage.get(key)
        if usage is None:
            missing += 1
            continue
        free = add_resources(free, usage.requests)
        freed_ports.update(usage.host_ports)
    free = {k: Decimal(min(v, n.allocatable.get(k, v))) for k, v in free.items()}
    kept = {p for j, u in n.jobset_usage.items() if j not in leaving for p in u.host_ports}
    ports = tuple(p for p in n.used_host_ports if p not in freed_ports or p in kept)
    return free, ports, missing


def without_jobsets(
    snapshot: ClusterSnapshot, keys: Collection[str]
) -> tuple[ClusterSnapshot, int, int]:
    """The snapshot after the running JobSets `keys` finished, in one pass over the nodes: their
    usage given back, and the nodes reserved to them as held (`DomainReservation.held`, as the
    controller holds a victim's exclusive domain from other pods) released.

    Returns it with the number of nodes touched and of those whose usage was not recorded (there
    only the hold is released). The reservation pass empties every running JobSet at once this way.
    """
    gone = set(keys)
    nodes: list[Node] = []
    touched = 0
    unknown = 0
    for n in snapshot.nodes:
        leaving = gone.intersection(n.jobsets)
        if not leaving:
            nodes.append(n)
            continue
        touched += 1
        free, ports, missing = given_back(n, leaving)
        unknown += missing
        nodes.append(
            n.model_copy(
                update={
                    "free": free,
                    "used_host_ports": ports,
                    "jobsets": tuple(j for j in n.jobsets if j not in gone),
                    "jobset_usage": {j: u for j, u in n.jobset_usage.items() if j not in gone},
                }
            )
        )
    reservations = tuple(r for r in snapshot.reservations if not (r.held and r.jobset in gone))
    update: dict[str, object] = {"nodes": tuple(nodes)}
    if len(reservations) < len(snapshot.reservations):
        update["reservations"] = reservations
    return snapshot.model_copy(update=update), touched, unknown


def remove_jobset(snapshot: ClusterSnapshot, key: str) -> tuple[ClusterSnapshot, str]:
    """The snapshot after running JobSet `key` (`namespace/name`) finished; returns a note."""
    result, touched, unknown = without_jobsets(snapshot, (key,))
    if not touched:
        raise InputError(
            "no running JobSet of that name on the cluster",
            obj=key,
            field="--remove",
            code="unknown",
        )
    note = f"removed running JobSet {key} ({_count(touched, 'node')} freed)"
    if unknown:
        note += (
            f"; its usage on {_count(unknown, 'node')} is not recorded in the snapshot, so only "
            "its hold on domains was released there"
        )
    return result, note


def apply_whatifs(
    snapshot: ClusterSnapshot, whatifs: Sequence[WhatIf]
) -> tuple[ClusterSnapshot, list[str]]:
    """Apply what-ifs in the order given; returns the snapshot and one note per what-if."""
    notes: list[str] = []
    for kind, arg in whatifs:
        if kind == "drain":
            snapshot, note = drain(snapshot, arg)
        elif kind == "add-pool":
            snapshot, note = add_pools_from(snapshot, arg)
        elif kind == "remove":
            snapshot, note = remove_jobset(snapshot, arg)
        else:
            raise InputError(f"unknown what-if {echo(kind)}", code="usage")
        notes.append(note)
    return snapshot, notes


def _count(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"
