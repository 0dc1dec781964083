"""A snapshot of a live cluster over the official Kubernetes client (`placer plan --live`).

It only lists Nodes, Pods, PriorityClasses and Kueue Topologies, as raw JSON (no client model
objects, so the shape is exactly kubectl's), and hands them to `snapshot_from_objects`, so a live
snapshot and a `kubectl get -o json` file of the same cluster give the same result. Client setup,
paging and the conversion of API and transport failures into `ClusterError`s are the boundary's
(`placer.model.kube.client`), shared with the controller and the extender.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from placer.model.cluster import ClusterSnapshot
from placer.model.errors import ClusterError
from placer.model.kube.client import KubeApis, api_client, list_all
from placer.model.kueue.topology import KUEUE_GROUP, TOPOLOGY_VERSIONS, cluster_topology
from placer.model.snapshots.load import snapshot_from_objects
from placer.model.snapshots.running import (
    TERMINAL_PHASES,
    with_expected_durations,
    with_preemption_facts,
)

__all__ = ["load_live_snapshot"]

log = logging.getLogger(__name__)

_NON_TERMINAL = ",".join(f"status.phase!={p}" for p in sorted(TERMINAL_PHASES))


def _list_all(call: Callable[..., Any], what: str, **params: Any) -> list[dict[str, Any]]:
    """Every item of a list call, page by page; failures say `listing WHAT failed: ...`."""
    items, _ = list_all(call, f"listing {what} failed", **params)
    return items


def _kueue_levels(custom: Any, host: str) -> tuple[str, tuple[str, ...]]:
    """(name, levels) of the cluster's Kueue Topology (`cluster_topology`); ("", ()) when Kueue
    is not installed (the API answers 404) or Topologies may not be listed: the JobSets' keys
    then decide the levels, as without Kueue."""
    for version in TOPOLOGY_VERSIONS:
        try:
            found = _list_all(
                custom.list_cluster_custom_object,
                f"Kueue topologies ({version})",
                group=KUEUE_GROUP,
                version=version,
                plural="topologies",
            )
        except ClusterError as e:
            if e.status in (401, 403, 404):
                continue
            raise
        return cluster_topology(found, source=host)
    return "", ()


def load_live_snapshot(
    kubeconfig: str | None, *, namespaces: Sequence[str] = (), levels: Sequence[str] = ()
) -> ClusterSnapshot:
    """Snapshot of the cluster `kubeconfig` points at (in-cluster config when None).

    `namespaces` limits the pods read (for users who may not list pods cluster-wide); pods of other
    namespaces then do not count against free capacity, which the caller must accept knowingly.
    PriorityClasses that may not be listed are skipped with a warning: they only resolve names.
    """
    api = KubeApis(api_client(kubeconfig))
    host = api.host
    try:
        core = api.core
        nodes = _list_all(core.list_node, "nodes")
        if namespaces:
            pods = [
                p
                for ns in namespaces
                for p in _list_all(
                    core.list_namespaced_pod,
                    f"pods in {ns}",
                    namespace=ns,
                    field_selector=_NON_TERMINAL,
                )
            ]
        else:
            pods = _list_all(core.list_pod_for_all_namespaces, "pods", field_selector=_NON_TERMINAL)
        try:
            classes = _list_all(api.scheduling.list_priority_class, "priorityclasses")
        except ClusterError as e:
            if e.status not in (401, 403, 404):
                raise
            log.warning("%s; priorityClassName values will resolve to 0", e)
            classes = []
        topology = ("", ()) if levels else _kueue_levels(api.custom, host)
        levels = levels or topology[1]
        jobsets = _jobsets(api.custom)
    finally:
        api.close()
    log.debug(
        "%s: %d nodes, %d pods, %d priority classes", host, len(nodes), len(pods), len(classes)
    )
    snapshot = snapshot_from_objects(
        nodes, pods, classes, source=host, levels=levels, kueue_topology=topology[0]
    )
    return _with_jobset_facts(snapshot, jobsets, host)


def _jobsets(custom: Any) -> list[dict[str, Any]]:
    """Every JobSet object (their annotations date and protect running JobSets); none when
    JobSet is not installed or JobSets may not be listed (a warning says so)."""
    try:
        return _list_all(
            custom.list_cluster_custom_object,
            "jobsets",
            group="jobset.x-k8s.io",
            version="v1alpha2",
            plural="jobsets",
        )
    except ClusterError as e:
        if e.status not in (401, 403, 404):
            raise
        log.warning(
            "%s; running JobSets keep the default duration and no placer.dev/preemptible or "
            "checkpoint annotation is read",
            e,
        )
        return []


def _with_jobset_facts(
    snapshot: ClusterSnapshot, jobsets: Sequence[dict[str, Any]], host: str
) -> ClusterSnapshot:
    """Running JobSets' expected durations and preemption annotations from their objects; a
    bad value is warned about (a live cluster is not a file to fix), never fatal."""
    holders = {k for n in snapshot.nodes for k in n.jobsets}
    manifests = []
    for obj in jobsets:
        meta = obj.get("metadata") or {}
        key = f"{meta.get('namespace', 'default')}/{meta.get('name', '')}"
        if key in holders:
            manifests.append((host, key, obj))
    if not manifests:
        return snapshot
    running = with_expected_durations(snapshot.running, manifests)
    running = with_preemption_facts(running, manifests, strict=False)
    return snapshot.model_copy(update={"running": running})
