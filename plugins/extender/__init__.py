"""kube-scheduler extender for placer: keeps every pod off domains the plan reserved, steers planned
pods onto theirs, and can bind. See deploy/scheduler/README.md for wiring it into a profile.

Modules, bottom up: `pods` (a pod's identity), `state` (the plan's rows and their index), `store`
(the thread-safe holder of the state), `decide` (pure filter/prioritize), `wire` (the extender
JSON), `server` (HTTP), `sources` (plan files and API objects to rows), `kube_source` (the only
Kubernetes API user: watches and Bindings, through placer's boundary `placer.model.kube.client`),
`service` (assembly for the CLI). This package
exports the pieces other code calls; `kube_source` stays out so importing the extender never needs
the client.
"""

from __future__ import annotations

from plugins.extender.decide import FilterResult, HostScore, filter_nodes, prioritize
from plugins.extender.pods import PodInfo, pod_info
from plugins.extender.server import Binder, ExtenderApp, ExtenderServer
from plugins.extender.state import (
    JobEntry,
    StateView,
    entries_from_assignment,
    entries_from_plan,
)
from plugins.extender.store import ExtenderStore

__all__ = [
    "Binder",
    "ExtenderApp",
    "ExtenderServer",
    "ExtenderStore",
    "FilterResult",
    "HostScore",
    "JobEntry",
    "PodInfo",
    "StateView",
    "entries_from_assignment",
    "entries_from_plan",
    "filter_nodes",
    "pod_info",
    "prioritize",
]
