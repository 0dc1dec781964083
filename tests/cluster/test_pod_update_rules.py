"""The in-memory cluster refuses exactly the pod updates the real API server refuses.

`MemoryCluster` (placer/controller/act/memory_adapter.py) stands in for the API server in the
controller's unit tests and the benchmarks, and enforces the rules for updating a pod that waits
at a scheduling gate (KEP-3838): gates only removed, node selector only extended, required node
affinity only narrowed, and the rest of the spec unchanged. Each case here is one JSON merge patch
(what placer's adapter sends) of a stored pod: the real API server judges it with `dryRun=All`,
the in-memory cluster with `pod_update_violation`; the verdicts must agree and match the one
written beside the case. `STRICTER` lists what the real server allows and the in-memory cluster
refuses, on purpose: updates placer never makes.
"""

from __future__ import annotations

import copy
from typing import Any

from placer.controller.act.memory_adapter import pod_update_violation
from placer.controller.act.selectors import merge_patch
from placer.controller.decide.records.bindings import ungate_patch
from tests.cluster.kube import dry_run_merge_patch
from tests.cluster.scenario import Scenario
from tests.cluster.verdicts import assert_agree

ZONE = "topology.kubernetes.io/zone"
POOL = "cloud.google.com/gke-nodepool"


def requirement(key: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": "In", "values": list(values)}


def raw_terms(*terms: dict[str, Any]) -> dict[str, Any]:
    """Required node affinity of these node selector terms, as written."""
    selector = {"nodeSelectorTerms": list(terms)}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": selector}}


def required(*terms: list[dict[str, Any]]) -> dict[str, Any]:
    """Required node affinity of one term per list of requirements."""
    return raw_terms(*({"matchExpressions": expressions} for expressions in terms))


PREFERRED = {
    "preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "preference": {"matchExpressions": [requirement(ZONE, "a")]}}
    ]
}


def pod(gates: tuple[str, ...] = ("placer.dev/placement",), **spec: Any) -> dict[str, Any]:
    """A pod no scheduler takes (another scheduler's name), with `gates` and `spec`."""
    body: dict[str, Any] = {
        "schedulerName": "placer-test-nobody",
        "containers": [{"name": "c", "image": "x"}],
        **spec,
    }
    if gates:
        body["schedulingGates"] = [{"name": g} for g in gates]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": body}


def spec_patch(**fields: Any) -> dict[str, Any]:
    return {"spec": fields}


ONE_TERM = required([requirement(POOL, "p1")])
NARROWER = required([requirement(POOL, "p1"), requirement(ZONE, "a")])
Case = tuple[str, dict[str, Any], dict[str, Any], bool]
"""(case, the stored pod, the merge patch, both accept it)"""

CASES: list[Case] = [
    ("the only gate removed", pod(), spec_patch(schedulingGates=None), True),
    (
        "one of two gates removed",
        pod(("a", "b")),
        spec_patch(schedulingGates=[{"name": "a"}]),
        True,
    ),
    (
        "a gate added",
        pod(("a",)),
        spec_patch(schedulingGates=[{"name": "a"}, {"name": "b"}]),
        False,
    ),
    ("a gate renamed", pod(("a",)), spec_patch(schedulingGates=[{"name": "b"}]), False),
    ("required affinity set while gated", pod(), spec_patch(affinity=ONE_TERM), True),
    (
        "required affinity narrowed: a requirement appended",
        pod(affinity=ONE_TERM),
        spec_patch(affinity=NARROWER),
        True,
    ),
    (
        "required affinity narrowed with the gate removed in the same patch",
        pod(affinity=ONE_TERM),
        spec_patch(
            schedulingGates=None,
            affinity=NARROWER,
        ),
        True,
    ),
    (
        "a requirement put before the existing one",
        pod(affinity=ONE_TERM),
        spec_patch(affinity=required([requirement(ZONE, "a"), requirement(POOL, "p1")])),
        False,
    ),
    (
        "required affinity widened: a value added to a requirement",
        pod(affinity=ONE_TERM),
        spec_patch(affinity=required([requirement(POOL, "p1", "p2")])),
        False,
    ),
    (
        "required affinity widened: a requirement removed",
        pod(affinity=NARROWER),
        spec_patch(affinity=ONE_TERM),
        False,
    ),
    (
        "a node selector term added",
        pod(affinity=ONE_TERM),
        spec_patch(affinity=required([requirement(POOL, "p1")], [requirement(ZONE, "a")])),
        False,
    ),
    (
        "every term narrowed alike",
        pod(affinity=required([requirement(POOL, "p1")], [requirement(POOL, "p2")])),
        spec_patch(
            affinity=required(
                [requirement(POOL, "p1"), requirement(ZONE, "a")],
                [requirement(POOL, "p2"), requirement(ZONE, "a")],
            )
        ),
        True,
    ),
    (
        "preferred affinity set while gated",
        pod(affinity=ONE_TERM),
        spec_patch(affinity={"nodeAffinity": PREFERRED}),
        True,
    ),
    (
        "node selector extended while gated",
        pod(nodeSelector={POOL: "p1"}),
        spec_patch(nodeSelector={ZONE: "a"}),
        True,
    ),
    (
        "node selector changed while gated",
        pod(nodeSelector={POOL: "p1"}),
        spec_patch(nodeSelector={POOL: "p2"}),
        False,
    ),
    (
        "node selector entry removed while gated",
        pod(nodeSelector={POOL: "p1"}),
        spec_patch(nodeSelector={POOL: None}),
        False,
    ),
    ("required affinity set once ungated", pod(()), spec_patch(affinity=ONE_TERM), False),
    ("node selector extended once ungated", pod(()), spec_patch(nodeSelector={ZONE: "a"}), False),
    ("a gate added once ungated", pod(()), spec_patch(schedulingGates=[{"name": "a"}]), False),
    ("the restart policy changed", pod(), spec_patch(restartPolicy="Never"), False),
    ("the priority class name set", pod(), spec_patch(priorityClassName="x"), False),
]

