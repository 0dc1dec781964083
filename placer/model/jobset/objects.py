"""A JobSet manifest as placer reads it: the structs of `placer.model.kube.objects`, refined to
read a pod template.

The snapshot loader and the JobSet parser share one schema of Kubernetes objects, msgspec structs
(`placer.model.kube.objects`: why msgspec, there). A bound pod in a snapshot has been through
the API server, so its `ObjectMeta`, `Container` and `PodSpec` are read leniently and checked
where they are used; a pending JobSet's pod template has not, so the subclasses below read the
same objects strictly: a wrong type, a missing field or a value out of range is an `InputError`
naming the file, the object and the field path (`read_as`). Unknown fields are skipped; the raw
object stays on the `JobSetRequest` for the writers, so nothing is lost.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

import msgspec

from placer.model.kube.objects import Container, ObjectMeta, PodSpec
from placer.model.read.limits import INT32_MAX

__all__ = [
    "AffinitySpec",
    "ContainerPort",
    "DependsOnSpec",
    "FailurePolicySpec",
    "JobSetManifest",
    "JobSpec",
    "ManifestMeta",
    "NodeAffinitySpec",
    "NodeSelectorSpec",
    "PodTemplate",
    "ReplicatedJobSpec",
    "RequirementSpec",
    "TargetsSpec",
    "TemplateContainer",
    "TemplateMeta",
    "TemplatePodSpec",
    "TermSpec",
    "TolerationSpec",
]

Count = Annotated[int, msgspec.Meta(ge=0, le=INT32_MAX)]
"""A replica or pod count: an int32 that is not negative."""
Priority = Annotated[int, msgspec.Meta(ge=-INT32_MAX - 1, le=INT32_MAX)]


class ManifestMeta(ObjectMeta, frozen=True, gc=False):
    """A JobSet's metadata: what every object has, and what planning reads besides."""

    uid: str = ""
    creationTimestamp: datetime | None = None
    annotations: dict[str, str] = {}


class TemplateMeta(msgspec.Struct, frozen=True, gc=False):
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}


class ContainerPort(msgspec.Struct, frozen=True, gc=False):
    containerPort: Annotated[int, msgspec.Meta(ge=1, le=65535)]
    hostPort: Annotated[int, msgspec.Meta(ge=0, le=65535)] | None = None
    protocol: Literal["TCP", "UDP", "SCTP", ""] = "TCP"
    """Empty is TCP, as the API server defaults it (`pod_host_ports` reads it so)."""


class TemplateContainer(Container, frozen=True, gc=False):
    """A container of a pod template, typed."""

    name: str = ""
    ports: list[ContainerPort] = []
    resources: dict[str, Any] = {}
    restartPolicy: str | None = None


class TolerationSpec(msgspec.Struct, frozen=True, gc=False):
    key: str = ""
    operator: Literal["Exists", "Equal", ""] = "Equal"
    """Empty is Equal, as the API server validates it (`parse_tolerations` reads it so)."""
    value: str = ""
    effect: Literal["", "NoSchedule", "PreferNoSchedule", "NoExecute"] = ""
    tolerationSeconds: int | None = None
    """Only checked (NoExecute only, as the API server has it): eviction is not placement."""


class RequirementSpec(msgspec.Struct, frozen=True, gc=False):
    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
    values: list[str] = []


class TermSpec(msgspec.Struct, frozen=True, gc=False):
    matchExpressions: list[RequirementSpec] = []
    matchFields: list[RequirementSpec] = []


class NodeSelectorSpec(msgspec.Struct, frozen=True, gc=False):
    nodeSelectorTerms: list[TermSpec] = []


class NodeAffinitySpec(msgspec.Struct, frozen=True, gc=False):
    requiredDuringSchedulingIgnoredDuringExecution: NodeSelectorSpec | None = None


class AffinitySpec(msgspec.Struct, frozen=True, gc=False):
    nodeAffinity: NodeAffinitySpec | None = None


class TemplatePodSpec(PodSpec, frozen=True, gc=False, kw_only=True):
    """A pod template's spec, typed: at least one container, and what placement reads."""

    containers: Annotated[tuple[TemplateContainer, ...], msgspec.Meta(min_length=1)]
    initContainers: tuple[TemplateContainer, ...] = ()
    nodeSelector: dict[str, str] = {}
    affinity: AffinitySpec | None = None
    tolerations: list[TolerationSpec] = []
    hostNetwork: bool = False
    priority: Priority | None = None
    priorityClassName: str | None = None
    preemptionPolicy: str | None = None
    """`Never` (admission copies it from the PriorityClass): the JobSet never preempts."""


class PodTemplate(msgspec.Struct, frozen=True, gc=False):
    spec: TemplatePodSpec
    metadata: TemplateMeta = TemplateMeta()


class JobSpec(msgspec.Struct, frozen=True, gc=False):
    template: PodTemplate
    parallelism: Count | None = None
    completions: Count | None = None
    completionMode: str | None = None
    """`Indexed` pods carry their index in their names, which JobSet bounds (`webhook_rules`)."""


class JobTemplate(msgspec.Struct, frozen=True, gc=False):
    spec: JobSpec
    metadata: TemplateMeta = TemplateMeta()


class DependsOnSpec(msgspec.Struct, frozen=True, gc=False):
    name: str
    status: str = ""


class ReplicatedJobSpec(msgspec.Struct, frozen=True, gc=False):
    name: Annotated[str, msgspec.Meta(min_length=1)]
    template: JobTemplate
    groupName: str = "default"
    replicas: Count = 1
    dependsOn: list[DependsOnSpec] | None = None
    """Read only to refuse what JobSet's webhook refuses; None (absent) differs from []."""


class TargetsSpec(msgspec.Struct, frozen=True, gc=False):
    """A success policy or a failure policy rule: the replicatedJobs it names."""

    targetReplicatedJobs: list[str] = []


class FailurePolicySpec(msgspec.Struct, frozen=True, gc=False):
    rules: list[TargetsSpec] = []


class JobSetSpec(msgspec.Struct, frozen=True, gc=False):
    replicatedJobs: Annotated[list[ReplicatedJobSpec], msgspec.Meta(min_length=1)]
    successPolicy: TargetsSpec | None = None
    failurePolicy: FailurePolicySpec | None = None


class JobSetManifest(msgspec.Struct, frozen=True, gc=False):
    kind: Literal["JobSet"]
    metadata: ManifestMeta
    spec: JobSetSpec
    apiVersion: str = ""
