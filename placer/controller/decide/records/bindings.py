"""How an assignment becomes cluster objects, per binding: pure functions from object to new body.

- gate binding: one pod patch that adds required node-affinity requirements and removes the gate.
  While a pod is gated the API server lets node affinity be set when empty, or requirements be added
  to each existing term, and nothing else (KEP-3838); adding ours to every ORed term narrows the pod
  to `(A and D) or (B and D)`, which is all the rules allow and exactly what we need.
- node-labels binding: one merge patch per node, setting the JobSet node-selector label and taint
  (every other label and taint kept) plus an ownership annotation, so cleanup only ever touches
  nodes placer labeled itself.
- Events: deterministic names, so a retried or repeated create is a harmless 409.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from placer.controller.adapter import Obj, copy_json, resource_version
from placer.model.assignment import PLACEMENT_GATE, PREFIX, JobAssignment
from placer.model.scheduling import term_is_empty
from placer.model.topology import HOSTNAME
from placer.model.workload import EXCLUSIVE_TOPOLOGY, NODE_SELECTOR_STRATEGY, JobSetRequest
from placer.render.emit import NAMESPACED_JOB_LABEL, NO_SCHEDULE_TAINT, domain_requirements

__all__ = [
    "EVENT_COMPONENT",
    "EVENT_MESSAGE_MAX",
    "LABELED_BY_ANNOTATION",
    "NAMESPACED_JOB_LABEL",
    "NO_SCHEDULE_TAINT",
    "event_body",
    "event_message",
    "job_requirements",
    "namespaced_job",
    "node_label_patch",
    "node_selector_label_problem",
    "node_selector_problem",
    "ungate_patch",
    "ungated_pod",
    "unselected_replicated_jobs",
]

LABELED_BY_ANNOTATION = f"{PREFIX}/namespaced-job"
"""On nodes placer labeled: the label value it set; cleanup touches only these nodes."""
EVENT_COMPONENT = f"{PREFIX}/controller"
EVENT_MESSAGE_MAX = 1024
"""The longest Event message placer writes (the API's note limit is about this size)."""


def event_message(text: str) -> str:
    """What an Event says of `text`: what the controller remembers as sent, so a reason longer
    than the limit is recognized as already said instead of sent again every cycle."""
    return text[:EVENT_MESSAGE_MAX]


Requirement = dict[str, Any]


def namespaced_job(namespace: str, job: str) -> str:
    """The node-selector strategy's label value for one child Job."""
    return f"{namespace}_{job}"


LABEL_VALUE_MAX = 63
"""Kubernetes' limit on a label value, so on a nodeSelector value too."""


def node_selector_label_problem(request: JobSetRequest) -> str:
    """Why JobSet's node-selector strategy cannot work for this JobSet, or "".

    JobSet selects each child Job's nodes by the label value `<namespace>_<child Job name>`;
    over 63 characters it is not a valid label value, so no node can carry it and JobSet's own
    child Job (whose nodeSelector holds it) is refused by the API server. Found on the real
    control plane, where every node patch failed with 422 each cycle.
    """
    for _, _, job in request.child_jobs():
        value = namespaced_job(request.namespace, job)
        if len(value) > LABEL_VALUE_MAX:
            return (
                f"node-labels binding: label value {value!r} for child Job {job} is "
                f"{len(value)} characters, over the {LABEL_VALUE_MAX} Kubernetes allows "
                f"(alpha.jobset.sigs.k8s.io/namespaced-job is <namespace>_<child Job name>); "
                "shorten the namespace, JobSet or replicatedJob name"
            )
    return ""


def _annotations(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata") if isinstance(obj, Mapping) else None
    annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
    return annotations if isinstance(annotations, Mapping) else {}


def unselected_replicated_jobs(obj: Mapping[str, Any]) -> list[str]:
    """The replicated jobs of JobSet `obj` whose child Jobs JobSet gives no node selector.

    JobSet (v0.12.0, `constructJob`) adds `namespaced-job` and the no-schedule toleration only to
    a child Job whose annotations hold both the exclusive key and the node-selector flag: the
    template's own, plus the JobSet's two copied together only when the JobSet states the
    exclusive key. A coordinator without an exclusive key, or workers whose key is on their
    template while the flag is on the JobSet, are never selected."""
    on_jobset = _annotations(obj)
    jobset_level = EXCLUSIVE_TOPOLOGY in on_jobset
    rjobs = (obj.get("spec") or {}).get("replicatedJobs") or []
    unselected = []
    for rj in rjobs:
        if not isinstance(rj, Mapping):
            continue
        on_template = _annotations(rj.get("template") or {})
        exclusive = jobset_level or EXCLUSIVE_TOPOLOGY in on_template
        flagged = NODE_SELECTOR_STRATEGY in on_template or (
            jobset_level and NODE_SELECTOR_STRATEGY in on_jobset
        )
        if not (exclusive and flagged):
            unselected.append(str(rj.get("name")))
    return unselected


def node_selector_problem(obj: Mapping[str, Any]) -> str:
    """Why JobSet's node-selector strategy would leave some child Job of `obj` unplaced, or ""."""
    missed = unselected_replicated_jobs(obj)
    if not missed:
        return ""
    return (
        f"node-labels binding: JobSet gives the child Jobs of {', '.join(missed)} no node "
        f"selector: it adds one only where {EXCLUSIVE_TOPOLOGY} and {NODE_SELECTOR_STRATEGY} "
        "apply together (both on the JobSet, or the flag on the replicatedJob template with "
        "an exclusive key on either); a replicated job without an exclusive key needs the gate "
        "binding"
    )


def job_requirements(
    job: JobAssignment, completion_index: int, *, hostnames: Mapping[str, str]
) -> list[Requirement]:
    """Node-affinity requirements for one pod: every (key, value) of the domain's path, `In`, plus
    the pinned node's hostname when the record pins this completion index (`hostnames` maps node
    name -> its `kubernetes.io/hostname` label, which is not always the node name)."""
    reqs = domain_requirements(job.domain) if job.domain is not None else []
    node = job.nodes.get(completion_index)
    if node is not None:
        reqs.append({"key": HOSTNAME, "operator": "In", "values": [hostnames.get(node, node)]})
    return reqs


def ungated_pod(pod: Mapping[str, Any], requirements: Sequence[Requirement]) -> Obj | None:
    """The pod with `requirements` added to its required node affinity and the gate removed; None
    when the pod no longer carries the gate (already done, so nothing to write)."""
    spec = pod.get("spec") or {}
    gates = [g for g in spec.get("schedulingGates") or [] if isinstance(g, Mapping)]
    if not any(g.get("name") == PLACEMENT_GATE for g in gates):
        return None
    # Copy only what changes (the pod may be large; the rest is shared, never mutated).
    new_spec = dict(spec)
    new = {**pod, "spec": new_spec}
    remaining = [g for g in gates if g.get("name") != PLACEMENT_GATE]
    if remaining:
        new_spec["schedulingGates"] = remaining
    else:
        new_spec.pop("schedulingGates", None)
    if requirements:
        affinity = dict(new_spec.get("affinity") or {})
        node_affinity = dict(affinity.get("nodeAffinity") or {})
        required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
        terms = [copy_json(dict(t)) for t in required.get("nodeSelectorTerms") or []]
        if not terms:
            terms = [{"matchExpressions": [dict(r) for r in requirements]}]
        else:
            # an empty term is left as it is (`term_is_empty`): it still matches no node, so
            # narrowing the others narrows the whole
            for term in terms:
                if term_is_empty(term):
                    continue
                current = list(term.get("matchExpressions") or [])
                current.extend(dict(r) for r in requirements if r not in current)
                term["matchExpressions"] = current
        node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {
            **required,
            "nodeSelectorTerms": terms,
        }
        affinity["nodeAffinity"] = node_affinity
        new_spec["affinity"] = affinity
    return new


def ungate_patch(pod: Mapping[str, Any], requirements: Sequence[Requirement]) -> Obj | None:
    """`ungated_pod` as a JSON merge patch: the remaining gates (null when none) and the required
    node-affinity terms, with the pod's resourceVersion as precondition. A patch rather than a PUT,
    so fields this client version does not know are never round-tripped (and lost)."""
    new = ungated_pod(pod, requirements)
    if new is None:
        return None
    spec = new["spec"]
    patch_spec: dict[str, Any] = {"schedulingGates": spec.get("schedulingGates")}
    if requirements:
        required = spec["affinity"]["nodeAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"
        ]
        patch_spec["affinity"] = {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}
        }
    return {"metadata": {"resourceVersion": resource_version(dict(pod))}, "spec": patch_spec}


def _taint_dict(taint: Any) -> dict[str, str]:
    return {"key": taint.key, "value": taint.value, "effect": taint.effect}


def node_label_patch(node: Mapping[str, Any], value: str | None) -> Obj | None:
    """Merge patch making `node` carry the node-selector label `value` (None: placer's label, taint
    and mark removed). None when the node is already that way. The taint list has no merge key, so
    the patch carries the whole list; the resourceVersion makes it fail rather than race."""
    meta = node.get("metadata") or {}
    labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}
    taints = [t for t in (node.get("spec") or {}).get("taints") or [] if isinstance(t, Mapping)]
    ours = _taint_dict(NO_SCHEDULE_TAINT)
    has_taint = any(
        t.get("key") == ours["key"] and t.get("effect") == ours["effect"] for t in taints
    )
    others = [
        dict(t)
        for t in taints
        if not (t.get("key") == ours["key"] and t.get("effect") == ours["effect"])
    ]
    if value is not None:
        if (
            labels.get(NAMESPACED_JOB_LABEL) == value
            and has_taint
            and annotations.get(LABELED_BY_ANNOTATION) == value
        ):
            return None
        return {
            "metadata": {
                "resourceVersion": resource_version(dict(node)),
                "labels": {NAMESPACED_JOB_LABEL: value},
                "annotations": {LABELED_BY_ANNOTATION: value},
            },
            "spec": {"taints": [*others, ours]},
        }
    if (
        NAMESPACED_JOB_LABEL not in labels
        and not has_taint
        and LABELED_BY_ANNOTATION not in annotations
    ):
        return None
    return {
        "metadata": {
            "resourceVersion": resource_version(dict(node)),
            "labels": {NAMESPACED_JOB_LABEL: None},
            "annotations": {LABELED_BY_ANNOTATION: None},
        },
        "spec": {"taints": others or None},
    }


def event_body(
    jobset: Mapping[str, Any],
    *,
    reason: str,
    message: str,
    type_: str,
    now: str,
    instance: str = "",
) -> Obj:
    """A core/v1 Event on the JobSet. The name is derived from what it says, so the same event is
    created once however often a crashed controller retries it."""
    meta = jobset.get("metadata") or {}
    digest = hashlib.sha1(f"{meta.get('uid')}\0{reason}\0{message}".encode()).hexdigest()[:16]
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": f"{meta.get('name')}.{digest}",
            "namespace": meta.get("namespace") or "default",
        },
        "involvedObject": {
            "apiVersion": jobset.get("apiVersion") or "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "name": meta.get("name"),
            "namespace": meta.get("namespace") or "default",
            "uid": meta.get("uid") or "",
            "resourceVersion": meta.get("resourceVersion") or "",
        },
        "reason": reason,
        "message": event_message(message),
        "type": type_,
        "source": {"component": EVENT_COMPONENT},
        "reportingComponent": EVENT_COMPONENT,
        "reportingInstance": instance,
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
    }
