"""`placer controller --extender-port`: the extender follows the controller's own cache."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

from placer.controller.act.cache import ClusterCache
from placer.controller.act.memory_adapter import MemoryCluster
from placer.model.assignment import ASSIGNMENT_ANNOTATION, Assignment
from plugins.extender.embedded import CacheFollower, serve
from plugins.extender.store import ExtenderStore
from tests.extender.builders import NODES, node_object, plain_pod, post, request, sample_plan


def jobset(name: str) -> dict[str, Any]:
    record = Assignment.from_outcome(sample_plan().outcome(f"ml/{name}"), pinned=False)
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {
            "name": name,
            "namespace": "ml",
            "annotations": {ASSIGNMENT_ANNOTATION: record.to_annotation()},
        },
        "spec": {"replicatedJobs": []},
    }


def cluster() -> tuple[MemoryCluster, ClusterCache]:
    api = MemoryCluster()
    for n in NODES:
        api.create("nodes", {"apiVersion": "v1", "kind": "Node", **node_object(n)})
    api.create("jobsets", jobset("train"))
    return api, ClusterCache(api)


def owners(store: ExtenderStore) -> dict[str, str]:
    return {n: e.jobset for n, e in sorted(store.view().owner.items())}


def test_follower_waits_for_the_first_list_then_copies_changes() -> None:
    api, cache = cluster()
    store = ExtenderStore(synced=False)
    follower = CacheFollower(cache, store)
    assert follower.sync_once() == 0 and not store.synced
    cache.relist()
    assert follower.sync_once() == 1 + len(NODES)
    assert store.synced
    assert owners(store) == {"n1": "ml/train", "n2": "ml/train"}
    assert follower.sync_once() == 0  # nothing changed: nothing re-read
    api.create("jobsets", jobset("other"))
    api.delete("jobsets", "train", namespace="ml")
    api.patch("nodes", "n10", {"metadata": {"labels": {"kubernetes.io/os": "windows"}}})
    cache.relist()
    follower.sync_once()
    assert owners(store) == {"n5": "ml/other", "n6": "ml/other"}


def test_serve_hook_answers_from_the_controller_cache() -> None:
    _, cache = cluster()
    cache.relist()
    embedded = serve(SimpleNamespace(cache=cache), 0, host="127.0.0.1")
    try:
        url = embedded.server.url
        deadline = time.monotonic() + 10
        while request(url, "GET", "/readyz")[0] != 200:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        status, answer = post(url, "filter", {"Pod": plain_pod(), "NodeNames": ["n2", "n3"]})
        assert status == 200
        assert answer["NodeNames"] == ["n3"]
        assert answer["FailedAndUnresolvableNodes"] == {"n2": "reserved for ml/train"}
    finally:
        embedded.close()
