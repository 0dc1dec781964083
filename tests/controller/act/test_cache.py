"""The watch-fed cache and the API-server behavior of the in-memory cluster it is tested on."""

from __future__ import annotations

import threading
import time

import pytest

from benchmarks.cluster_sim import node_object
from placer.controller.act.cache import ClusterCache, Stream
from placer.controller.act.memory_adapter import MemoryCluster
from placer.controller.act.selectors import matches_selector, merge_patch, parse_selector
from placer.model.errors import ClusterError, InputError


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        pytest.param("a", {"a": "1"}, True, id="exists"),
        pytest.param("!a", {"a": "1"}, False, id="not-exists"),
        pytest.param("a=1,b", {"a": "1", "b": ""}, True, id="and"),
        pytest.param("a==2", {"a": "1"}, False, id="double-equals"),
        pytest.param("a!=2", {}, True, id="not-equal-absent"),
        pytest.param("a in (1, 2),b notin (x)", {"a": "2", "b": "y"}, True, id="sets"),
        pytest.param("a in (1,2)", {"a": "3"}, False, id="not-in-set"),
        pytest.param("", {"a": "1"}, True, id="empty"),
    ],
)
def test_label_selectors(selector: str, labels: dict[str, str], expected: bool) -> None:
    assert matches_selector(labels, parse_selector(selector)) is expected


def test_bad_selector_is_an_input_error() -> None:
    with pytest.raises(InputError):
        parse_selector("a b c")


def test_merge_patch_follows_rfc_7386() -> None:
    assert merge_patch({"a": {"b": 1, "c": 2}, "l": [1]}, {"a": {"b": None, "d": 3}, "l": [2]}) == {
        "a": {"c": 2, "d": 3},
        "l": [2],
    }


def test_memory_cluster_concurrency_rules() -> None:
    c = MemoryCluster()
    n = c.create("nodes", node_object("n"))
    assert n["metadata"]["uid"] and n["metadata"]["creationTimestamp"]
    with pytest.raises(ClusterError) as e:
        c.create("nodes", node_object("n"))
    assert e.value.status == 409
    c.patch("nodes", "n", {"metadata": {"labels": {"x": "1"}}})
    with pytest.raises(ClusterError) as e:
        c.patch("nodes", "n", {"metadata": {"resourceVersion": n["metadata"]["resourceVersion"]}})
    assert e.value.status == 409
    c.inject("get", "nodes", 503)
    with pytest.raises(ClusterError) as e:
        c.get("nodes", "n")
    assert e.value.temporary
    assert c.get("nodes", "n")["metadata"]["labels"]["x"] == "1"


def test_watch_replays_changes_and_filters_by_selector() -> None:
    c = MemoryCluster()
    rv = c.list("nodes").resource_version
    c.create("nodes", node_object("a", {"role": "x"}))
    c.create("nodes", node_object("b"))
    c.patch("nodes", "a", {"metadata": {"labels": {"role": None}}})  # leaves the selection
    seen = [
        (e.type, e.object["metadata"]["name"])
        for e in c.watch("nodes", resource_version=rv, label_selector="role", timeout_s=0)
    ]
    assert seen == [("ADDED", "a"), ("DELETED", "a")]


def test_cache_follows_watches_and_relists_on_410() -> None:
    c = MemoryCluster()
    c.create("nodes", node_object("a"))
    cache = ClusterCache(c, watch_timeout_s=0.2)
    cache.relist()

    def follow(until: str) -> None:
        stop = threading.Event()
        threads = cache.start_watches(stop)
        try:
            deadline = time.monotonic() + 5
            while until not in cache.state().nodes:
                assert time.monotonic() < deadline
                time.sleep(0.01)
        finally:
            stop.set()
            for t in threads:
                t.join(timeout=2)

    version = cache.version
    c.create("nodes", node_object("b"))
    follow("b")
    assert cache.version > version
    relists = cache.relists
    # While nobody watches, "c" appears and etcd compacts past the cache's resourceVersion.
    c.create("nodes", node_object("c"))
    c.trim_history("nodes")
    follow("c")
    assert cache.relists > relists
    assert set(cache.state().nodes) == {"a", "b", "c"}


def test_cache_ignores_events_older_than_what_it_holds() -> None:
    c = MemoryCluster()
    c.create("nodes", node_object("a"))
    cache = ClusterCache(c)
    cache.relist()
    newer = c.patch("nodes", "a", {"metadata": {"labels": {"v": "2"}}})
    cache.record("nodes", newer)
    older = {
        **newer,
        "metadata": {**newer["metadata"], "resourceVersion": "1", "labels": {"v": "1"}},
    }
    cache.apply("nodes", "MODIFIED", older)
    assert cache.state().nodes["a"]["metadata"]["labels"]["v"] == "2"
    before = cache.state().capacity_version
    cache.apply("nodes", "DELETED", newer)
    assert "a" not in cache.state().nodes and cache.state().capacity_version > before


def test_pod_streams_by_scope() -> None:
    everything = ClusterCache(MemoryCluster())
    assert Stream("pods") in everything.streams
    scoped = ClusterCache(MemoryCluster(), namespaces=("b", "a"), all_pods=False)
    assert [s for s in scoped.streams if s.kind == "pods"] == [
        Stream("pods", "a", "jobset.sigs.k8s.io/jobset-name"),
        Stream("pods", "b", "jobset.sigs.k8s.io/jobset-name"),
    ]
