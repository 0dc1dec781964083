"""Several controllers, crashes and API server trouble on the real control plane.

The guarantee under test: never two child Jobs in one domain, whatever runs and whatever fails,
because every placement is committed to the fenced ledger (a ConfigMap, compare-and-swap on its
resourceVersion) before any pod is released. Here the fencing is the real API server's optimistic
concurrency, the leader election a real Lease, the watch 410s real compaction.
"""

from __future__ import annotations

import os
import random
import signal
from collections import defaultdict

import pytest
from kubernetes import client as k8s

from tests.cluster.processes import wait_until
from tests.cluster.scenario import PLACER_SYSTEM, Scenario, assignment_of
from tests.cluster.test_gate_binding import POOL, multislice

TRIALS = int(os.environ.get("PLACER_CLUSTER_TRIALS", "2"))
"""Seeded multi-controller trials per run (benchmarks.cluster_trials runs 200)."""


def holder(scenario: Scenario, lease: str) -> str | None:
    coordination = k8s.CoordinationV1Api(scenario._api)
    try:
        spec = coordination.read_namespaced_lease(lease, PLACER_SYSTEM).spec
        assert spec is not None  # the API server always returns one
        return str(spec.holder_identity)
    except k8s.exceptions.ApiException:
        return None


def assert_one_child_job_per_domain(scenario: Scenario) -> int:
    """Across every namespace of the scenario: bound pods and placer's records agree, and no
    domain holds two child Jobs. Returns the number of child Jobs placed."""
    labels = scenario.node_labels()
    owner: dict[str, str] = {}
    placed = 0
    for namespace in scenario.namespaces:
        for jobset in scenario.list_jobsets(namespace):
            name = jobset["metadata"]["name"]
            record = assignment_of(jobset)
            pools: dict[str, set[str]] = defaultdict(set)
            for pod in scenario.pods_of(name, namespace):
                if pod.spec.node_name:
                    job = pod.metadata.labels["batch.kubernetes.io/job-name"]
                    pools[job].add(labels[pod.spec.node_name][POOL])
            for job, pool in pools.items():
                assert len(pool) == 1, f"{namespace}/{job} spans {pool}"
                assert record["jobs"][job]["domain"]["value"] in pool
            for job, entry in record.get("jobs", {}).items():
                domain = entry["domain"]["value"]
                key = f"{namespace}/{job}"
                assert domain not in owner, f"{key} and {owner[domain]} share {domain}"
                owner[domain] = key
                placed += 1
    return placed


def settled(scenario: Scenario) -> bool:
    """Every JobSet either placed with all its pods bound, or planned, found no room (an
    Unschedulable event) and has no pod bound."""
    for namespace in scenario.namespaces:
        for jobset in scenario.list_jobsets(namespace):
            name = jobset["metadata"]["name"]
            pods = scenario.pods_of(name, namespace)
            expected = 2 * jobset["spec"]["replicatedJobs"][0]["replicas"]
            if assignment_of(jobset):
                if not (len(pods) == expected and all(p.spec.node_name for p in pods)):
                    return False
            elif any(p.spec.node_name for p in pods) or not any(
                e.reason == "Unschedulable" for e in scenario.events(name, namespace)
            ):
                return False
    return True


@pytest.mark.parametrize("seed", range(TRIALS))
def test_three_controllers_two_elected_one_per_namespace_never_share_a_domain(
    scenario: Scenario, seed: int
) -> None:
    rng = random.Random(seed)
    scenario.use_example_cluster("tpu-v5e-v6e.yaml")
    scenario.start_pod_reaper()
    scenario.start_webhook()
    other = scenario.add_namespace("b")
    # Two replicas elect a leader for the first namespace; a third controller owns the second
    # namespace under its own Lease. All three commit to the one ledger.
    a0 = scenario.start_controller(identity="a0")
    a1 = scenario.start_controller(identity="a1")
    b0 = scenario.start_controller(
        "--lease-name=placer-controller-b", identity="b0", namespaces=[other]
    )
    wait_until(
        lambda: holder(scenario, "placer-controller") in {"a0", "a1"},
        timeout_s=60,
        what="a leader for the first namespace",
    )

    sizes = [rng.randint(1, 3) for _ in range(5)]
    kill_after = rng.randrange(len(sizes))
    killed = None
    for index, slices in enumerate(sizes):
        namespace = rng.choice(scenario.namespaces)
        scenario.create_jobset(multislice(f"trial-{index}", slices), namespace)
        if index == kill_after:
            leader = {"a0": a0, "a1": a1}[str(holder(scenario, "placer-controller"))]
            leader.kill()
            killed = leader

    wait_until(lambda: settled(scenario), timeout_s=240, what="every JobSet placed or refused")
    assert assert_one_child_job_per_domain(scenario) > 0
    # Liveness too: nobody but the killed leader stopped (controllers of different Leases
    # used to depose each other through the ledger's single term).
    assert all(c.running for c in (a0, a1, b0) if c is not killed)


def test_api_server_restart_after_compaction_the_watch_relists_and_places(
    scenario: Scenario,
) -> None:
    scenario.use_example_cluster("tpu-v5e-v6e.yaml")
    scenario.start_webhook()
    controller = scenario.start_controller()
    scenario.create_jobset(multislice("before", slices=2))
    scenario.wait_pods_bound("before", count=4)

    # Compacted history and a restarted server: the controller's watches come back with a
    # resourceVersion the server no longer has (410 Gone) and must relist.
    scenario.plane.etcd_compact()
    away_s = scenario.plane.restart_apiserver()
    scenario.create_jobset(multislice("after", slices=2))

    scenario.wait_pods_bound("after", count=4, timeout_s=180)
    assert assert_one_child_job_per_domain(scenario) == 4
    log = controller.log_path.read_text()
    assert "expired; relisting" in log, "no watch was answered 410"
    # The leader keeps its lease through an outage shorter than the renew deadline (10 s).
    if away_s < 8:
        assert controller.running and "lost the lease" not in log


REPLAN_S = 60
"""The controllers' replan interval below: what a stop that waited for the next cycle takes."""


@pytest.mark.parametrize("election", ["--leader-elect", "--no-leader-elect"])
def test_sigterm_stops_a_controller_waiting_for_its_next_cycle_with_0(
    scenario: Scenario, election: str
) -> None:
    """A controller that placed its JobSet waits on its watches for up to its replan interval,
    as its leader (a real Lease) or without election; SIGTERM ends it with 0 long before the
    interval is over: its main thread only waits for a signal or for the work to end
    (placer/commands/controller.py). `--once` is stopped so in tests/controller/act/
    test_faults.py."""
    scenario.use_example_cluster("tpu-v5e-v6e.yaml")
    scenario.start_webhook()
    controller = scenario.start_controller(election, f"--replan-interval={REPLAN_S}")
    scenario.create_jobset(multislice("train", slices=1))
    scenario.wait_pods_bound("train", count=2)
    if election == "--leader-elect":
        assert holder(scenario, "placer-controller") == "placer-0"
    process = controller.process
    assert process is not None and process.poll() is None
    os.killpg(process.pid, signal.SIGTERM)
    assert process.wait(timeout=REPLAN_S / 4) == 0
