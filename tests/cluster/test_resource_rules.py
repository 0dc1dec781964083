"""Pod resources as the real API server and kube-scheduler read them, and as placer reads them.

Two questions, asked of the real components:
1. Does placer refuse exactly the pods the API server refuses? Each case is a pod created with
   `dryRun=All` (validated and defaulted as a Job's pod would be, stored nowhere) and read by
   `parse_jobset` as a JobSet's pod template: its resources, node affinity, node selector and
   tolerations. The two verdicts must agree, and agree with the one written beside the case.
2. Does placer count pod-level requests (`spec.resources`) as kube-scheduler does? A JobSet whose
   pods state their cpu only at pod level is planned, pinned by `--emit`'s patches, and must bind.
3. Does placer round as kube-scheduler rounds? A request finer than it counts (cpu below a
   millicore, memory below a byte) is rounded up per pod: placer must fit on a node exactly as
   many such pods as kube-scheduler binds there.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s

from placer.model.pod_requests import pod_request
from placer.model.resources import pods_that_fit
from placer.model.snapshots.load import snapshot_from_objects
from tests.cluster.kube import scheduler_decided
from tests.cluster.processes import wait_until
from tests.cluster.scenario import Scenario
from tests.cluster.test_emit_patches import STRATEGIC, _plan_and_emit, _planned_nodes, _wait_for_job
from tests.cluster.test_gate_binding import multislice
from tests.cluster.verdicts import assert_agree, compare, placer_accepts_jobset, raw_dry_run
from tests.helpers.builders import node_manifest
from tests.model.test_pod_requests import LONG_NATIVE

TPU = {"google.com/tpu": "4"}


def _pod(*containers: dict[str, Any], resources: Any = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "containers": [
            {"name": f"c{i}", "image": "x", **({"resources": c} if c else {})}
            for i, c in enumerate(containers)
        ],
    }
    if resources is not None:
        spec["resources"] = resources
    return spec


CASES: list[tuple[str, dict[str, Any], bool]] = [
    # (case, pod spec, the API server accepts it)
    ("tpu-request-equal-to-limit", _pod({"requests": TPU, "limits": TPU}), True),
    ("tpu-limit-only", _pod({"limits": TPU}), True),
    ("tpu-request-only", _pod({"requests": TPU}), False),
    ("tpu-request-below-limit", _pod({"requests": {"google.com/tpu": "2"}, "limits": TPU}), False),
    ("cpu-request-below-limit", _pod({"requests": {"cpu": "1"}, "limits": {"cpu": "2"}}), True),
    ("cpu-request-over-limit", _pod({"requests": {"cpu": "3"}, "limits": {"cpu": "2"}}), False),
    ("ephemeral-storage", _pod({"requests": {"ephemeral-storage": "1Gi"}}), True),
    ("native-prefixed", _pod({"requests": {"kubernetes.io/x": "1"}}), True),
    ("unprefixed-gpu", _pod({"requests": {"gpu": "1"}, "limits": {"gpu": "1"}}), False),
    ("pods-in-a-container", _pod({"limits": {"pods": "1"}}), False),
    ("quota-name", _pod({"limits": {"requests.nvidia.com/gpu": "1"}}), False),
    ("long-prefix", _pod({"limits": {f"{'a' * 245}.com/gpu": "1"}}), False),
    ("hugepages", _pod({"limits": {"memory": "1Gi", "hugepages-2Mi": "4Mi"}}), True),
    ("native-long-prefix", _pod({"requests": {LONG_NATIVE: "1"}}), True),
    (
        "hugepages-half-byte-short",  # Go rounds up to a whole byte: one page
        _pod({"limits": {"memory": "1Gi", "hugepages-2Mi": "2097151500m"}}),
        True,
    ),
    ("hugepages-fraction-page", _pod({"limits": {"memory": "1Gi", "hugepages-1500m": "3"}}), False),
    ("hugepages-part-page", _pod({"limits": {"memory": "1Gi", "hugepages-2Mi": "3Mi"}}), False),
    ("hugepages-no-size", _pod({"limits": {"memory": "1Gi", "hugepages-x": "2Mi"}}), False),
    ("hugepages-alone", _pod({"limits": {"hugepages-2Mi": "4Mi"}}), False),
    (
        "hugepages-request-below-limit",
        _pod(
            {
                "requests": {"hugepages-2Mi": "2Mi"},
                "limits": {"memory": "1Gi", "hugepages-2Mi": "4Mi"},
            }
        ),
        False,
    ),
    ("pod-level-cpu", _pod({}, resources={"requests": {"cpu": "2"}}), True),
    (
        "pod-level-limit-above-containers",
        _pod({"requests": {"cpu": "1"}}, resources={"limits": {"cpu": "2"}}),
        True,
    ),
    (
        "pod-level-below-containers",
        _pod({"requests": {"cpu": "2"}}, resources={"requests": {"cpu": "1"}}),
        False,
    ),
    (
        "pod-level-request-over-its-limit",
        _pod({}, resources={"requests": {"cpu": "3"}, "limits": {"cpu": "2"}}),
        False,
    ),
    (
        "pod-level-defaulted-over-its-limit",
        _pod({"requests": {"cpu": "3"}}, resources={"limits": {"cpu": "2"}}),
        False,
    ),
    (
        "container-limit-over-pod-limit",
        _pod(
            {"requests": {"memory": "512Mi"}, "limits": {"memory": "2Gi"}},
            resources={"limits": {"memory": "1Gi"}},
        ),
        False,
    ),
    ("pod-level-tpu", _pod({}, resources={"requests": TPU, "limits": TPU}), False),
    (
        "pod-level-hugepages-without-limit",
        _pod({}, resources={"requests": {"memory": "1Gi", "hugepages-2Mi": "2Mi"}}),
        False,
    ),
    (
        "pod-level-hugepages",
        _pod({}, resources={"limits": {"memory": "1Gi", "hugepages-2Mi": "4Mi"}}),
        True,
    ),
]


def _required(*expressions: dict[str, Any], fields: Any = None) -> dict[str, Any]:
    term: dict[str, Any] = {"matchExpressions": list(expressions)} if expressions else {}
    if fields is not None:
        term["matchFields"] = fields
    spec = _pod({})
    spec["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
        }
    }
    return spec


def _with(**fields: Any) -> dict[str, Any]:
    return {**_pod({}), **fields}


SELECTION: list[tuple[str, dict[str, Any], bool]] = [
    # (case, pod spec, the API server accepts it): what decides where a pod may run
    ("gt-integer", _required({"key": "gen", "operator": "Gt", "values": ["3"]}), True),
    ("gt-not-an-integer", _required({"key": "gen", "operator": "Gt", "values": ["x"]}), True),
    ("lt-decimal", _required({"key": "gen", "operator": "Lt", "values": ["1.5"]}), True),
    ("lt-negative", _required({"key": "gen", "operator": "Lt", "values": ["-1"]}), False),
    ("gt-two-values", _required({"key": "gen", "operator": "Gt", "values": ["1", "2"]}), False),
    ("in-no-values", _required({"key": "pool", "operator": "In", "values": []}), False),
    ("in-bad-value", _required({"key": "pool", "operator": "In", "values": ["a b"]}), False),
    (
        "exists-with-values",
        _required({"key": "pool", "operator": "Exists", "values": ["a"]}),
        False,
    ),
    ("bad-key", _required({"key": "a b", "operator": "Exists"}), False),
    ("bad-operator", _required({"key": "pool", "operator": "Near", "values": ["a"]}), False),
    (
        "field-one-name",
        _required(fields=[{"key": "metadata.name", "operator": "In", "values": ["n1"]}]),
        True,
    ),
    (
        "field-two-names",
        _required(fields=[{"key": "metadata.name", "operator": "In", "values": ["n1", "n2"]}]),
        False,
    ),
    (
        "field-not-the-name",
        _required(fields=[{"key": "metadata.labels", "operator": "In", "values": ["n1"]}]),
        False,
    ),
    (
        "no-terms",
        _with(
            affinity={
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}
                }
            }
        ),
        False,
    ),
    (
        "an-empty-term",  # valid, and it matches no node
        _with(
            affinity={
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{}]}
                }
            }
        ),
        True,
    ),
    ("node-selector", _with(nodeSelector={"pool": "p1"}), True),
    (
        "port-empty-protocol",
        _pod({})
        | {
            "containers": [
                {"name": "c", "image": "x", "ports": [{"containerPort": 80, "protocol": ""}]}
            ]
        },
        True,
    ),
    ("node-selector-bad-value", _with(nodeSelector={"pool": "a b"}), False),
    ("node-selector-bad-key", _with(nodeSelector={"-pool": "p1"}), False),
    (
        "toleration",
        _with(
            tolerations=[{"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"}]
        ),
        True,
    ),
    (
        "toleration-exists-with-value",
        _with(tolerations=[{"key": "k", "operator": "Exists", "value": "v"}]),
        False,
    ),
    ("toleration-no-key-equal", _with(tolerations=[{"operator": "Equal", "value": "v"}]), False),
    ("toleration-of-everything", _with(tolerations=[{"operator": "Exists"}]), True),
    (
        "toleration-seconds",
        _with(tolerations=[{"key": "k", "effect": "NoExecute", "tolerationSeconds": 60}]),
        True,
    ),
    (
        "toleration-seconds-not-noexecute",
        _with(tolerations=[{"key": "k", "effect": "NoSchedule", "tolerationSeconds": 60}]),
        False,
    ),
    (
        "toleration-empty-operator",
        _with(tolerations=[{"key": "k", "operator": "", "value": "v"}]),
        True,
    ),
    (
        "toleration-empty-operator-no-key",
        _with(tolerations=[{"operator": "", "value": "v"}]),
        False,
    ),
    ("toleration-bad-effect", _with(tolerations=[{"key": "k", "effect": "Sometimes"}]), False),
    ("toleration-bad-operator", _with(tolerations=[{"key": "k", "operator": "Near"}]), False),
    ("toleration-bad-value", _with(tolerations=[{"key": "k", "value": "a b"}]), False),
]


def _cpu(value: Any) -> dict[str, Any]:
    return _pod({"requests": {"cpu": value}})


QUANTITIES: list[tuple[str, dict[str, Any], bool]] = [
    # (case, pod spec, the API server accepts it): Kubernetes' quantity grammar, the spaces
    # around it trimmed (tabs and newlines reach the server escaped, and are not)
    *(
        (f"cpu-{text}", _cpu(text), True)
        for text in (".5", "5.", "+1", "1e3", "1E3", "1e-3", "1k", "1Ki", "100m", "1n", " 1", "1 ")
    ),
    *(
        (f"cpu-{text or 'empty'}", _cpu(text), False)
        for text in ("1K", "1.5.5", "0x10", "1e", "", "\t1", "1\n", "-1", "1ki", "\u0661")
    ),
    ("cpu-json-integer", _cpu(2), True),
    ("cpu-json-float", _cpu(0.25), True),
    ("cpu-json-null", _cpu(None), True),
    ("cpu-json-true", _cpu(True), False),
]


def _api_accepts(core: k8s.CoreV1Api, namespace: str, spec: dict[str, Any]) -> bool:
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "probe"}, "spec": spec}
    return raw_dry_run(core.api_client, f"/api/v1/namespaces/{namespace}/pods", body)


def _placer_accepts(spec: dict[str, Any]) -> bool:
    """Read as the pod template of a JobSet that is otherwise sound."""
    rjob = {"name": "w", "template": {"spec": {"template": {"spec": spec}}}}
    jobset = {"kind": "JobSet", "metadata": {"name": "probe"}, "spec": {"replicatedJobs": [rjob]}}
    return placer_accepts_jobset(jobset)


def test_placer_refuses_exactly_the_pods_the_api_server_refuses(scenario: Scenario) -> None:
    said, written = compare(
        [*CASES, *SELECTION, *QUANTITIES],
        [],
        lambda spec: _api_accepts(scenario.core, scenario.namespace, spec),
        _placer_accepts,
    )
    assert_agree(said, written)


def _pod_level_cpu(name: str, namespace: str) -> dict[str, Any]:
    """Two pods per child Job, no exclusive key, each stating 100 of a node's 110.94 cpu at pod
    level only: one pod per node, or the second cannot bind."""
    manifest = copy.deepcopy(multislice(name, 1))
    manifest["metadata"]["namespace"] = namespace
    del manifest["metadata"]["annotations"]["alpha.jobset.sigs.k8s.io/exclusive-topology"]
    manifest["spec"]["suspend"] = True
    pod = manifest["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    pod["hostNetwork"] = False  # no host ports: nothing else keeps the pods apart
    pod.pop("dnsPolicy")
    pod["containers"][0].pop("ports")
    pod["containers"][0]["resources"] = {}
    pod["tolerations"] = [{"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"}]
    pod["resources"] = {"requests": {"cpu": "100"}}
    return manifest


def test_pod_level_requests_are_counted_as_kube_scheduler_counts_them(
    scenario: Scenario, tmp_path: Path
) -> None:
    scenario.use_example_cluster("tpu-v5e-v6e.yaml")
    ns = scenario.namespace
    manifest = _pod_level_cpu("podlevel", ns)
    emitted = _plan_and_emit(tmp_path, [manifest])
    planned = _planned_nodes(emitted["plan"])
    assert len(planned["podlevel-workers-0"]) == 2, "100 cpu each: one pod per node"
    scenario.create_jobset(manifest)
    batch = k8s.BatchV1Api(scenario.core.api_client)
    (patch,) = (emitted["dir"] / "jobs" / ns).glob("*.yaml")
    _wait_for_job(batch, patch.stem, ns)
    batch.patch_namespaced_job(
        patch.stem, ns, yaml.safe_load(patch.read_text()), _content_type=STRATEGIC
    )
    scenario.patch_jobset("podlevel", {"spec": {"suspend": False}})
    pods = scenario.wait_pods_bound("podlevel", count=2)
    assert {p.spec.node_name for p in pods} == planned["podlevel-workers-0"]


SUB_UNIT = [
    # (resource, the node's allocatable, each pod's request): two requests fit exactly, but
    # kube-scheduler rounds each pod's total up (cpu to the millicore, the rest to whole units)
    pytest.param("cpu", "1001m", "500500u", id="cpu-below-a-millicore"),
    pytest.param("memory", "1001", "500.5", id="memory-below-a-byte"),
]


@pytest.mark.parametrize(("resource", "allocatable", "asked"), SUB_UNIT)
def test_requests_finer_than_the_scheduler_counts_are_rounded_as_it_rounds_them(
    scenario: Scenario, resource: str, allocatable: str, asked: str
) -> None:
    """As many of three such pods as kube-scheduler binds on the one node, placer fits."""
    node = node_manifest("tiny", allocatable={resource: allocatable, "pods": "110"})
    scenario.use_nodes([node])
    spec = _pod({"requests": {resource: asked}})
    for i in range(3):
        body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}"}, "spec": spec}
        scenario.core.create_namespaced_pod(scenario.namespace, body)  # type: ignore[arg-type]

    def decided() -> bool:
        pods = scenario.core.list_namespaced_pod(scenario.namespace).items
        return len(pods) == 3 and scheduler_decided(pods)

    wait_until(decided, timeout_s=60, what="kube-scheduler to decide on all three pods")
    pods = scenario.core.list_namespaced_pod(scenario.namespace).items
    bound = sum(1 for p in pods if p.spec and p.spec.node_name)
    free = snapshot_from_objects([node], []).node("tiny").free
    assert pods_that_fit(free, pod_request(spec)) == bound == 1
