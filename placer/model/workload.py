"""What a JobSet asks of the cluster, once parsed: replicated jobs, their pods' needs, priority.

This is the solver's view of a JobSet. The parser (`placer.model.jobset.parse`) builds it from a
manifest; everything downstream reads these frozen models and never the raw YAML, except the
writers, which keep `manifest` to emit patches without losing unknown fields.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from placer.model.durations import DurationSource
from placer.model.resources import ResourceMap, is_accelerator
from placer.model.scheduling import NodeSelectorTerm, Toleration

__all__ = [
    "EXCLUSIVE_TOPOLOGY",
    "JOBSET_NAME_LABEL",
    "KUEUE_PODSET_GROUP",
    "KUEUE_PREFERRED_TOPOLOGY",
    "KUEUE_REQUIRED_TOPOLOGY",
    "KUEUE_SLICE_SIZE",
    "KUEUE_SLICE_TOPOLOGY",
    "KUEUE_TOPOLOGY_PREFIX",
    "KUEUE_UNCONSTRAINED_TOPOLOGY",
    "NODE_SELECTOR_STRATEGY",
    "PLACER_TOPOLOGY_PREFIX",
    "TOPOLOGY_ANNOTATIONS",
    "JobSetRequest",
    "PodShape",
    "ReplicatedJobRequest",
    "child_job_name",
    "topology_annotation",
]

EXCLUSIVE_TOPOLOGY = "alpha.jobset.sigs.k8s.io/exclusive-topology"
NODE_SELECTOR_STRATEGY = "alpha.jobset.sigs.k8s.io/node-selector"
KUEUE_REQUIRED_TOPOLOGY = "kueue.x-k8s.io/podset-required-topology"
KUEUE_PREFERRED_TOPOLOGY = "kueue.x-k8s.io/podset-preferred-topology"
KUEUE_SLICE_TOPOLOGY = "kueue.x-k8s.io/podset-slice-required-topology"
KUEUE_SLICE_SIZE = "kueue.x-k8s.io/podset-slice-size"
KUEUE_PODSET_GROUP = "kueue.x-k8s.io/podset-group-name"
KUEUE_UNCONSTRAINED_TOPOLOGY = "kueue.x-k8s.io/podset-unconstrained-topology"
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
TOPOLOGY_ANNOTATIONS = (
    KUEUE_REQUIRED_TOPOLOGY,
    KUEUE_PREFERRED_TOPOLOGY,
    KUEUE_SLICE_TOPOLOGY,
    KUEUE_SLICE_SIZE,
    KUEUE_PODSET_GROUP,
    KUEUE_UNCONSTRAINED_TOPOLOGY,
)
"""Kueue's topology annotations of a pod template, as Kueue names them."""
KUEUE_TOPOLOGY_PREFIX = "kueue.x-k8s.io/"
PLACER_TOPOLOGY_PREFIX = "placer.dev/"
"""Placer's own spelling of the same annotations (`placer.dev/podset-required-topology`, ...),
same meaning. Under placer's Kueue admission check the ResourceFlavor has no `topologyName`, and
Kueue refuses to reserve quota for a Workload carrying its own topology annotations there ("does
not support TopologyAwareScheduling"); placer's spelling is invisible to Kueue."""


def topology_annotation(kueue_key: str, prefix: str) -> str:
    """One of `TOPOLOGY_ANNOTATIONS` as written with `prefix` (Kueue's or placer's)."""
    return prefix + kueue_key.removeprefix(KUEUE_TOPOLOGY_PREFIX)


def child_job_name(jobset: str, replicated_job: str, index: int) -> str:
    """JobSet's own naming of child Jobs; stable across restarts."""
    return f"{jobset}-{replicated_job}-{index}"


class PodShape(BaseModel):
    """Everything that decides where one pod of a child Job may run and how much room it takes."""

    model_config = ConfigDict(frozen=True)
    requests: ResourceMap = Field(default_factory=dict)
    node_selector: dict[str, str] = Field(default_factory=dict)
    affinity_terms: tuple[NodeSelectorTerm, ...] = ()
    """Required node affinity terms, ORed; empty means no requirement."""
    tolerations: tuple[Toleration, ...] = ()
    host_ports: tuple[tuple[int, str], ...] = ()
    """(port, protocol) pairs the pod binds on the host; two such pods never share a node."""

    @property
    def accelerators(self) -> dict[str, Decimal]:
        return {k: v for k, v in self.requests.items() if is_accelerator(k)}

    def signature(self) -> str:
        """A stable text key: equal signatures mean interchangeable pods."""
        return self.model_dump_json()


