"""`ClusterState`: the one consistent view of the cluster's objects that a cycle decides on.

The watch cache (cache.py) hands it over (`ClusterCache.state()`); every pure decision (survey,
snapshot, review, the ledger view, `plan_writes`) reads it and nothing else of the cluster. Kept
apart from the cache so the deciding code depends on the view, not on the code that fills it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from placer.controller.adapter import Obj

__all__ = ["ClusterState", "Key"]

Key = tuple[str, str]
"""(namespace or "", name) of a namespaced object."""


@dataclass(frozen=True)
class ClusterState:
    """One consistent view for one reconcile cycle. Objects are API JSON; never mutate them."""

    nodes: Mapping[str, Obj] = field(default_factory=dict)
    pods: Mapping[Key, Obj] = field(default_factory=dict)
    jobsets: Mapping[Key, Obj] = field(default_factory=dict)
    priority_classes: Mapping[str, Obj] = field(default_factory=dict)
    topologies: Mapping[str, Obj] = field(default_factory=dict)
    """Kueue Topologies, by name: the topology levels, as `placer plan` reads them."""
    configmaps: Mapping[Key, Obj] = field(default_factory=dict)
    """The placement ledger (the only ConfigMap the controller watches)."""
    workloads: Mapping[Key, Obj] = field(default_factory=dict)
    """Kueue Workloads (watched only with --kueue-admission-check), as the rest by key."""
    admission_checks: Mapping[str, Obj] = field(default_factory=dict)
    cluster_queues: Mapping[str, Obj] = field(default_factory=dict)
    resource_flavors: Mapping[str, Obj] = field(default_factory=dict)
    version: int = 0
    """Bumped by every change the cache sees."""
    capacity_version: int = 0
    """Bumped only by changes that can free or take capacity (nodes, pod binding or ending,
    JobSets appearing, finishing or going away): worth re-planning an unschedulable JobSet for."""
    snapshot_version: int = 0
    """Bumped only by those of them in what the planner's snapshot is built from (nodes, pods,
    PriorityClasses, Topologies): a Workload's quota or a JobSet's end re-plans, but on the same
    snapshot (at 10,000 nodes rebuilding it is half a second of every Kueue arrival's cycle)."""
