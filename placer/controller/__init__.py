"""The in-cluster controller: plan pending JobSets together and write placements back.

One cycle observes the cluster once, decides in pure functions, commits every placement to the
cluster-wide placement ledger before anything else is written, then writes (reconcile.py lists
the phases). The folders say which side of that line a module is on:

- `decide/`: pure decisions over one observed view, a folder per phase: the records and writes
  as data, the observation, its review, planning and reservations, the Kueue check, and the round
  put together (the commit to make, `plan_writes`).
- `act/`: what touches a cluster: `KubeAdapter` (the only module importing `kubernetes`),
  `MemoryCluster` (in memory, for tests and simulations), the watch cache, ledger commits, the
  write executor with its retry policy, leader election.
- here: the cycle (`reconcile.Controller`), when cycles run (`loop`), what one cycle leaves the
  next (`memory`), its settings (`config`), its clocks (`clocks`), report, metrics and logs, and the
  `adapter.ClusterAdapter` seam both sides meet at.
"""

from __future__ import annotations

from placer.controller.act.memory_adapter import MemoryCluster
from placer.controller.adapter import ClusterAdapter
from placer.controller.decide.round.writeplan import plan_writes
from placer.controller.reconcile import Controller, ControllerConfig, CycleReport

__all__ = [
    "ClusterAdapter",
    "Controller",
    "ControllerConfig",
    "CycleReport",
    "MemoryCluster",
    "plan_writes",
]
