"""Random clusters and JobSets: the controller and the real kube-scheduler agree on what fits.

placer models kube-scheduler's filters (resources with init containers and sidecars, node
selectors and affinity, taints and tolerations, host ports, cordoned and NotReady nodes, the
pods already bound). Each seed draws a small cluster (labels, taints, allocatable, pods already
running there) and a few JobSets mixing those features; the webhook gates their pods and the
controller (`--pin-nodes`: every pod pinned to its planned node) places what fits. Then:

- every pod of every JobSet it placed must bind to the node the plan gave it (a filter modeled
  too loosely leaves a pod pending; the test fails with kube-scheduler's own reason);
- no JobSet without an exclusive key that it refused may bind whole once its gates are lifted (a
  filter modeled too strictly). Exclusive JobSets are left out of this direction: their
  exclusivity is JobSet's pod affinity and kube-scheduler's together, and a refused one may still
  be one a pod-by-pod scheduler starts in part, which is no disagreement.

The draws are tight (pods of a cpu or more on nodes of 2-4 cpus, three pod slots on some). When
this was written the real code passed 40 seeds; sidecars counted as plain init containers failed
two of the first eight seeds (pods left pending, "Insufficient cpu"), and every pod's cpu counted
three times failed four of ten (JobSets refused that kube-scheduler bound whole).
"""

from __future__ import annotations

import os
import random
from typing import Any

import pytest

from tests.cluster.kube import scheduler_decided
from tests.cluster.processes import wait_until
from tests.cluster.scenario import Scenario, assignment_of
from tests.helpers.builders import READY, node_manifest

RACK = "example.com/rack"
TIER = "example.com/tier"
GEN = "example.com/gen"
DEDICATED = "example.com/dedicated"
GPU = "example.com/gpu"
EXCLUSIVE = "alpha.jobset.sigs.k8s.io/exclusive-topology"
SEEDS = range(1, 1 + int(os.environ.get("PLACER_AGREEMENT_SEEDS", "10")))
"""Seeds 1..N; CI runs 10 (benchmarks/RESULTS-cluster.md has a longer run)."""


def _nodes(rng: random.Random) -> list[dict[str, Any]]:
    nodes = []
    for i in range(rng.randint(4, 6)):
        allocatable = {
            "cpu": rng.choice(["2", "2500m", "3001m", "4"]),
            "memory": rng.choice(["4Gi", "6Gi"]),
            "pods": rng.choice(["110", "3"]),
        }
        if rng.random() < 0.5:
            allocatable[GPU] = str(rng.choice([2, 4]))
        taints = []
        if rng.random() < 0.3:
            effect = rng.choice(["NoSchedule", "NoExecute", "PreferNoSchedule"])
            taints.append({"key": DEDICATED, "value": "x", "effect": effect})
        ready = rng.random() > 0.1
        nodes.append(
            node_manifest(
                f"fz-{i}",
                labels={
                    RACK: f"r{i // 2}",
                    TIER: rng.choice(["a", "b"]),
                    GEN: rng.choice(["3", "5", "7"]),
                },
                allocatable=allocatable,
                taints=taints,
                conditions=READY if ready else [{"type": "Ready", "status": "False"}],
                unschedulable=rng.random() < 0.1,
            )
        )
    return nodes


