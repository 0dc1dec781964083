"""The in-cluster controller: plan pending JobSets together and write placements back.

Decisions are pure functions (survey -> review -> solve -> ledger change -> plan_writes) over one
observed view (`observed.Observed`); every placement is committed to the cluster-wide placement
ledger (ledger.py, commit.py) before anything else is written. Everything that touches a cluster
goes through the `ClusterAdapter` protocol, implemented over the official client
(`kube_adapter.KubeAdapter`, the only module importing `kubernetes`) and in memory
(`memory_adapter.MemoryCluster`, for tests and simulations). `Controller` runs the loop.
"""

from __future__ import annotations

from placer.controller.act.memory_adapter import MemoryCluster
from placer.controller.adapter import ClusterAdapter
from placer.controller.decide.writeplan import plan_writes
from placer.controller.reconcile import Controller, ControllerConfig, CycleReport

__all__ = [
    "ClusterAdapter",
    "Controller",
    "ControllerConfig",
    "CycleReport",
    "MemoryCluster",
    "plan_writes",
]
