"""What the cluster scenarios do to the real API server: apply manifests, make nodes, read state.

The official client, as an operator's script would use it; nothing here is placer code, so a
scenario can tell placer's behaviour from the fixture's.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Protocol

from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes import dynamic
from kubernetes.client.exceptions import ApiException

from tests.cluster.processes import wait_until

__all__ = [
    "api_client",
    "apply_all",
    "create_nodes",
    "delete_all",
    "dry_run_merge_patch",
    "ensure_namespace",
    "events_for",
    "list_pods",
    "meta_of",
    "name_of",
    "service_account_token",
    "wait_for_crds",
]

FIELD_MANAGER = "placer-cluster-tests"


class _Object(Protocol):
    @property
    def metadata(self) -> k8s.V1ObjectMeta | None: ...


def meta_of(obj: _Object) -> k8s.V1ObjectMeta:
    """The metadata of an object the API server returned: it always has one."""
    assert obj.metadata is not None
    return obj.metadata


def name_of(obj: _Object) -> str:
    """The name of an object the API server returned: it always has one."""
    name = meta_of(obj).name
    assert name is not None
    return name


def api_client(kubeconfig: Path) -> k8s.ApiClient:
    # unannotated in the client
    api: k8s.ApiClient = k8s_config.new_client_from_config(config_file=str(kubeconfig))  # type: ignore[no-untyped-call]
    return api


def _each_resource(
    kubeconfig: Path, documents: Iterable[dict[str, Any]]
) -> Iterator[tuple[Any, dict[str, Any]]]:
    """(the dynamic client's resource of each document's kind, the document)."""
    with api_client(kubeconfig) as api:
        # unannotated in the client
        client = dynamic.DynamicClient(api)  # type: ignore[no-untyped-call]
        for document in documents:
            kind = {"api_version": document["apiVersion"], "kind": document["kind"]}
            yield client.resources.get(**kind), document


def apply_all(kubeconfig: Path, documents: Iterable[dict[str, Any]]) -> None:
    """Server-side apply each document (the way `kubectl apply --server-side` does)."""
    for resource, document in _each_resource(kubeconfig, documents):
        resource.server_side_apply(
            body=document,
            name=document["metadata"]["name"],
            namespace=document.get("metadata", {}).get("namespace"),
            field_manager=FIELD_MANAGER,
            force_conflicts=True,
        )


def delete_all(kubeconfig: Path, documents: Iterable[dict[str, Any]]) -> None:
    """Delete each document's object; one already gone is fine."""
    for resource, document in _each_resource(kubeconfig, documents):
        try:
            resource.delete(
                name=document["metadata"]["name"],
                namespace=document.get("metadata", {}).get("namespace"),
            )
        except ApiException as error:
            if error.status != 404:
                raise


def dry_run_merge_patch(api: k8s.ApiClient, path: str, patch: dict[str, Any]) -> tuple[int, Any]:
    """PATCH `path` with a JSON merge patch (what placer's adapter sends) and `dryRun=All`: the
    API server validates and admits it, stores nothing. (status, the answer's JSON); a status
    other than success or 422 fails the caller's test."""
    request = api.param_serialize(
        "PATCH",
        path,
        query_params=[("dryRun", "All")],
        header_params={
            "Content-Type": "application/merge-patch+json",
            "Accept": "application/json",
        },
        body=patch,
        auth_settings=["BearerToken"],
    )
    answer = api.call_api(*request)
    body = answer.read()  # type: ignore[no-untyped-call]  # unannotated in the client
    status = int(answer.status)
    assert status < 300 or status == 422, body
    return status, json.loads(body) if body else None


