"""Which fields of a JobSet manifest are names, and of which kind: checked once, at parse time.

`parse_jobset` (placer/model/jobset/parse.py) calls `check_jobset_names` on the validated schema, so
a JobSet the API server would refuse (a namespace with `/` or `..`, a 100,000-character or empty
name, control characters, a label value over 63 characters, an invalid label or nodeSelector key, an
empty exclusive-topology key) is refused here with the field that is wrong, whether it came from a
file (`placer plan`) or a watch (the controller). The rules are `placer.model.read.names`'.
"""

from __future__ import annotations

from collections.abc import Mapping

from placer.model.errors import InputError
from placer.model.jobset.objects import JobSetManifest, TemplatePodSpec, TolerationSpec
from placer.model.messages import echo
from placer.model.priorities import PREEMPTION_POLICIES
from placer.model.read.names import (
    check,
    check_label_map,
    check_qualified_keys,
    dns1123_label_problem,
    dns1123_subdomain_problem,
    label_value_problem,
    qualified_name_problem,
)
from placer.model.workload import (
    EXCLUSIVE_TOPOLOGY,
    KUEUE_PREFERRED_TOPOLOGY,
    KUEUE_REQUIRED_TOPOLOGY,
    KUEUE_SLICE_TOPOLOGY,
    PLACER_TOPOLOGY_PREFIX,
    topology_annotation,
)

__all__ = ["MAX_ANNOTATIONS_BYTES", "check_jobset_names", "check_metadata_maps"]

MAX_ANNOTATIONS_BYTES = 256 * 1024
"""The API server's limit on one object's annotations, keys and values together."""

_KUEUE_LEVELS = (KUEUE_REQUIRED_TOPOLOGY, KUEUE_PREFERRED_TOPOLOGY, KUEUE_SLICE_TOPOLOGY)
LEVEL_ANNOTATIONS = (
    EXCLUSIVE_TOPOLOGY,
    *_KUEUE_LEVELS,
    *(topology_annotation(key, PLACER_TOPOLOGY_PREFIX) for key in _KUEUE_LEVELS),
)
"""Annotations whose value is a node label key (a topology level): a qualified name, not empty.
Kueue's spelling and placer's (`placer.dev/podset-...`, for its admission check) alike."""


def _utf8_bytes(text: str) -> int:
    """Go's `len` of the string, which the API server's limit counts (`ValidateAnnotationsSize`);
    a lone surrogate, which Go reads as U+FFFD, is three bytes either way."""
    return len(text.encode("utf-8", "surrogatepass"))


def check_metadata_maps(
    labels: Mapping[str, str],
    annotations: Mapping[str, str],
    *,
    source: str,
    obj: str,
    field: str,
) -> None:
    """Labels (keys and values), annotation keys and size, and the annotations that name a
    topology level, of one `metadata` at `field`."""
    check_label_map(labels, source=source, obj=obj, field=f"{field}.labels")
    where = f"{field}.annotations"
    check_qualified_keys(annotations, source=source, obj=obj, field=where)
    size = sum(_utf8_bytes(k) + _utf8_bytes(v) for k, v in annotations.items())
    if size > MAX_ANNOTATIONS_BYTES:
        raise InputError(
            f"{size} bytes of annotations (keys and values, in UTF-8); "
            f"at most {MAX_ANNOTATIONS_BYTES}",
            source=source,
            obj=obj,
            field=where,
            code="name",
        )
    for key in LEVEL_ANNOTATIONS:
        if key in annotations:
            check(
                qualified_name_problem,
                annotations[key],
                source=source,
                obj=obj,
                field=f"{where}[{key}]",
                what="node label key",
            )


def _toleration_problem(toleration: TolerationSpec) -> tuple[str, str] | None:
    """(field, message) of the API server's rules on how a toleration's parts go together."""
    if not toleration.key and toleration.operator != "Exists":
        return "operator", "must be Exists when key is empty (a toleration of every taint)"
    if toleration.operator == "Exists" and toleration.value:
        return "value", "must be empty when operator is Exists"
    if toleration.tolerationSeconds is not None and toleration.effect != "NoExecute":
        return "effect", "must be NoExecute when tolerationSeconds is set"
    return None


