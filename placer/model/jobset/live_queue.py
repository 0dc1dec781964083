"""The queue of a live cluster, for `placer explain --kubeconfig`: pending JobSets and what
Kueue still owes each.

The live snapshot (live.py) holds what runs; the JobSets still waiting (suspended, or gated) are
read here, so a user asks about a JobSet by name without exporting its manifest. Where Kueue is
installed, each pending JobSet's Workload says whether Kueue has reserved its quota
(`kueue_standing`): a JobSet without quota waits for Kueue, not for placer, and explain says so
beside when it would start once admitted. A JobSet that does not parse is skipped with a warning,
as the controller does: one bad object never stops the answer about the others.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from placer.model.errors import ClusterError, InputError
from placer.model.jobset.parse import parse_jobset
from placer.model.kube.client import KubeApis, api_client, list_all
from placer.model.kueue.topology import KUEUE_GROUP
from placer.model.kueue.workload import (
    condition_true,
    kueue_standing,
    owner_of,
    waits_for_quota,
)
from placer.model.priorities import PriorityClasses
from placer.model.workload import JobSetRequest

__all__ = ["LiveQueue", "load_live_queue"]

log = logging.getLogger(__name__)

JOBSET_GROUP, JOBSET_VERSION = "jobset.x-k8s.io", "v1alpha2"
WORKLOAD_VERSIONS = ("v1beta2", "v1beta1")
"""Newest first: Kueue v0.20 serves only v1beta2, older releases v1beta1 (and both a while)."""
ABSENT = (401, 403, 404)
"""Statuses meaning "not installed, or not for this user": the queue is read without it."""


@dataclass(frozen=True)
class LiveQueue:
    jobsets: list[JobSetRequest] = field(default_factory=list)
    """The cluster's pending JobSets: not finished, not running, in creation order."""
    kueue: Mapping[str, str] = field(default_factory=dict)
    """JobSet key -> what Kueue still owes it (`kueue_standing`); absent once admitted, or
    without Kueue."""
    quota_waiting: frozenset[str] = frozenset()
    """JobSets whose Workload has no quota reserved: none of them starts before Kueue says."""
    unplannable: Mapping[str, InputError] = field(default_factory=dict)
    """JobSet key -> why its manifest cannot be planned (left out of `jobsets`, with a warning):
    `placer explain` of one answers with that."""


def _finished(obj: Mapping[str, Any]) -> bool:
    status = obj.get("status") or {}
    return bool(status.get("terminalState")) or any(
        condition_true(obj, kind) for kind in ("Completed", "Failed")
    )


def _list(api: KubeApis, group: str, version: str, plural: str) -> list[dict[str, Any]]:
    items, _ = list_all(
        api.custom.list_cluster_custom_object,
        f"listing {plural} ({group}/{version})",
        group=group,
        version=version,
        plural=plural,
    )
    return items


def _workloads(api: KubeApis) -> list[dict[str, Any]]:
    """Every Workload in the newest version served; none where Kueue is not installed."""
    for version in WORKLOAD_VERSIONS:
        try:
            return _list(api, KUEUE_GROUP, version, "workloads")
        except ClusterError as e:
            if e.status not in ABSENT:
                raise
    return []


def _pending(
    objs: list[dict[str, Any]],
    running: Collection[str],
    priorities: PriorityClasses,
    source: str,
    unplannable: dict[str, InputError],
) -> list[JobSetRequest]:
    objs = sorted(
        objs,
        key=lambda o: (
            str((o.get("metadata") or {}).get("creationTimestamp") or ""),
            str((o.get("metadata") or {}).get("namespace") or ""),
            str((o.get("metadata") or {}).get("name") or ""),
        ),
    )
    result: list[JobSetRequest] = []
    for obj in objs:
        if _finished(obj):
            continue
        try:
            js = parse_jobset(
                obj,
                source=source,
                order=len(result),
                priorities=priorities,
            )
        except InputError as e:
            log.warning("skipping a JobSet that cannot be planned: %s", e)
            meta = obj.get("metadata") or {}
            unplannable[f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"] = e
            continue
        if js.key not in running:
            result.append(js)
    return result


def load_live_queue(
    kubeconfig: str | None,
    running: Collection[str],
    priorities: PriorityClasses,
) -> LiveQueue:
    """The pending JobSets of the cluster `kubeconfig` points at (those not in `running`, the
    live snapshot's running JobSets), and Kueue's standing for each."""
    api = KubeApis(api_client(kubeconfig))
    try:
        source = api.host
        unplannable: dict[str, InputError] = {}
        jobsets = _pending(
            _list(api, JOBSET_GROUP, JOBSET_VERSION, "jobsets"),
            running,
            priorities,
            source,
            unplannable,
        )
        pending = {js.key for js in jobsets}
        kueue: dict[str, str] = {}
        waiting: set[str] = set()
        for wl in _workloads(api):
            owner = owner_of(wl)
            namespace = str((wl.get("metadata") or {}).get("namespace") or "")
            key = f"{namespace}/{owner[1]}" if owner is not None and owner[0] == "JobSet" else ""
            if key in pending and (standing := kueue_standing(wl)):
                kueue[key] = standing
                if waits_for_quota(wl):
                    waiting.add(key)
    finally:
        api.close()
    return LiveQueue(
        jobsets=jobsets,
        kueue=kueue,
        quota_waiting=frozenset(waiting),
        unplannable=unplannable,
    )
