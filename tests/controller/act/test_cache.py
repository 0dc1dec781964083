"""The watch-fed cache and the API-server behavior of the in-memory cluster it is tested on."""

from __future__ import annotations

import copy
import threading
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.simulate.cluster_sim import node_object
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


def _reference_merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 as written there (section 2), on deep copies."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = _reference_merge_patch(result.get(key), value)
    return result


_KEYS = st.sampled_from(["a", "b", "c", "d"])
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(target=_JSON, patch=_JSON)
def test_merge_patch_equals_rfc_7386_reference_and_shares_no_container(
    target: Any, patch: Any
) -> None:
    before = copy.deepcopy(target)
    merged = merge_patch(target, patch)
    assert merged == _reference_merge_patch(before, patch)
    assert target == before  # the target is never changed

    def containers(x: Any) -> list[int]:
        if isinstance(x, dict):
            return [id(x), *(i for v in x.values() for i in containers(v))]
        if isinstance(x, list):
            return [id(x), *(i for v in x for i in containers(v))]
        return []

    assert not set(containers(merged)) & set(containers(patch))


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


def test_a_workloads_quota_replans_on_the_same_snapshot_a_nodes_change_rebuilds_it() -> None:
    """The planner's snapshot is built from nodes, pods, PriorityClasses and Topologies only: a
    Workload getting quota (a capacity change for planning: who may be placed) keeps it."""
    c = MemoryCluster()
    c.create("nodes", node_object("a"))
    c.create("workloads", {"metadata": {"name": "w", "namespace": "ns"}, "status": {}})
    cache = ClusterCache(c, kueue=True)
    cache.relist()
    before = cache.state()
    reserved = c.mutate(
        "workloads",
        "w",
        lambda o: o["status"].update(conditions=[{"type": "QuotaReserved", "status": "True"}]),
        namespace="ns",
    )
    cache.apply("workloads", "MODIFIED", reserved)
    after = cache.state()
    assert after.capacity_version > before.capacity_version
    assert after.snapshot_version == before.snapshot_version
    cache.apply("nodes", "MODIFIED", c.patch("nodes", "a", {"metadata": {"labels": {"v": "2"}}}))
    assert cache.state().snapshot_version > after.snapshot_version


def test_the_stand_ins_answer_is_the_callers_own_as_the_api_servers_is() -> None:
    """A status patch's answer kept by the cache is not changed by the next patch: the stand-in
    once shared the untouched metadata with the stored object and stamped the next
    resourceVersion there, so the cache held an old status under a new resourceVersion, ignored
    the next answer as old, and the controller wrote the same check every cycle."""
    c = MemoryCluster()
    c.create("workloads", {"metadata": {"name": "w", "namespace": "ns"}, "status": {}})
    first = c.patch("workloads", "w", {"status": {"message": "one"}}, namespace="ns")
    version = first["metadata"]["resourceVersion"]
    second = c.patch("workloads", "w", {"status": {"message": "two"}}, namespace="ns")
    assert first["metadata"]["resourceVersion"] == version
    assert first["status"]["message"] == "one"
    assert int(second["metadata"]["resourceVersion"]) > int(version)
    cache = ClusterCache(c, kueue=True)
    cache.relist()
    cache.record("workloads", first)  # older than what the relist read: ignored
    assert cache.state().workloads[("ns", "w")]["status"]["message"] == "two"