STRICTER: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    # The real server lets a pod's images change and its tolerations grow at any time; placer
    # never writes either, so the in-memory cluster keeps the whole rest of the spec fixed.
    ("a container image changed", pod(), spec_patch(containers=[{"name": "c", "image": "y"}])),
    (
        "a toleration added",
        pod(),
        spec_patch(tolerations=[{"key": "k", "operator": "Exists", "effect": "NoSchedule"}]),
    ),
]


def stored(scenario: Scenario, body: dict[str, Any], index: int) -> dict[str, Any]:
    """`body` created for real (defaults applied), as the API server returns it."""
    manifest = copy.deepcopy(body)
    manifest["metadata"]["name"] = f"p{index}"
    # the client validates a dict into V1Pod
    created = scenario.core.create_namespaced_pod(scenario.namespace, manifest)  # type: ignore[arg-type]
    return dict(scenario.core.api_client.sanitize_for_serialization(created))


def cluster_accepts_patch(
    scenario: Scenario, current: dict[str, Any], patch: dict[str, Any]
) -> bool:
    name = current["metadata"]["name"]
    path = f"/api/v1/namespaces/{scenario.namespace}/pods/{name}"
    return dry_run_merge_patch(scenario.core.api_client, path, patch)[0] < 300


def memory_accepts_patch(current: dict[str, Any], patch: dict[str, Any]) -> bool:
    return pod_update_violation(current, merge_patch(current, patch)) is None


def test_the_in_memory_cluster_refuses_exactly_the_pod_updates_the_api_server_refuses(
    scenario: Scenario,
) -> None:
    asked = [*CASES, *((case, body, patch, False) for case, body, patch in STRICTER)]
    said = {}
    for index, (case, body, patch, _) in enumerate(asked):
        current = stored(scenario, body, index)
        said[case] = (
            cluster_accepts_patch(scenario, current, patch),
            memory_accepts_patch(current, patch),
        )
    written = {case: (accepts, accepts) for case, _, _, accepts in CASES}
    written |= {case: (True, False) for case, _, _ in STRICTER}
    assert_agree(said, written, judge="the in-memory cluster")


MATCH_FIELDS = {"key": "metadata.name", "operator": "In", "values": ["n1"]}


SHAPES = {
    "no affinity": pod(),
    "a node selector": pod(nodeSelector={ZONE: "a"}),
    "one term": pod(affinity=ONE_TERM),
    "two terms": pod(affinity=required([requirement(POOL, "p1")], [requirement(POOL, "p2")])),
    "an empty term beside one": pod(
        affinity=raw_terms({}, {"matchExpressions": [requirement(POOL, "p1")]})
    ),
    "a term of fields only": pod(affinity=raw_terms({"matchFields": [MATCH_FIELDS]})),
    "preferred affinity only": pod(affinity={"nodeAffinity": PREFERRED}),
    "another gate left": pod(("placer.dev/placement", "other.example/gate")),
}


def test_placers_ungate_patch_is_accepted_for_every_shape_of_node_affinity(
    scenario: Scenario,
) -> None:
    """The patch the controller sends (`ungate_patch`: its domain's requirements added to every
    required term, its gate removed) for pods whose templates carry each shape of node affinity
    a JobSet may have: the real API server accepts every one, and so does the in-memory cluster."""
    requirements = [requirement(POOL, "p1"), requirement("kubernetes.io/hostname", "h1")]
    said = {}
    for index, (shape, body) in enumerate(SHAPES.items()):
        current = stored(scenario, body, 100 + index)
        patch = ungate_patch(current, requirements)
        assert patch is not None, shape
        said[shape] = (
            cluster_accepts_patch(scenario, current, patch),
            memory_accepts_patch(current, patch),
        )
    assert_agree(said, {shape: (True, True) for shape in SHAPES}, judge="the in-memory cluster")