class ReplicatedJobRequest(BaseModel):
    model_config = ConfigDict(frozen=True)
    name: str
    group_name: str = "default"
    replicas: int
    pods_per_job: int
    """Pods running at once per child Job: min(parallelism, completions)."""
    pod: PodShape
    exclusive_key: str | None = None
    required_topology: str | None = None
    """Kueue podset-required-topology: every pod of this replicated job inside one domain of it."""
    preferred_topology: str | None = None
    """Kueue podset-preferred-topology: one domain of it if possible, else as few as possible,
    going up the levels one at a time (Kueue TAS)."""
    slice_topology: str | None = None
    """Kueue podset-slice-required-topology: each slice of `slice_size` pods in one such domain."""
    slice_size: int | None = None
    """Pods per slice; set whenever `slice_topology` is (Kueue's JobSet default: one child Job's
    pods). Kueue's PodSet is the whole replicated job, so it divides `pod_count`."""
    podset_group: str | None = None
    """Kueue podset-group-name: replicated jobs of one JobSet placed in the same topology domain."""
    unconstrained: bool = False
    """Kueue podset-unconstrained-topology: any free capacity, no compactness asked."""
    topology_prefix: str = KUEUE_TOPOLOGY_PREFIX
    """Whose spelling the topology annotations above were written in (`KUEUE_TOPOLOGY_PREFIX`
    or `PLACER_TOPOLOGY_PREFIX`): errors name the key the user wrote, and placer's Kueue check
    warns about Kueue's spelling, which Kueue refuses on the check's flavors."""

    @property
    def pod_count(self) -> int:
        """Pods of the whole replicated job: Kueue's PodSet count for a JobSet."""
        return self.replicas * self.pods_per_job

    @property
    def kueue_topology(self) -> bool:
        """Does Kueue TAS place this replicated job (any of its topology annotations set)?"""
        return bool(
            self.required_topology
            or self.preferred_topology
            or self.slice_topology
            or self.unconstrained
        )

    @property
    def accelerator_units_per_job(self) -> int:
        """Accelerator units one child Job holds; a job needing none counts its pods."""
        per_pod = sum(self.pod.accelerators.values(), Decimal(0))
        return int(per_pod * self.pods_per_job) if per_pod > 0 else self.pods_per_job


class JobSetRequest(BaseModel):
    model_config = ConfigDict(frozen=True)
    namespace: str = "default"
    name: str
    uid: str = ""
    priority: int = 0
    creation_timestamp: datetime | None = None
    order: int = 0
    """Position on the command line or in the watch; the last tie-breaker of queue order."""
    declared_priority: int | None = None
    """Set when a planner raised `priority` to order the plan (time-aware planning puts the
    JobSets its reservations start now above every tier): the priority the JobSet declares, which
    reasons compare ("taken by higher-priority JobSets") so they do not call an equal a higher."""
    replicated_jobs: tuple[ReplicatedJobRequest, ...]
    priority_class_name: str | None = None
    """The pod templates' PriorityClass (the first named): its `preemptionPolicy` may forbid
    preempting."""
    never_preempts: bool = False
    """A pod template states `preemptionPolicy: Never`: it never evicts anyone."""
    node_selector_strategy: bool = False
    expected_duration_s: float | None = None
    """Expected run time (`placer.dev/expected-duration`, else the child Jobs' longest
    activeDeadlineSeconds); None leaves it to the planner's default."""
    duration_source: DurationSource = "default"
    source: str = ""
    manifest: dict[str, Any] = Field(default_factory=dict, repr=False)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def accelerator_units(self) -> int:
        return sum(r.replicas * r.accelerator_units_per_job for r in self.replicated_jobs)

    def child_jobs(self) -> list[tuple[ReplicatedJobRequest, int, str]]:
        """(replicated job, job index, child Job name) in JobSet's creation order."""
        return [
            (r, i, child_job_name(self.name, r.name, i))
            for r in self.replicated_jobs
            for i in range(r.replicas)
        ]

    @property
    def reported_priority(self) -> int:
        """The priority reasons compare: the declared one when a planner raised `priority`."""
        return self.priority if self.declared_priority is None else self.declared_priority

    def queue_key(self) -> tuple[int, float, int, str]:
        """Queue order: priority descending, then creation time, then order given, then name."""
        ts = self.creation_timestamp.timestamp() if self.creation_timestamp else 0.0
        return (-self.priority, ts, self.order, self.key)
