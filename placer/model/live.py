"""A snapshot of a live cluster over the official Kubernetes client (`placer plan --live`).

One of the two modules allowed to import `kubernetes` beyond quantity parsing (the controller's
adapter is the other). It only lists Nodes, Pods, PriorityClasses and Kueue Topologies, as raw
JSON (no client model objects, so the shape is exactly kubectl's), and hands them to
`snapshot_from_objects`, so a live snapshot and a `kubectl get -o json` file of the same cluster
give the same result.
API and transport failures become `ClusterError`s at this boundary.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

import urllib3
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException

from placer.model.cluster import ClusterSnapshot
from placer.model.errors import ClusterError
from placer.model.kubeconfig import config_error
from placer.model.kueue_topology import KUEUE_GROUP, TOPOLOGY_VERSIONS, cluster_topology
from placer.model.snapshot import TERMINAL_PHASES, snapshot_from_objects

__all__ = ["PAGE_SIZE", "load_live_snapshot"]

log = logging.getLogger(__name__)

PAGE_SIZE = 500
"""Objects per list call; large clusters are read in pages, as kubectl does."""

_NON_TERMINAL = ",".join(f"status.phase!={p}" for p in sorted(TERMINAL_PHASES))


def _api_client(kubeconfig: str | None) -> client.ApiClient:
    """Explicit kubeconfig file; else in-cluster config; else the default kubeconfig ($KUBECONFIG,
    ~/.kube/config), so the same call works in a pod and on a laptop."""
    try:
        if kubeconfig:
            return cast(
                client.ApiClient,
                config.new_client_from_config(  # type: ignore[no-untyped-call]
                    config_file=kubeconfig
                ),
            )
        try:
            config.load_incluster_config()  # type: ignore[no-untyped-call]
            return client.ApiClient()
        except ConfigException:
            return cast(client.ApiClient, config.new_client_from_config())  # type: ignore[no-untyped-call]
    except (ConfigException, OSError) as e:
        raise ClusterError(config_error(kubeconfig, e)) from e


def _list_all(call: Callable[..., Any], what: str, **kwargs: Any) -> list[Mapping[str, Any]]:
    """Every item of a list call, page by page, as raw JSON dicts."""
    items: list[Mapping[str, Any]] = []
    token: str | None = None
    while True:
        try:
            resp = call(limit=PAGE_SIZE, _continue=token, _preload_content=False, **kwargs)
            data = json.loads(resp.data)
        except ApiException as e:
            raise ClusterError(
                f"listing {what} failed: {e.status} {e.reason}",
                status=e.status,
                temporary=e.status in (429, 500, 502, 503, 504),
            ) from e
        except (urllib3.exceptions.HTTPError, OSError) as e:
            raise ClusterError(
                f"listing {what} failed: {_transport_reason(e)}", temporary=True
            ) from e
        except ValueError as e:
            raise ClusterError(f"listing {what} returned invalid JSON: {e}") from e
        items.extend(data.get("items") or [])
        token = (data.get("metadata") or {}).get("continue") or None
        if not token:
            return items


def _transport_reason(error: Exception) -> str:
    """`cannot connect to HOST:PORT: [Errno 111] Connection refused`, not urllib3's retry story."""
    if isinstance(error, urllib3.exceptions.MaxRetryError):
        reason = error.reason or error
        where = f"{error.pool.host}:{error.pool.port}" if error.pool is not None else "the server"
        text = str(reason).rsplit(": ", 1)[-1] if ": " in str(reason) else str(reason)
        return f"cannot connect to {where}: {text}"
    return " ".join(str(error).split())


def _kueue_levels(custom: client.CustomObjectsApi, host: str) -> tuple[str, tuple[str, ...]]:
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
    api = _api_client(kubeconfig)
    host = api.configuration.host
    try:
        core = client.CoreV1Api(api)
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
            classes = _list_all(client.SchedulingV1Api(api).list_priority_class, "priorityclasses")
        except ClusterError as e:
            if e.status not in (401, 403, 404):
                raise
            log.warning("%s; priorityClassName values will resolve to 0", e)
            classes = []
        topology = ("", ()) if levels else _kueue_levels(client.CustomObjectsApi(api), host)
        levels = levels or topology[1]
    finally:
        api.close()  # type: ignore[no-untyped-call]
    log.debug(
        "%s: %d nodes, %d pods, %d priority classes", host, len(nodes), len(pods), len(classes)
    )
    return snapshot_from_objects(
        nodes, pods, classes, source=host, levels=levels, kueue_topology=topology[0]
    )