def _check_pod(pod: TemplatePodSpec, *, source: str, obj: str, field: str) -> None:
    check_label_map(pod.nodeSelector, source=source, obj=obj, field=f"{field}.nodeSelector")
    for i, toleration in enumerate(pod.tolerations):
        where = f"{field}.tolerations[{i}]"
        if toleration.key:
            check(
                qualified_name_problem, toleration.key, source=source, obj=obj, field=f"{where}.key"
            )
        check(label_value_problem, toleration.value, source=source, obj=obj, field=f"{where}.value")
        problem = _toleration_problem(toleration)
        if problem:
            raise InputError(problem[1], source=source, obj=obj, field=f"{where}.{problem[0]}")
    if pod.priorityClassName:
        check(
            dns1123_subdomain_problem,
            pod.priorityClassName,
            source=source,
            obj=obj,
            field=f"{field}.priorityClassName",
        )
    if pod.preemptionPolicy is not None and pod.preemptionPolicy not in PREEMPTION_POLICIES:
        allowed = " or ".join(PREEMPTION_POLICIES)
        raise InputError(
            f"must be {allowed}, got {echo(pod.preemptionPolicy)}",
            source=source,
            obj=obj,
            field=f"{field}.preemptionPolicy",
        )
    required = (
        pod.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution
        if pod.affinity and pod.affinity.nodeAffinity
        else None
    )
    if required is None:
        return
    base = f"{field}.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    for n, term in enumerate(required.nodeSelectorTerms):
        for i, r in enumerate(term.matchExpressions):
            where = f"{base}.nodeSelectorTerms[{n}].matchExpressions[{i}]"
            check(qualified_name_problem, r.key, source=source, obj=obj, field=f"{where}.key")
            for j, value in enumerate(r.values):  # every operator's, Gt's and Lt's too
                check(
                    label_value_problem, value, source=source, obj=obj, field=f"{where}.values[{j}]"
                )
        for i, r in enumerate(term.matchFields):
            where = f"{base}.nodeSelectorTerms[{n}].matchFields[{i}]"
            for j, value in enumerate(r.values):
                check(
                    dns1123_subdomain_problem,
                    value,
                    source=source,
                    obj=obj,
                    field=f"{where}.values[{j}]",
                    what="node name",
                )


def check_jobset_names(m: JobSetManifest, *, source: str) -> None:
    """Every name, label and annotation key of the JobSet by the API server's rules (see the
    module docstring); the InputError names the JobSet as given and the field."""
    meta = m.metadata
    obj = f"{echo(meta.namespace, quote=False)}/{echo(meta.name, quote=False)}"
    check(dns1123_label_problem, meta.namespace, source=source, obj=obj, field="metadata.namespace")
    check(dns1123_subdomain_problem, meta.name, source=source, obj=obj, field="metadata.name")
    check_metadata_maps(meta.labels, meta.annotations, source=source, obj=obj, field="metadata")
    for i, rj in enumerate(m.spec.replicatedJobs):
        field = f"spec.replicatedJobs[{i}]"
        check(dns1123_label_problem, rj.name, source=source, obj=obj, field=f"{field}.name")
        job = rj.template
        check_metadata_maps(
            job.metadata.labels,
            job.metadata.annotations,
            source=source,
            obj=obj,
            field=f"{field}.template.metadata",
        )
        pod = job.spec.template
        pod_field = f"{field}.template.spec.template"
        check_metadata_maps(
            pod.metadata.labels,
            pod.metadata.annotations,
            source=source,
            obj=obj,
            field=f"{pod_field}.metadata",
        )
        _check_pod(pod.spec, source=source, obj=obj, field=f"{pod_field}.spec")
