"""The one seam between the controller's logic and a cluster: a small `ClusterAdapter` protocol.

Everything the controller does to a cluster goes through these six calls, on plain JSON-shaped
dicts exactly as the API server serves them. Two implementations exist: `KubeAdapter` (the official
`kubernetes` client, the only controller module that imports it) and `MemoryCluster` (an in-memory
cluster for unit tests and the benchmarks' simulation). Failures are `ClusterError`s carrying the
HTTP status, so the retry policy (409 -> rebase, 429/5xx -> back off) is written once, above this.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any, Literal, Protocol, get_args

from pydantic import BaseModel, ConfigDict

from placer.controller.act.lease import LeaderSettings

__all__ = [
    "KINDS",
    "ClusterAdapter",
    "Kind",
    "Listing",
    "WatchEvent",
    "copy_json",
    "object_key",
    "resource_version",
]

Kind = Literal[
    "nodes",
    "pods",
    "jobsets",
    "priorityclasses",
    "topologies",
    "events",
    "configmaps",
    "leases",
    "workloads",
    "admissionchecks",
    "clusterqueues",
    "resourceflavors",
]
KINDS: tuple[Kind, ...] = get_args(Kind)
"""Cluster-scoped: nodes, priorityclasses, topologies (Kueue's `Topology`, listed only: they give
the topology levels as `placer plan` reads them). Namespaced: pods, jobsets, events, configmaps
(the placement ledger) and leases (read for leader election). With `--kueue-admission-check`
also Kueue's Workloads (namespaced; placer patches only their status: `patch("workloads", ...)`
is a merge patch of the status subresource), AdmissionChecks, ClusterQueues and ResourceFlavors
(cluster-scoped, read only)."""

Obj = dict[str, Any]


class Listing(BaseModel):
    """A consistent list: the items and the resourceVersion to start watching from."""

    model_config = ConfigDict(frozen=True)
    items: list[Obj]
    resource_version: str


class WatchEvent(BaseModel):
    model_config = ConfigDict(frozen=True)
    type: Literal["ADDED", "MODIFIED", "DELETED", "BOOKMARK"]
    object: Obj


def object_key(obj: dict[str, Any]) -> tuple[str, str]:
    """(namespace or "", name): how caches and writes identify an object."""
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def resource_version(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


_SCALARS = (str, int, float, type(None))


def copy_json(obj: Any) -> Any:
    """A deep copy of JSON-shaped data (dicts, lists, scalars), several times faster than
    `copy.deepcopy`: every object the API server or a patch carries is of that shape. Scalars,
    most of the values, are shared without a call."""
    if isinstance(obj, dict):
        return {k: v if isinstance(v, _SCALARS) else copy_json(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [v if isinstance(v, _SCALARS) else copy_json(v) for v in obj]
    return obj


class ClusterAdapter(Protocol):
    """What the controller needs from a cluster. `namespace=None` means all namespaces.

    Errors: `placer.model.errors.ClusterError` with `status` (404 gone, 409 conflict or already
    exists, 410 watch expired, 429/5xx temporary) and `temporary` set for the ones worth retrying.
    """

    def list(
        self, kind: Kind, *, namespace: str | None = None, label_selector: str = ""
    ) -> Listing: ...

    def watch(
        self,
        kind: Kind,
        *,
        resource_version: str,
        namespace: str | None = None,
        label_selector: str = "",
        timeout_s: float = 60.0,
        on_connected: Callable[[], None] | None = None,
    ) -> Iterator[WatchEvent]:
        """Changes after `resource_version` until `timeout_s`; ClusterError(410) if too old.

        `on_connected` runs once the API server has accepted the watch (before any event), so a
        caller can tell a healthy, quiet watch from one that keeps failing.
        """
        ...

    def get(self, kind: Kind, name: str, *, namespace: str | None = None) -> Obj: ...

    def patch(self, kind: Kind, name: str, patch: Obj, *, namespace: str | None = None) -> Obj:
        """JSON merge patch (RFC 7386); `metadata.resourceVersion` in it is a precondition."""
        ...

    def create(self, kind: Kind, obj: Obj) -> Obj: ...

    def lead(
        self,
        settings: LeaderSettings,
        *,
        on_started: Callable[[], None],
        on_stopped: Callable[[], None],
        stop: threading.Event,
    ) -> None:
        """Block, running `on_started` while this identity holds the Lease; `on_stopped` after.

        Once `stop` is set the election makes no more API calls and returns soon (a replica that
        stops lets its lease expire rather than keep talking to the API server).
        """
        ...
