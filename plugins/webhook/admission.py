"""What `placer webhook` answers to one AdmissionReview: pure functions, bytes in, bytes out.

Called by the HTTPS server (server.py) for every pod CREATE the API server sends. The decision sees
only the review: no cluster reads, so it is fast, cannot fail on the network, and a rerun (the API
server reinvokes mutating webhooks, `reinvocationPolicy: IfNeeded`) gives the same answer.

Who gets the gate. The webhook configuration (deploy/webhook/) sends only pods that carry the
`jobset.sigs.k8s.io/jobset-name` label, in namespaces labeled `placer.dev/managed: "true"`, and not
labeled `placer.dev/managed: "false"` themselves. A JobSet's own annotations never reach its pods
(JobSet copies only its exclusive-topology and node-selector annotations), so the namespace label
is the opt-in; the pod-template label is the per-JobSet opt-out. The answer re-checks what it can
see, so a configuration without selectors never gates anything else:

- not a CREATE of a v1 Pod (`request.kind` group "", version v1, kind Pod; `request.resource`
  v1 pods when given), not a JobSet pod, opted out: allowed unchanged (a `request.kind` that is
  not an object at all is a malformed review);
- JobSet's node-selector strategy (`alpha.jobset.sigs.k8s.io/node-selector` on the pod): that
  JobSet is placed through node labels (`placer controller --binding node-labels`), no gate;
- `spec.nodeName` already set: the API server refuses gates on bound pods, allowed unchanged with
  a warning;
- otherwise a JSONPatch adding `placer.dev/placement` to `spec.schedulingGates` (created, or
  appended to the gates already there, each of which must be an object with a qualified name);
  nothing when the gate is already present.

A review that cannot be read gets an AdmissionReview answer with `allowed: false` and a status
message, never an exception: the configuration's `failurePolicy: Fail` says "no pod of an
opted-in JobSet may start unplaced", and a review we cannot read might be such a pod.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from placer.model.assignment import PLACEMENT_GATE, PREFIX
from placer.model.messages import echo
from placer.model.read.loading import JSON_DECODER
from placer.model.read.names import qualified_name_problem
from placer.model.workload import JOBSET_NAME_LABEL, NODE_SELECTOR_STRATEGY

__all__ = [
    "ADMISSION_API_VERSION",
    "MANAGED_LABEL",
    "POD_KIND",
    "POD_RESOURCE",
    "Answer",
    "MalformedReview",
    "Outcome",
    "answer_review",
    "decide",
    "error_review",
    "gate_patch",
]

ADMISSION_API_VERSION = "admission.k8s.io/v1"
MANAGED_LABEL = f"{PREFIX}/managed"
"""Namespace label `"true"` opts a namespace in; pod-template label `"false"` opts a JobSet out."""

Outcome = Literal[
    "gated", "already-gated", "not-a-pod-create", "not-a-jobset-pod", "opted-out",
    "node-selector-strategy", "bound", "malformed",
]  # fmt: skip
"""Why the answer is what it is; also the `outcome` label of the admissions metric."""

JsonPatch = list[dict[str, Any]]


class MalformedReview(ValueError):
    """The request is not a readable AdmissionReview v1 for a pod; `uid` when one was found."""

    def __init__(self, message: str, *, uid: str = "") -> None:
        super().__init__(message)
        self.uid = uid


@dataclass(frozen=True)
class Answer:
    """One decision: the patch (empty: admit unchanged), why, and warnings for the user."""

    outcome: Outcome
    patch: JsonPatch = field(default_factory=list)
    warnings: tuple[str, ...] = ()


def gate_patch(spec: Mapping[str, Any]) -> JsonPatch:
    """JSONPatch adding the placement gate to a pod spec; empty when it is already there.

    `schedulingGates` absent or null: `add` the whole list (RFC 6902 `add` on an existing member
    replaces it, so null is covered). A list: append with `/-`, keeping the gates already there.
    """
    gates = spec.get("schedulingGates")
    if gates is None:
        return [{"op": "add", "path": "/spec/schedulingGates", "value": [{"name": PLACEMENT_GATE}]}]
    if not isinstance(gates, list):
        raise MalformedReview("request.object.spec.schedulingGates: not a list")
    for i, gate in enumerate(gates):
        name = gate.get("name") if isinstance(gate, Mapping) else None
        if not isinstance(name, str) or qualified_name_problem(name):
            raise MalformedReview(
                f"request.object.spec.schedulingGates[{i}]: not a gate (an object whose name is "
                f"a qualified name), got {echo(gate)}"
            )
    if any(g["name"] == PLACEMENT_GATE for g in gates):
        return []
    return [{"op": "add", "path": "/spec/schedulingGates/-", "value": {"name": PLACEMENT_GATE}}]


def _mapping(value: Any, where: str, uid: str = "") -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise MalformedReview(f"{where}: not an object", uid=uid)
    return value


POD_KIND = ("", "v1", "Pod")
"""(group, version, kind) of the only reviews patched: the v1 Pod the webhook is registered for
(the API server converts a review to that version, so any other is not ours to change)."""
POD_RESOURCE = ("", "v1", "pods")


def _gvk(kind: Mapping[str, Any]) -> tuple[object, object, object]:
    return (kind.get("group", ""), kind.get("version"), kind.get("kind"))


def _gvr(resource: Mapping[str, Any]) -> tuple[object, object, object]:
    return (resource.get("group", ""), resource.get("version"), resource.get("resource"))


def _pod_name(meta: Mapping[str, Any], namespace: str) -> str:
    name = meta.get("name") or f"{meta.get('generateName') or ''}*"
    return f"{namespace}/{name}"


def decide(request: Mapping[str, Any]) -> Answer:
    """The decision for one `AdmissionReview.request` (see the module docstring)."""
    uid = str(request.get("uid") or "")
    kind = _mapping(request.get("kind"), "request.kind", uid)
    resource = request.get("resource")
    if resource is not None:
        resource = _mapping(resource, "request.resource", uid)
    is_pod = _gvk(kind) == POD_KIND and (resource is None or _gvr(resource) == POD_RESOURCE)
    if request.get("operation") != "CREATE" or not is_pod or request.get("subResource"):
        return Answer("not-a-pod-create")
    pod = _mapping(request.get("object"), "request.object", uid)
    meta = _mapping(pod.get("metadata") or {}, "request.object.metadata", uid)
    labels = _mapping(meta.get("labels") or {}, "request.object.metadata.labels", uid)
    annotations = _mapping(
        meta.get("annotations") or {}, "request.object.metadata.annotations", uid
    )
    if JOBSET_NAME_LABEL not in labels:
        return Answer("not-a-jobset-pod")
    if labels.get(MANAGED_LABEL) == "false":
        return Answer("opted-out")
    if NODE_SELECTOR_STRATEGY in annotations:
        return Answer("node-selector-strategy")
    spec = _mapping(pod.get("spec"), "request.object.spec", uid)
    node_name = spec.get("nodeName")
    if node_name is not None and not isinstance(node_name, str):
        raise MalformedReview("request.object.spec.nodeName: not a string", uid=uid)
    if node_name:
        name = _pod_name(meta, str(request.get("namespace") or ""))
        return Answer(
            "bound",
            warnings=(f"placer: pod {name} is already bound to a node; not gated for placement",),
        )
    try:
        patch = gate_patch(spec)
    except MalformedReview as e:
        raise MalformedReview(str(e), uid=uid) from None
    return Answer("gated" if patch else "already-gated", patch)


def _review(response: dict[str, Any]) -> bytes:
    return json.dumps(
        {"apiVersion": ADMISSION_API_VERSION, "kind": "AdmissionReview", "response": response},
        separators=(",", ":"),
    ).encode()


def error_review(message: str, *, uid: str = "", code: int = 400) -> bytes:
    """An AdmissionReview refusing the request with `message` (see the module docstring)."""
    return _review(
        {
            "uid": uid,
            "allowed": False,
            "status": {"status": "Failure", "code": code, "message": f"placer webhook: {message}"},
        }
    )


def _request(body: bytes) -> Mapping[str, Any]:
    try:
        review = JSON_DECODER.decode(body.decode("utf-8"))
    except (ValueError, RecursionError) as e:
        raise MalformedReview(f"body is not JSON ({type(e).__name__})") from None
    review = _mapping(review, "body")
    request = review.get("request")
    found = request.get("uid") if isinstance(request, Mapping) else None
    uid = found if isinstance(found, str) else ""
    if review.get("apiVersion") != ADMISSION_API_VERSION or review.get("kind") != "AdmissionReview":
        raise MalformedReview(
            f"expected apiVersion {ADMISSION_API_VERSION} kind AdmissionReview, got "
            f"{echo(review.get('apiVersion'))} {echo(review.get('kind'))}",
            uid=uid,
        )
    request = _mapping(request, "request")
    if not isinstance(request.get("uid"), str) or not request["uid"]:
        raise MalformedReview(
            f"request.uid: not a non-empty string, got {echo(request.get('uid'))}"
        )
    return request


def answer_review(body: bytes) -> tuple[bytes, Answer]:
    """The AdmissionReview response to a request body, and the decision behind it.

    Raises `MalformedReview` when the body is no AdmissionReview v1 with a request uid (the
    caller answers with `error_review` and an HTTP error: there is no request to answer); a
    readable request whose pod is malformed is answered here, `allowed: false`, HTTP 200.
    """
    request = _request(body)
    uid = str(request["uid"])
    try:
        answer = decide(request)
    except MalformedReview as e:
        return error_review(str(e), uid=uid), Answer("malformed")
    response: dict[str, Any] = {"uid": uid, "allowed": True}
    if answer.patch:
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(json.dumps(answer.patch).encode()).decode()
    if answer.warnings:
        response["warnings"] = list(answer.warnings)
    return _review(response), answer
