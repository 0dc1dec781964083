"""The real adapter: the official `kubernetes` client over HTTP against the API-server stand-in
(tests/controller/apiserver.py). Same scenarios as test_scenarios.py where the wire matters:
paths, content types, resourceVersion preconditions, error statuses, watch streams, leases."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from benchmarks.simulate import cluster_sim as sim
from placer.controller.act.kube_adapter import KubeAdapter
from placer.controller.act.leader import LeaderSettings, run_elected
from placer.controller.reconcile import Clocks, Controller, ControllerConfig
from placer.model.errors import ClusterError
from tests.controller.apiserver import ApiServer
from tests.controller.builders import (
    BLOCK,
    add_jobset,
    assert_exclusive,
    assert_valid,
    block_of,
    controller,
    events,
    eventually,
    gated,
    jobset_pods,
    pod_requirements,
    record,
    tpu_cluster,
)


@pytest.fixture
def api() -> Iterator[ApiServer]:
    with ApiServer(tpu_cluster(blocks=3)) as server:
        yield server


def adapter(api: ApiServer) -> KubeAdapter:
    return KubeAdapter(api.client(), request_timeout_s=5)


def test_once_places_and_ungates_over_http(api: ApiServer) -> None:
    add_jobset(api.cluster, "train", jobs=2, pods=2)
    report = assert_valid(controller(adapter(api)).run_once())
    assert report.executed is not None and report.executed.failed == []
    a = record(api.cluster, "train")
    assert a is not None
    for pod in jobset_pods(api.cluster, "train"):
        job = pod["metadata"]["labels"]["batch.kubernetes.io/job-name"]
        assert not gated(pod)
        assert pod_requirements(pod) == [
            [{"key": BLOCK, "operator": "In", "values": [block_of(a, job)]}]
        ]
    assert len(events(api.cluster, "Placed")) == 1
    patches = [p for m, p in api.requests if m == "PATCH"]
    assert len(patches) == 5  # the record and one per pod
    assert all("/jobsets/train" in p or "/pods/" in p for p in patches)


def test_unschedulable_over_http(api: ApiServer) -> None:
    add_jobset(api.cluster, "huge", jobs=4)
    report = controller(adapter(api)).run_once()
    assert "default/huge" in report.planned.unschedulable
    assert all(gated(p) for p in jobset_pods(api.cluster, "huge"))
    assert len(events(api.cluster, "Unschedulable")) == 1


@pytest.mark.parametrize(
    ("verb", "kind", "status"),
    [
        pytest.param("patch", "jobsets", 409, id="record-409"),
        pytest.param("patch", "pods", 409, id="pod-409"),
        pytest.param("patch", "pods", 503, id="pod-503"),
        pytest.param("patch", "jobsets", 500, id="record-500"),
        pytest.param("create", "events", 429, id="event-429"),
    ],
)
def test_conflicts_and_server_errors_are_retried_over_http(
    api: ApiServer, verb: str, kind: str, status: int
) -> None:
    add_jobset(api.cluster, "train", jobs=2, pods=2)
    api.cluster.inject(verb, kind, status, times=2)
    report = controller(adapter(api)).run_once()
    assert report.executed is not None and report.executed.failed == []
    assert record(api.cluster, "train") is not None
    assert not any(gated(p) for p in jobset_pods(api.cluster, "train"))


def test_stale_resource_version_is_a_409_from_the_server(api: ApiServer) -> None:
    add_jobset(api.cluster, "train")
    ad = adapter(api)
    stale = ad.get("jobsets", "train", namespace="default")["metadata"]["resourceVersion"]
    ad.patch("jobsets", "train", {"metadata": {"labels": {"x": "1"}}}, namespace="default")
    with pytest.raises(ClusterError) as e:
        ad.patch(
            "jobsets",
            "train",
            {"metadata": {"resourceVersion": stale, "labels": {"x": "2"}}},
            namespace="default",
        )
    assert e.value.status == 409 and not e.value.temporary


def test_the_server_refuses_widening_a_gated_pod(api: ApiServer) -> None:
    add_jobset(api.cluster, "train", jobs=1, pods=1)
    [pod] = jobset_pods(api.cluster, "train")
    with pytest.raises(ClusterError) as e:
        adapter(api).patch(
            "pods",
            pod["metadata"]["name"],
            {"spec": {"schedulingGates": [{"name": "a"}, {"name": "b"}]}},
            namespace="default",
        )
    assert e.value.status == 422


def test_watch_expired_relists(api: ApiServer) -> None:
    ad = adapter(api)
    rv = ad.list("nodes").resource_version
    api.cluster.trim_history("nodes")
    with pytest.raises(ClusterError) as e:
        list(ad.watch("nodes", resource_version=str(int(rv) - 5), timeout_s=1))
    assert e.value.status == 410


def test_label_selectors_reach_the_server(api: ApiServer) -> None:
    add_jobset(api.cluster, "train", jobs=1, pods=1)
    api.cluster.create("pods", {"metadata": {"name": "other"}, "spec": {}})
    ad = adapter(api)
    names = {
        p["metadata"]["name"]
        for p in ad.list("pods", label_selector="jobset.sigs.k8s.io/jobset-name").items
    }
    assert "other" not in names and len(names) == 1


def test_the_watch_loop_places_jobsets_as_they_arrive(api: ApiServer) -> None:
    ctl = controller(adapter(api), watch_timeout_s=2, debounce_s=0.01)
    stop = threading.Event()
    thread = threading.Thread(target=ctl.run, args=(stop,), daemon=True)
    thread.start()
    try:
        add_jobset(api.cluster, "a", jobs=1)
        eventually(lambda: not any(gated(p) for p in jobset_pods(api.cluster, "a")))
        sim.schedule(api.cluster)
        add_jobset(api.cluster, "b", jobs=2)
        eventually(
            lambda: (
                record(api.cluster, "b") is not None
                and not any(gated(p) for p in jobset_pods(api.cluster, "b"))
            )
        )
        assert_exclusive(api.cluster)
        # A restart: recreated pods are ungated into the same blocks, with no new plan.
        before = record(api.cluster, "b")
        sim.restart(api.cluster, "default", "b")
        eventually(lambda: not any(gated(p) for p in jobset_pods(api.cluster, "b")))
        assert record(api.cluster, "b") == before
    finally:
        stop.set()
        thread.join(timeout=10)
    assert not thread.is_alive()


def test_the_watch_loop_gathers_a_window(api: ApiServer) -> None:
    ctl = controller(adapter(api), watch_timeout_s=2, window_s=0.5, debounce_s=0.01)
    ctl.cache.relist()
    add_jobset(api.cluster, "a", jobs=1)
    ctl.cache.relist()
    first = ctl.run_cycle()
    assert first.planned.plans == () and first.deferred == ["default/a"]
    assert first.wake_in_s is not None and 0 < first.wake_in_s <= 0.5
    add_jobset(api.cluster, "b", jobs=1)
    time.sleep(0.55)
    ctl.cache.relist()
    second = assert_valid(ctl.run_cycle())
    [(_plan, _, requests)] = second.planned.plans
    assert sorted(r.key for r in requests) == ["default/a", "default/b"]  # planned together


def test_leader_election_lets_one_replica_work(api: ApiServer) -> None:
    leaders: list[str] = []
    stops = [threading.Event(), threading.Event()]

    def replica(i: int) -> None:
        ad = adapter(api)
        ctl: Controller = controller(ad)

        def work(stop: threading.Event) -> None:
            leaders.append(f"r{i}")
            ctl.run_once()
            stop.wait()

        settings = LeaderSettings(
            lease="placer",
            namespace="placer-system",
            identity=f"r{i}",
            lease_duration_s=3,
            renew_deadline_s=2,
            retry_period_s=1,
        )
        run_elected(ad, settings, work, stops[i])

    add_jobset(api.cluster, "train", jobs=1)
    threads = [threading.Thread(target=replica, args=(i,), daemon=True) for i in range(2)]
    for t in threads:
        t.start()
    eventually(lambda: len(leaders) == 1)
    time.sleep(2.5)  # a full renew cycle: the follower must still be waiting
    assert len(leaders) == 1
    lease = api.cluster.get("leases", "placer", namespace="placer-system")
    assert lease["spec"]["holderIdentity"] == leaders[0]
    assert record(api.cluster, "train") is not None
    for s in stops:
        s.set()


def test_the_kueue_check_over_http_in_the_version_served(api: ApiServer) -> None:
    """Kueue's kinds listed in the newest version served (v1beta1 here: v1beta2 answers 404),
    placer's check written by one merge patch of the Workload's status subresource."""
    from tests.controller.test_kueue_admission import check_of, setup, submit

    setup(api.cluster)
    submit(api.cluster, "a", jobs=2)
    kube = adapter(api)
    ctl = Controller(
        kube,
        ControllerConfig(solver="best-fit", window_s=0.0, kueue_admission_check=True),
        clocks=Clocks(sleep=lambda s: None),
    )
    report = assert_valid(ctl.run_once())
    assert report.executed is not None and report.executed.failed == []
    assert check_of(api.cluster, "a")["state"] == "Ready"
    assert kube.kueue_versions["workloads"] == "v1beta1"
    assert ("GET", "/apis/kueue.x-k8s.io/v1beta2/workloads?limit=500") in api.requests
    patches = [p for m, p in api.requests if m == "PATCH" and "workloads" in p]
    assert patches == ["/apis/kueue.x-k8s.io/v1beta1/namespaces/default/workloads/jobset-a/status"]
