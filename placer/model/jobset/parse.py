"""JobSet manifests -> `JobSetRequest`, for `placer plan` (files) and the controller (watches).

Only the fields that decide placement are validated, with the structs of `jobset.objects` (the
snapshot loader's schema, read strictly); unknown fields are skipped there, and the raw object,
proposed API fields such as `spec.scheduling` included, is kept as `manifest` for the writers.
Every mistake is an `InputError` naming the file, the object (`namespace/name`) and the field
path, e.g. `spec.replicatedJobs[0].replicas`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from placer.model.durations import jobset_expected_duration
from placer.model.errors import InputError
from placer.model.jobset.names import check_jobset_names
from placer.model.jobset.objects import (
    AffinitySpec,
    JobSetManifest,
    RequirementSpec,
    TemplatePodSpec,
    TolerationSpec,
)
from placer.model.jobset.webhook_rules import check_jobset_webhook_rules
from placer.model.kube.go_json import as_go_reads
from placer.model.kube.objects import pod_host_ports, read_as
from placer.model.kueue.annotations import check_podset_groups, read_kueue_topology
from placer.model.messages import echo
from placer.model.pod_requests import pod_request
from placer.model.priorities import NO_PRIORITY_CLASSES, PriorityClasses
from placer.model.read.limits import (
    check_nesting_depth,
    check_pods_per_jobset,
    check_pods_per_plan,
)
from placer.model.read.manifests import describe_object, object_key, read_documents
from placer.model.scheduling import NodeSelectorRequirement, NodeSelectorTerm, Toleration
from placer.model.workload import (
    EXCLUSIVE_TOPOLOGY,
    NODE_SELECTOR_STRATEGY,
    JobSetRequest,
    PodShape,
    ReplicatedJobRequest,
)

__all__ = [
    "load_jobsets",
    "parse_affinity_terms",
    "parse_jobset",
    "parse_tolerations",
    "validate_jobset",
]

log = logging.getLogger(__name__)

NODE_NAME_FIELD = "metadata.name"


# --- pod-template pieces ------------------------------------------------------------------------


def parse_tolerations(specs: Sequence[TolerationSpec]) -> tuple[Toleration, ...]:
    return tuple(
        Toleration(key=t.key, operator=t.operator or "Equal", value=t.value, effect=t.effect)
        for t in specs
    )


def _requirement(
    r: RequirementSpec, *, field: str, source: str, obj: str
) -> NodeSelectorRequirement:
    """Apply the API server's validation, which the schema's shape check cannot express."""

    def bad(msg: str) -> InputError:
        return InputError(msg, source=source, obj=obj, field=field, code="affinity")

    if r.operator in ("In", "NotIn") and not r.values:
        raise bad(f"operator {r.operator} needs at least one value")
    if r.operator in ("Exists", "DoesNotExist") and r.values:
        raise bad(f"operator {r.operator} takes no values")
    if r.operator in ("Gt", "Lt") and len(r.values) != 1:
        raise bad(f"operator {r.operator} needs exactly one value")
    # A value that is no integer passes the API server (it is a label value); kube-scheduler's
    # requirement then matches no node, and so does placer's (`scheduling.matches_requirement`).
    return NodeSelectorRequirement(key=r.key, operator=r.operator, values=tuple(r.values))


def parse_affinity_terms(
    affinity: AffinitySpec | None, *, source: str = "", obj: str = "", field: str = "spec.affinity"
) -> tuple[NodeSelectorTerm, ...]:
    """Required node affinity terms (ORed). matchFields may only name `metadata.name`, with In
    or NotIn and one node name each, as the API server validates a pod's node field selector."""
    required = (
        affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution
        if affinity and affinity.nodeAffinity
        else None
    )
    if required is None:
        return ()
    base = f"{field}.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
    if not required.nodeSelectorTerms:  # else "no requirement" would stand for "no node"
        raise InputError(
            "must have at least one node selector term",
            source=source,
            obj=obj,
            field=base,
            code="affinity",
        )
    terms: list[NodeSelectorTerm] = []
    for t, term in enumerate(required.nodeSelectorTerms):
        exprs = tuple(
            _requirement(r, field=f"{base}[{t}].matchExpressions[{i}]", source=source, obj=obj)
            for i, r in enumerate(term.matchExpressions)
        )
        names: list[NodeSelectorRequirement] = []
        for i, r in enumerate(term.matchFields):
            f = f"{base}[{t}].matchFields[{i}]"
            if r.key != NODE_NAME_FIELD:
                raise InputError(
                    f"matchFields supports only {NODE_NAME_FIELD}, got {echo(r.key)}",
                    source=source,
                    obj=obj,
                    field=f"{f}.key",
                    code="affinity",
                )
            if r.operator not in ("In", "NotIn"):
                raise InputError(
                    f"matchFields supports only In and NotIn, got {r.operator}",
                    source=source,
                    obj=obj,
                    field=f"{f}.operator",
                    code="affinity",
                )
            if len(r.values) != 1:  # the API server's rule for a node field selector
                raise InputError(
                    f"matchFields {r.operator} needs exactly one node name, got {len(r.values)}",
                    source=source,
                    obj=obj,
                    field=f"{f}.values",
                    code="affinity",
                )
            names.append(_requirement(r, field=f, source=source, obj=obj))
        terms.append(NodeSelectorTerm(match_expressions=exprs, match_node_names=tuple(names)))
    return tuple(terms)


