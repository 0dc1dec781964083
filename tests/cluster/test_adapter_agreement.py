"""The in-memory cluster answers the controller's calls as the real API server does.

`MemoryCluster` stands in for the API server in the controller's unit tests, its races and the
benchmarks; the controller's safety rests on a few of its answers: a 409 for a write whose
`resourceVersion` precondition is stale and for a create of an existing name, a 404 for what is
gone, label selectors (every operator the syntax has), JSON merge patch deleting with `null`, and
a watch with a selector that reports an object leaving the selection as DELETED. The same script
of calls runs through placer's real adapter against the API server and through the in-memory
cluster; every answer must be the same. (A watch answered 410 after a compaction is
test_resilience.py's, on the real server only: its watch cache serves old versions until it
restarts.)
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from placer.controller.act.kube_adapter import KubeAdapter
from placer.controller.act.memory_adapter import MemoryCluster
from placer.controller.adapter import ClusterAdapter
from placer.model.errors import ClusterError
from tests.cluster.kube import api_client
from tests.cluster.scenario import Scenario

SELECTORS = (
    "app",
    "!app",
    "app=x",
    "app==x",
    "app!=x",
    "app in (x,y)",
    "app notin (x)",
    "app,tier",
    "tier!=web",
    "app in (x),tier",
)


def configmap(namespace: str, name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "data": {"k": "v"},
    }


def status_of(call: Callable[[], object]) -> int:
    """200 when the call succeeds, else the status of its ClusterError."""
    try:
        call()
    except ClusterError as error:
        return int(error.status or 0)
    return 200


def script(cluster: ClusterAdapter, namespace: str) -> dict[str, Any]:
    """The calls, and what each answered, by name."""
    said: dict[str, Any] = {}
    for name, labels in (("a", {"app": "x", "tier": "web"}), ("b", {"app": "y"}), ("c", {})):
        cluster.create("configmaps", configmap(namespace, name, labels))
    said["create an existing name"] = status_of(
        lambda: cluster.create("configmaps", configmap(namespace, "a", {}))
    )
    said["get what is not there"] = status_of(
        lambda: cluster.get("configmaps", "nope", namespace=namespace)
    )
    said["patch what is not there"] = status_of(
        lambda: cluster.patch("configmaps", "nope", {"data": {"k": "w"}}, namespace=namespace)
    )
    for selector in SELECTORS:
        listing = cluster.list("configmaps", namespace=namespace, label_selector=selector)
        said[f"list {selector!r}"] = sorted(o["metadata"]["name"] for o in listing.items)
    stale = cluster.get("configmaps", "a", namespace=namespace)["metadata"]["resourceVersion"]
    removed = cluster.patch(
        "configmaps", "a", {"metadata": {"labels": {"tier": None}}}, namespace=namespace
    )
    said["a label removed with null"] = removed["metadata"].get("labels")
    current = removed["metadata"]["resourceVersion"]
    for which, version in (("a stale", stale), ("the current", current)):
        body = {"metadata": {"resourceVersion": version}, "data": {"k": which}}
        said[f"patch with {which} resourceVersion"] = status_of(
            functools.partial(cluster.patch, "configmaps", "a", body, namespace=namespace)
        )
    said["data after both patches"] = cluster.get("configmaps", "a", namespace=namespace)["data"]
    start = cluster.list("configmaps", namespace=namespace).resource_version
    cluster.patch("configmaps", "a", {"metadata": {"labels": {"app": "z"}}}, namespace=namespace)
    cluster.patch("configmaps", "c", {"metadata": {"labels": {"app": "x"}}}, namespace=namespace)
    events = []
    for event in cluster.watch(
        "configmaps",
        resource_version=start,
        namespace=namespace,
        label_selector="app=x",
        timeout_s=5,
    ):
        events.append((event.type, event.object["metadata"]["name"]))
        if len(events) == 2:
            break
    said["a watch of app=x as a leaves and c enters"] = events
    return said


def test_the_in_memory_cluster_answers_the_controllers_calls_as_the_api_server_does(
    scenario: Scenario,
) -> None:
    with api_client(scenario.admin) as api:
        real = script(KubeAdapter(api, request_timeout_s=10), scenario.namespace)
    memory = script(MemoryCluster(), scenario.namespace)
    differing = {k: (real[k], memory[k]) for k in real if real[k] != memory[k]}
    assert not differing, f"(the API server, the in-memory cluster) differ: {differing}"
    assert real["patch with a stale resourceVersion"] == 409  # the rule the controller needs
    assert real["a watch of app=x as a leaves and c enters"] == [("DELETED", "a"), ("ADDED", "c")]
