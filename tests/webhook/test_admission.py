"""The webhook's decision and its JSONPatch, applied with a real JSONPatch implementation to the
pod the API server would then store (no server here; test_https.py goes over the wire)."""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

import jsonpatch
import pytest

from placer.model.assignment import PLACEMENT_GATE
from placer.model.workload import EXCLUSIVE_TOPOLOGY, JOBSET_NAME_LABEL, NODE_SELECTOR_STRATEGY
from plugins.webhook.admission import (
    MANAGED_LABEL,
    MalformedReview,
    answer_review,
    decide,
    gate_patch,
)
from tests.webhook.harness import review

GATE = {"name": PLACEMENT_GATE}


def jobset_pod(**spec: Any) -> dict[str, Any]:
    """A pod as the Job controller creates it for a JobSet's child Job (name not yet generated)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "generateName": "train-w-0-0-",
            "namespace": "team-a",
            "labels": {JOBSET_NAME_LABEL: "train", "batch.kubernetes.io/job-completion-index": "0"},
            "annotations": {EXCLUSIVE_TOPOLOGY: "cloud.google.com/gce-topology-block"},
        },
        "spec": {"containers": [{"name": "main", "image": "busybox"}], **spec},
    }


def admitted(pod: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the AdmissionReview response, the pod after its patch is applied)."""
    body, _ = answer_review(json.dumps(review(pod)).encode())
    response = json.loads(body)["response"]
    assert response["uid"] == "0b5a-uid" and response["allowed"] is True
    if "patch" not in response:
        assert "patchType" not in response
        return response, pod
    assert response["patchType"] == "JSONPatch"
    patch = json.loads(base64.b64decode(response["patch"]))
    return response, jsonpatch.apply_patch(pod, patch)


@pytest.mark.parametrize(
    ("existing", "after"),
    [
        pytest.param(None, [GATE], id="no-gates"),
        pytest.param("null", [GATE], id="null-gates"),
        pytest.param([], [GATE], id="empty-list"),
        pytest.param(
            [{"name": "kueue.x-k8s.io/topology"}],
            [{"name": "kueue.x-k8s.io/topology"}, GATE],
            id="other-gate-kept",
        ),
    ],
)
def test_gate_added_whatever_gates_the_pod_had(existing: Any, after: list[Any]) -> None:
    spec = {} if existing is None else {"schedulingGates": None if existing == "null" else existing}
    pod = jobset_pod(**spec)
    before = copy.deepcopy(pod)
    _, patched = admitted(pod)
    assert patched["spec"]["schedulingGates"] == after
    # Nothing else changes: the patch touches the gates only.
    patched["spec"].pop("schedulingGates")
    before["spec"].pop("schedulingGates", None)
    assert patched == before


def test_already_gated_pod_gets_no_patch_and_reinvocation_is_idempotent() -> None:
    _, once = admitted(jobset_pod())
    response, twice = admitted(once)
    assert "patch" not in response and twice == once
    assert decide(review(once)["request"]).outcome == "already-gated"


@pytest.mark.parametrize(
    ("change", "outcome"),
    [
        pytest.param(lambda p: p["metadata"]["labels"].pop(JOBSET_NAME_LABEL), "not-a-jobset-pod",
                     id="not-jobset"),
        pytest.param(lambda p: p["metadata"]["labels"].__setitem__(MANAGED_LABEL, "false"),
                     "opted-out", id="opted-out"),
        pytest.param(lambda p: p["metadata"]["annotations"].__setitem__(NODE_SELECTOR_STRATEGY,
                     "true"), "node-selector-strategy", id="node-labels-binding"),
        pytest.param(lambda p: p["spec"].__setitem__("nodeName", "n-1"), "bound", id="bound"),
    ],
)  # fmt: skip
def test_pods_left_alone(change: Any, outcome: str) -> None:
    pod = jobset_pod()
    change(pod)
    response, after = admitted(pod)
    assert after == pod and "patch" not in response
    assert decide(review(pod)["request"]).outcome == outcome
    assert ("warnings" in response) == (outcome == "bound")


def test_managed_label_true_on_the_pod_still_gates() -> None:
    pod = jobset_pod()
    pod["metadata"]["labels"][MANAGED_LABEL] = "true"
    assert admitted(pod)[1]["spec"]["schedulingGates"] == [GATE]