# --- JobSet --------------------------------------------------------------------------------------


def _unmodeled(raw_pod: Mapping[str, Any]) -> list[str]:
    """The hard pod constraints kube-scheduler enforces and placer does not model: required
    inter-pod (anti-)affinity and spread constraints that refuse to schedule when unsatisfied.
    A plan may put pods where these forbid, and such a pod stays Pending; so placer says so."""
    found = []
    affinity = raw_pod.get("affinity")
    if isinstance(affinity, Mapping):
        for kind in ("podAffinity", "podAntiAffinity"):
            part = affinity.get(kind)
            if isinstance(part, Mapping) and part.get(
                "requiredDuringSchedulingIgnoredDuringExecution"
            ):
                found.append(f"affinity.{kind} (required terms)")
    spread = raw_pod.get("topologySpreadConstraints")
    if isinstance(spread, list) and any(
        isinstance(c, Mapping) and c.get("whenUnsatisfiable", "DoNotSchedule") == "DoNotSchedule"
        for c in spread
    ):
        found.append("topologySpreadConstraints (DoNotSchedule)")
    return found


def _pod_shape(
    pod: TemplatePodSpec, raw_pod: Mapping[str, Any], *, source: str, obj: str, field: str
) -> PodShape:
    """What decides where one pod of the template may run and what it takes (and a warning for
    what kube-scheduler enforces beyond that)."""
    _warn_unmodeled(raw_pod, source=source, obj=obj, field=field)
    return PodShape(
        requests=pod_request(raw_pod, source=source, obj=obj, field=field),
        node_selector=dict(sorted(pod.nodeSelector.items())),
        affinity_terms=parse_affinity_terms(
            pod.affinity, source=source, obj=obj, field=f"{field}.affinity"
        ),
        tolerations=parse_tolerations(pod.tolerations),
        host_ports=pod_host_ports(raw_pod),
    )


def _warn_unmodeled(raw_pod: Mapping[str, Any], *, source: str, obj: str, field: str) -> None:
    for constraint in _unmodeled(raw_pod):
        log.warning(
            "%s: %s: %s.%s: not modeled by placer; kube-scheduler enforces it, so pods may "
            "stay Pending where the plan puts them",
            source or "<input>",
            obj,
            field,
            constraint,
        )


def _pods_of(replicas: int, parallelism: int | None, completions: int | None) -> int:
    """Pods a replicated job runs at once, counting each child Job as at least one (a Job of no
    pods is still an object to plan)."""
    per_job = 1 if parallelism is None else parallelism
    per_job = min(per_job, per_job if completions is None else completions)
    return replicas * max(per_job, 1)


def _check_size(m: JobSetManifest, *, source: str, obj: str) -> None:
    """The pod limit, from the validated integers alone: before anything is made per pod."""
    total = 0
    for i, rj in enumerate(m.spec.replicatedJobs):
        job = rj.template.spec
        total += _pods_of(rj.replicas, job.parallelism, job.completions)
        check_pods_per_jobset(
            total, source=source, obj=obj, field=f"spec.replicatedJobs[{i}].replicas"
        )


def validate_jobset(obj: Mapping[str, Any], *, source: str = "") -> JobSetManifest:
    """The JobSet's schema (what placement reads, by type and range) and its names, by the API
    server's rules: what `parse_jobset` and `placer prepare` both check first."""
    check_nesting_depth(obj, source, obj_name=object_key(obj))
    m = read_as(JobSetManifest, as_go_reads(obj), source)
    check_jobset_names(m, source=source)
    check_jobset_webhook_rules(m, source=source)
    return m