def _running(rng: random.Random, nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Pods already bound (by `nodeName`, as a kubelet runs them): capacity and ports taken."""
    pods = []
    for node in nodes:
        if rng.random() < 0.5:
            continue
        container: dict[str, Any] = {
            "name": "c",
            "image": "x",
            "resources": {"requests": {"cpu": rng.choice(["1", "1500m", "333m"]), "memory": "1Gi"}},
        }
        if rng.random() < 0.4:
            container["ports"] = [{"containerPort": 8080, "hostPort": 8080}]
        name = node["metadata"]["name"]
        pods.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"running-{name}"},
                "spec": {
                    "nodeName": name,
                    "containers": [container],
                    "tolerations": [{"operator": "Exists"}],
                },
            }
        )
    return pods


def _resources(rng: random.Random, gpus: int) -> dict[str, Any]:
    requests = {
        "cpu": rng.choice(["750m", "1", "1250m", "500500u"]),
        "memory": rng.choice(["1Gi", "1536Mi", "1.5"]),
    }
    if not gpus:
        return {"requests": requests}
    return {"requests": requests, "limits": {GPU: str(gpus)}}


def _pod_spec(rng: random.Random) -> dict[str, Any]:
    main: dict[str, Any] = {
        "name": "main",
        "image": "x",
        "resources": _resources(rng, rng.choice([0, 0, 1, 2])),
    }
    if rng.random() < 0.3:
        main["ports"] = [{"containerPort": 8080, "hostPort": 8080}]
    spec: dict[str, Any] = {"restartPolicy": "Never", "containers": [main]}
    init = []
    if rng.random() < 0.3:  # a plain init container, alone before the others start
        init.append({"name": "setup", "image": "x", "resources": _resources(rng, 0)})
    if rng.random() < 0.3:  # a sidecar: runs beside the main container
        init.append(
            {"name": "proxy", "image": "x", "restartPolicy": "Always", **_resources_of(rng)}
        )
    if init:
        spec["initContainers"] = init
    if rng.random() < 0.3:
        spec["nodeSelector"] = {TIER: rng.choice(["a", "b"])}
    if rng.random() < 0.4:
        expression = rng.choice(
            [
                {"key": GEN, "operator": "Gt", "values": ["4"]},
                {"key": GEN, "operator": "Lt", "values": ["6"]},
                {"key": RACK, "operator": "NotIn", "values": ["r0"]},
                {"key": TIER, "operator": "In", "values": ["a", "b"]},
                {"key": DEDICATED, "operator": "DoesNotExist"},
            ]
        )
        terms = [{"matchExpressions": [expression]}]
        required = {"nodeSelectorTerms": terms}
        spec["affinity"] = {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}
        }
    tolerations = rng.choice(
        [
            [],
            [{"key": DEDICATED, "operator": "Exists"}],
            [{"key": DEDICATED, "value": "x", "effect": "NoSchedule"}],
        ]
    )
    if tolerations:
        spec["tolerations"] = tolerations
    return spec


def _resources_of(rng: random.Random) -> dict[str, Any]:
    return {"resources": {"requests": {"cpu": rng.choice(["250m", "500m"])}}}


def _jobsets(rng: random.Random, racks: int) -> list[dict[str, Any]]:
    jobsets = []
    for j in range(rng.randint(2, 3)):
        exclusive = rng.random() < 0.5
        pods = rng.randint(1, 3)
        rjob = {
            "name": "w",
            "replicas": rng.randint(1, racks if exclusive else 3),
            "template": {
                "spec": {
                    "parallelism": pods,
                    "completions": pods,
                    "backoffLimit": 0,
                    "template": {"spec": _pod_spec(rng)},
                }
            },
        }
        metadata: dict[str, Any] = {"name": f"js{j}"}
        if exclusive:
            metadata["annotations"] = {EXCLUSIVE: RACK}
        jobsets.append(
            {
                "apiVersion": "jobset.x-k8s.io/v1alpha2",
                "kind": "JobSet",
                "metadata": metadata,
                "spec": {"replicatedJobs": [rjob]},
            }
        )
    return jobsets


def _why_pending(scenario: Scenario, pod: Any) -> str:
    said = [e.message for e in scenario.events(pod.metadata.name) if e.reason == "FailedScheduling"]
    return f"{pod.metadata.name}: {said[-1] if said else 'no scheduling event'}"


@pytest.mark.parametrize("seed", SEEDS)
def test_the_controller_and_kube_scheduler_agree_on_what_fits(
    scenario: Scenario, seed: int
) -> None:
    rng = random.Random(seed)
    nodes = _nodes(rng)
    scenario.use_nodes(nodes)
    for pod in _running(rng, nodes):
        scenario.core.create_namespaced_pod(scenario.namespace, pod)  # type: ignore[arg-type]
    jobsets = _jobsets(rng, racks=len({n["metadata"]["labels"][RACK] for n in nodes}))
    scenario.start_pod_reaper()
    scenario.start_webhook()
    controller = scenario.start_controller("--pin-nodes")
    for jobset in jobsets:
        scenario.create_jobset(jobset)
    names = [j["metadata"]["name"] for j in jobsets]

    def decided() -> bool:
        return all(
            assignment_of(scenario.get_jobset(name))
            or any(e.reason == "Unschedulable" for e in scenario.events(name))
            for name in names
        )

    wait_until(decided, timeout_s=90, what="the controller to place or refuse every JobSet")
    placed = {n: assignment_of(scenario.get_jobset(n)) for n in names}
    placed = {n: record for n, record in placed.items() if record}
    for name, record in placed.items():
        count = sum(len(job["nodes"]) for job in record["jobs"].values())

        def bound(name: str = name, count: int = count) -> bool:
            pods = scenario.pods_of(name)
            return len(pods) == count and all(p.spec.node_name for p in pods)

        try:
            wait_until(bound, timeout_s=60, what=f"every pod of {name} bound")
        except TimeoutError:
            pending = [p for p in scenario.pods_of(name) if not p.spec.node_name]
            pytest.fail(
                "kube-scheduler disagrees:\n"
                + "\n".join(_why_pending(scenario, p) for p in pending)
            )
        for pod in scenario.pods_of(name):
            job = pod.metadata.labels["batch.kubernetes.io/job-name"]
            index = pod.metadata.labels["batch.kubernetes.io/job-completion-index"]
            assert pod.spec.node_name == record["jobs"][job]["nodes"][index], pod.metadata.name
    controller.stop()
    refused = [
        j
        for j in jobsets
        if j["metadata"]["name"] not in placed
        and EXCLUSIVE not in j["metadata"].get("annotations", {})
    ]
    for jobset in sorted(refused, key=_pod_count):
        _assert_kube_scheduler_cannot_bind_it_whole(scenario, jobset)


def _pod_count(jobset: dict[str, Any]) -> int:
    (rjob,) = jobset["spec"]["replicatedJobs"]
    return int(rjob["replicas"] * rjob["template"]["spec"]["parallelism"])


def _assert_kube_scheduler_cannot_bind_it_whole(scenario: Scenario, jobset: dict[str, Any]) -> None:
    """The other direction, for a JobSet without an exclusive key (exclusivity is JobSet's and
    kube-scheduler's together): one the controller refused must not be one kube-scheduler binds
    whole, beside what the controller placed, once its gates are lifted. Refused JobSets are
    lifted one by one, smallest first; pods an earlier one got bound only leave less room, so a
    later one bound whole is still a JobSet placer could have placed."""
    name, count = jobset["metadata"]["name"], _pod_count(jobset)
    wait_until(lambda: len(scenario.pods_of(name)) == count, timeout_s=60, what=f"{name}'s pods")
    for pod in scenario.pods_of(name):
        lifted = {"spec": {"schedulingGates": None}}
        scenario.core.patch_namespaced_pod(pod.metadata.name, scenario.namespace, lifted)

    def decided() -> bool:
        pods = scenario.pods_of(name)
        return len(pods) == count and scheduler_decided(pods)

    wait_until(decided, timeout_s=60, what=f"kube-scheduler to decide on every pod of {name}")
    if not all(p.spec.node_name for p in scenario.pods_of(name)):
        return
    said = [e.message for e in scenario.events(name) if e.reason == "Unschedulable"]
    pytest.fail(f"placer refused {name} ({said[:1]}), kube-scheduler bound all {count} pods")