@pytest.mark.parametrize(
    "request_change",
    [
        pytest.param({"operation": "UPDATE"}, id="update"),
        pytest.param({"operation": "DELETE", "object": None}, id="delete"),
        pytest.param({"subResource": "binding"}, id="subresource"),
        pytest.param(
            {
                "kind": {"group": "apps", "version": "v1", "kind": "Deployment"},
                "resource": {"group": "apps", "version": "v1", "resource": "deployments"},
            },
            id="not-a-pod",
        ),
        pytest.param(
            {"kind": {"group": "apps", "version": "v1", "kind": "Deployment"}},
            id="deployment-kind-with-pods-resource",
        ),
        pytest.param({"kind": {"group": "", "version": "v1beta1", "kind": "Pod"}}, id="not-v1"),
        pytest.param({"kind": {"group": "x.io", "version": "v1", "kind": "Pod"}}, id="other-group"),
        pytest.param(
            {"resource": {"group": "", "version": "v1", "resource": "deployments"}},
            id="pod-kind-other-resource",
        ),
    ],
)
def test_only_pod_creates_are_mutated(request_change: dict[str, Any]) -> None:
    body = review(jobset_pod())
    body["request"].update(request_change)
    response = json.loads(answer_review(json.dumps(body).encode())[0])["response"]
    assert response == {"uid": "0b5a-uid", "allowed": True}


@pytest.mark.parametrize(
    ("pod", "message"),
    [
        pytest.param("a string", "request.object: not an object", id="object"),
        pytest.param({"metadata": {"labels": {JOBSET_NAME_LABEL: "t"}}, "spec": []},
                     "request.object.spec: not an object", id="spec"),
        pytest.param({"metadata": {"labels": ["x"]}, "spec": {}},
                     "request.object.metadata.labels: not an object", id="labels"),
        pytest.param({"metadata": {"labels": {JOBSET_NAME_LABEL: "t"}},
                      "spec": {"schedulingGates": "x"}},
                     "schedulingGates: not a list", id="gates"),
        pytest.param({"metadata": {"labels": {JOBSET_NAME_LABEL: "t"}},
                      "spec": {"schedulingGates": [None, 5]}},
                     "schedulingGates[0]: not a gate (an object whose name is a qualified name), "
                     "got None", id="gate-items"),
        pytest.param({"metadata": {"labels": {JOBSET_NAME_LABEL: "t"}},
                      "spec": {"schedulingGates": [{"name": "ok"}, {"name": 5}]}},
                     "schedulingGates[1]: not a gate", id="gate-name-number"),
        pytest.param({"metadata": {"labels": {JOBSET_NAME_LABEL: "t"}},
                      "spec": {"schedulingGates": [{"name": "not a name!"}]}},
                     "schedulingGates[0]: not a gate", id="gate-name-unqualified"),
        pytest.param({"metadata": {"labels": {JOBSET_NAME_LABEL: "t"}}, "spec": {"nodeName": 5}},
                     "request.object.spec.nodeName: not a string", id="node-name"),
    ],
)  # fmt: skip
def test_malformed_pod_is_refused_with_a_message(pod: Any, message: str) -> None:
    body = review({})
    body["request"]["object"] = pod
    response = json.loads(answer_review(json.dumps(body).encode())[0])["response"]
    assert response["uid"] == "0b5a-uid" and response["allowed"] is False
    assert response["status"]["code"] == 400
    assert message in response["status"]["message"]


@pytest.mark.parametrize(
    ("body", "message", "uid"),
    [
        pytest.param(b"{not json", "body is not JSON", "", id="not-json"),
        pytest.param(b"[1, 2]", "body: not an object", "", id="array"),
        pytest.param(b"[" * 100_000, "body is not JSON", "", id="deep-nesting"),
        pytest.param(
            json.dumps({**review({}), "apiVersion": "admission.k8s.io/v1beta1"}).encode(),
            "expected apiVersion admission.k8s.io/v1",
            "0b5a-uid",
            id="v1beta1",
        ),
        pytest.param(json.dumps({**review({}), "request": None}).encode(), "request: not an object",
                     "", id="no-request"),
        pytest.param(json.dumps({**review({}), "request": {"operation": "CREATE"}}).encode(),
                     "request.uid: not a non-empty string, got None", "", id="no-uid"),
        pytest.param(json.dumps({**review({}), "request": {**review({})["request"], "uid": 5}})
                     .encode(), "request.uid: not a non-empty string, got 5", "", id="uid-number"),
    ],
)  # fmt: skip
def test_unreadable_review_raises_with_what_was_found(body: bytes, message: str, uid: str) -> None:
    with pytest.raises(MalformedReview, match=message) as caught:
        answer_review(body)
    assert caught.value.uid == uid


def test_gate_patch_is_empty_only_when_our_gate_is_there() -> None:
    assert gate_patch({"schedulingGates": [{"name": "other"}, GATE]}) == []
    assert gate_patch({"schedulingGates": [{"name": "other"}]}) != []


@pytest.mark.parametrize(
    "kind",
    [
        pytest.param("Pod", id="a-string"),
        pytest.param(["Pod"], id="a-list"),
        pytest.param(None, id="none"),
    ],
)
def test_a_kind_that_is_no_group_version_kind_is_malformed(kind: Any) -> None:
    body = review(jobset_pod())
    body["request"]["kind"] = kind
    response = json.loads(answer_review(json.dumps(body).encode())[0])["response"]
    assert response["allowed"] is False and "patch" not in response
    assert "request.kind: not an object" in response["status"]["message"]