def parse_jobset(
    obj: Mapping[str, Any],
    *,
    source: str = "",
    order: int = 0,
    priorities: PriorityClasses = NO_PRIORITY_CLASSES,
) -> JobSetRequest:
    """Validate one JobSet object and reduce it to what placement needs.

    The JobSet's priority is the highest of its pod templates' (JobSet itself gives every pod the
    template's priority; mixed priorities inside one JobSet are unusual).
    """
    m = validate_jobset(obj, source=source)
    key = f"{m.metadata.namespace}/{m.metadata.name}"
    _check_size(m, source=source, obj=key)
    js_exclusive = m.metadata.annotations.get(EXCLUSIVE_TOPOLOGY)
    rjobs: list[ReplicatedJobRequest] = []
    values: list[int] = []
    class_names: list[str | None] = []
    policies: list[str | None] = []
    names: set[str] = set()
    for i, rj in enumerate(m.spec.replicatedJobs):
        field = f"spec.replicatedJobs[{i}]"
        if rj.name in names:
            raise InputError(
                f"duplicate replicatedJob name {echo(rj.name)}",
                source=source,
                obj=key,
                field=f"{field}.name",
                code="duplicate",
            )
        names.add(rj.name)
        job = rj.template.spec
        pod_field = f"{field}.template.spec.template.spec"
        pod = job.template.spec
        raw_pod = obj["spec"]["replicatedJobs"][i]["template"]["spec"]["template"]["spec"]
        parallelism = 1 if job.parallelism is None else job.parallelism
        completions = parallelism if job.completions is None else job.completions
        shape = _pod_shape(pod, raw_pod, source=source, obj=key, field=pod_field)
        pods_per_job = min(parallelism, completions)
        kueue = read_kueue_topology(
            job.template.metadata.annotations,
            index=i,
            pods_per_job=pods_per_job,
            replicas=rj.replicas,
            source=source,
            obj=key,
        )
        rjobs.append(
            ReplicatedJobRequest(
                name=rj.name,
                group_name=rj.groupName,
                replicas=rj.replicas,
                pods_per_job=pods_per_job,
                pod=shape,
                exclusive_key=rj.template.metadata.annotations.get(
                    EXCLUSIVE_TOPOLOGY, js_exclusive
                ),
                required_topology=kueue.required_topology,
                preferred_topology=kueue.preferred_topology,
                slice_topology=kueue.slice_topology,
                slice_size=kueue.slice_size,
                podset_group=kueue.podset_group,
                unconstrained=kueue.unconstrained,
                topology_prefix=kueue.prefix,
            )
        )
        values.append(
            priorities.of_template(
                pod.priorityClassName,
                pod.priority,
                pod.preemptionPolicy,
                source=source,
                obj=key,
                field=pod_field,
            )
        )
        class_names.append(priorities.class_of(pod.priorityClassName))
        policies.append(pod.preemptionPolicy)
    duration = jobset_expected_duration(obj, source=source, key=key)
    request = JobSetRequest(
        namespace=m.metadata.namespace,
        name=m.metadata.name,
        uid=m.metadata.uid,
        priority=max(values),
        creation_timestamp=m.metadata.creationTimestamp,
        order=order,
        replicated_jobs=tuple(rjobs),
        priority_class_name=next((c for c in class_names if c), None),
        never_preempts="Never" in policies,
        node_selector_strategy=NODE_SELECTOR_STRATEGY in m.metadata.annotations,
        expected_duration_s=duration.seconds,
        duration_source=duration.source,
        source=source,
        manifest=dict(obj),
    )
    check_podset_groups(request)
    return request


def load_jobsets(
    paths: Sequence[str | Path],
    *,
    priorities: PriorityClasses = NO_PRIORITY_CLASSES,
) -> list[JobSetRequest]:
    """Every JobSet in the given files/directories, `order` numbered across all of them.

    Other kinds are skipped with a warning (a kustomization often carries ConfigMaps alongside); a
    file holding no JobSet at all is an error, because it is almost always the wrong file.
    """
    result: list[JobSetRequest] = []
    seen: dict[str, str] = {}
    pods = 0
    for given in paths:
        # per path given: a file with no JobSet is an error, a directory only if none of its
        # files holds one (other kinds beside JobSets are skipped with a warning)
        found = 0
        for source, doc in read_documents([given]):
            if doc.get("kind") != "JobSet":
                log.warning("%s: skipping %s (not a JobSet)", source, describe_object(doc))
                continue
            js = parse_jobset(
                doc,
                source=source,
                order=len(result),
                priorities=priorities,
            )
            if js.key in seen:
                raise InputError(
                    f"JobSet defined twice (first in {seen[js.key]}); names must be unique in "
                    "one run: give only one of the two files, or rename one (metadata.name)",
                    source=source,
                    obj=js.key,
                    code="duplicate",
                )
            seen[js.key] = source
            result.append(js)
            pods += sum(_pods_of(r.replicas, r.pods_per_job, None) for r in js.replicated_jobs)
            check_pods_per_plan(pods, source=source, obj=js.key)
            found += 1
        if not found:
            raise InputError("contains no JobSet", source=str(given), code="no-jobset")
    return result