def wait_for_crds(kubeconfig: Path, names: list[str], timeout_s: float = 60.0) -> None:
    with api_client(kubeconfig) as api:
        extensions = k8s.ApiextensionsV1Api(api)

        def established() -> bool:
            for name in names:
                crd = extensions.read_custom_resource_definition(name)
                assert crd.status is not None  # the API server always returns one
                conditions = {c.type: c.status for c in (crd.status.conditions or [])}
                if conditions.get("Established") != "True":
                    return False
            return True

        wait_until(established, timeout_s=timeout_s, what=f"CRDs {names} established")


def ensure_namespace(kubeconfig: Path, name: str, labels: dict[str, str] | None = None) -> None:
    with api_client(kubeconfig) as api:
        core = k8s.CoreV1Api(api)
        body = {"metadata": {"name": name, "labels": labels or {}}}
        try:
            # the client validates a dict into V1Namespace
            core.create_namespace(body)  # type: ignore[arg-type]
        except ApiException as error:
            if error.status != 409:
                raise
            if labels:
                core.patch_namespace(name, {"metadata": {"labels": labels}})


_SERVER_SET = ("resourceVersion", "uid", "creationTimestamp", "managedFields", "generation")


NOT_READY = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}
"""The taint the node lifecycle controller puts on a node that is not Ready."""


def scheduler_decided(pods: list[Any]) -> bool:
    """kube-scheduler has bound each pod or said it cannot (`PodScheduled` True, or False for a
    reason other than a scheduling gate: a gated pod is not yet its to decide)."""
    return all(
        any(
            c.type == "PodScheduled" and (c.status == "True" or c.reason != "SchedulingGated")
            for c in (p.status.conditions if p.status else None) or []
        )
        for p in pods
    )


def create_nodes(kubeconfig: Path, nodes: Iterable[dict[str, Any]]) -> int:
    """Create Node objects (with their status: allocatable, conditions) as a kubelet would."""
    count = 0
    with api_client(kubeconfig) as api:
        core = k8s.CoreV1Api(api)
        for node in nodes:
            body = copy.deepcopy(node)
            body.setdefault("apiVersion", "v1")
            body.setdefault("kind", "Node")
            for key in _SERVER_SET:
                body["metadata"].pop(key, None)
            status = body.get("status", {})
            ready = {c["type"]: c["status"] for c in status.get("conditions", [])}.get("Ready")
            if ready != "True":
                # What the node lifecycle controller does to a node that is not Ready.
                taints = body.setdefault("spec", {}).setdefault("taints", [])
                if NOT_READY not in taints:  # a node's taints are unique by key and effect
                    taints.append(NOT_READY)
            # the client validates a dict into V1Node
            core.create_node(body)  # type: ignore[arg-type]
            # The node registry keeps the status of a created node, but a status write is what
            # a kubelet's heartbeat does: do it, so the stored status is exactly this one.
            core.patch_node_status(body["metadata"]["name"], {"status": status})
            count += 1
    return count


def service_account_token(kubeconfig: Path, namespace: str, name: str) -> str:
    """A bound token for a ServiceAccount (TokenRequest), as a pod's projected volume gets."""
    with api_client(kubeconfig) as api:
        core = k8s.CoreV1Api(api)
        request = {"spec": {"audiences": [], "expirationSeconds": 7200}}
        # the client validates a dict into its TokenRequest
        answer = core.create_namespaced_service_account_token(name, namespace, request)  # type: ignore[arg-type]
        assert answer.status is not None  # the API server always returns one
        return str(answer.status.token)


def list_pods(kubeconfig: Path, namespace: str, selector: str = "") -> list[Any]:
    with api_client(kubeconfig) as api:
        pods = k8s.CoreV1Api(api).list_namespaced_pod(namespace, label_selector=selector)
        return list(pods.items)


def events_for(kubeconfig: Path, namespace: str, name: str) -> list[Any]:
    with api_client(kubeconfig) as api:
        events = k8s.CoreV1Api(api).list_namespaced_event(
            namespace, field_selector=f"involvedObject.name={name}"
        )
        return sorted(events.items, key=lambda e: e.metadata.name)


def now_s() -> float:
    return time.time()
