"""The planner's snapshot of the controller's cached objects.

Only pods bound to a node take room; under the node-labels binding placer's own node-selector
labels and taints are taken off (they are reservations the records already count), while such a
label placer did not set holds its node for that child Job. The levels are `--levels`, else the
cluster's Kueue Topology, as for `placer plan --kubeconfig` on the same cluster.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from placer.controller.decide.observe.domains import reserve
from placer.controller.decide.observe.state import ClusterState
from placer.controller.decide.observe.survey import Binding
from placer.controller.decide.records.bindings import (
    LABELED_BY_ANNOTATION,
    NAMESPACED_JOB_LABEL,
    NO_SCHEDULE_TAINT,
)
from placer.model.cluster import ClusterSnapshot
from placer.model.errors import InputError
from placer.model.kueue.topology import cluster_topology
from placer.model.snapshots.load import snapshot_from_objects

__all__ = ["planning_snapshot"]

log = logging.getLogger(__name__)


def _strip_node_labels(obj: Mapping[str, Any]) -> tuple[Mapping[str, Any], str | None]:
    """The node without the node-selector label and taint, and the holder it implies (if any).

    Under the node-labels binding every managed pod tolerates the taint, and placer's own labels are
    reservations already counted from the records; a label placer did not set (no ownership mark)
    reserves the node for that child Job, as far as placer knows.
    """
    meta = obj.get("metadata") or {}
    labels = meta.get("labels") or {}
    taints = (obj.get("spec") or {}).get("taints") or []
    value = labels.get(NAMESPACED_JOB_LABEL)
    ours = [t for t in taints if isinstance(t, Mapping) and t.get("key") == NO_SCHEDULE_TAINT.key]
    if value is None and not ours:
        return obj, None
    mark = (meta.get("annotations") or {}).get(LABELED_BY_ANNOTATION)
    new_meta = {**meta, "labels": {k: v for k, v in labels.items() if k != NAMESPACED_JOB_LABEL}}
    new_spec = {**(obj.get("spec") or {}), "taints": [t for t in taints if t not in ours]}
    holder = f"label:{value}" if value is not None and value != mark else None
    return {**obj, "metadata": new_meta, "spec": new_spec}, holder


def planning_snapshot(
    state: ClusterState, *, binding: Binding, levels: Sequence[str] = ()
) -> ClusterSnapshot:
    """The planner's snapshot of the cached objects (node-labels: see `_strip_node_labels`)."""
    nodes: list[Mapping[str, Any]] = []
    holders: dict[str, list[str]] = {}
    for name, raw in sorted(state.nodes.items()):
        obj: Mapping[str, Any] = raw
        if binding == "node-labels":
            obj, holder = _strip_node_labels(raw)
            if holder:
                holders[name] = [holder]
        nodes.append(obj)
    # Only pods bound to a node take room there; the gated ones waiting for a plan are most.
    bound = [p for p in state.pods.values() if (p.get("spec") or {}).get("nodeName")]
    topology = ("", ()) if levels else _kueue_topology(state)
    snapshot = snapshot_from_objects(
        nodes,
        bound,
        state.priority_classes.values(),
        source="cluster",
        levels=levels or topology[1],
        kueue_topology=topology[0],
    )
    return reserve(snapshot, holders)


def _kueue_topology(state: ClusterState) -> tuple[str, tuple[str, ...]]:
    """The cluster's Kueue Topology levels, read as `placer plan --kubeconfig` reads them, so the
    controller plans on the same levels (and leaves out the same unlabeled nodes). A Topology
    without levels is refused by Kueue's own validation; should one appear, the controller warns
    and plans without levels rather than stop."""
    try:
        return cluster_topology(
            [state.topologies[n] for n in sorted(state.topologies)], source="cluster"
        )
    except InputError as e:
        log.warning("%s; planning without its levels", e)
        return "", ()
