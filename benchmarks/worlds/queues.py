"""Queues of pending JobSets drawn from the Philly trace, as solver requests and as manifests.

A `JobSetSpec` is the generator's record of one JobSet. It becomes a `JobSetRequest` (what the
in-process benchmarks hand the solvers) and a JobSet manifest (what `placer plan` parses in the
end-to-end runs); both come from the same fields, so the two paths plan the same problem.

The mapping from trace jobs to JobSets is stated in `ASSUMPTIONS`, which the report prints.
"""

from __future__ import annotations

import dataclasses
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any, Literal

from benchmarks.worlds.records import (
    GKE_ACCELERATOR,
    GPU,
    NODEPOOL,
    TPU,
    TPU_ACCELERATOR,
    TPU_TOPOLOGY,
    GpuType,
    TpuType,
    draw_priority,
    quantity,
)
from benchmarks.worlds.trace import TraceJob
from placer.model.workload import (
    EXCLUSIVE_TOPOLOGY,
    KUEUE_PREFERRED_TOPOLOGY,
    KUEUE_REQUIRED_TOPOLOGY,
    JobSetRequest,
    PodShape,
    ReplicatedJobRequest,
)

__all__ = [
    "ASSUMPTIONS",
    "PRIORITIES",
    "ChildShape",
    "JobSetSpec",
    "QueueMix",
    "RJobSpec",
    "gpu_menu",
    "make_queue",
    "tpu_menu",
]

PRIORITIES: list[tuple[str, int, float]] = [
    ("batch-low", 100, 0.3),
    ("batch", 1000, 0.5),
    ("prod-high", 10000, 0.2),
]
"""PriorityClass name, value, share of JobSets (the trace records none: an assumption)."""

BASE_TIME = datetime(2026, 3, 2, 8, 0, 0, tzinfo=UTC)
TPU_PORTS: tuple[tuple[int, str], ...] = ((8080, "TCP"), (8471, "TCP"))

ASSUMPTIONS: list[str] = [
    "Queues use the Philly jobs of 2 or more GPUs (single-GPU jobs are not gang-scheduled "
    "JobSets). Static queues draw jobs independently (the trace's size mix, in submit order); "
    "the over-time simulation takes a consecutive window from a seeded random start, keeping "
    "arrival gaps (then scaled to the offered load) and durations.",
    "A trace job of g GPUs becomes a JobSet of clamp(g/2, 1, max_replicas) child Jobs (g=2: 1, "
    "4: 2, 8: 4, 16: 8, ...); each child Job is one whole exclusive domain's worth of hosts: one "
    "TPU slice (node pool) of a topology drawn in proportion to the pools of that topology in the "
    "fleet, or one GPU sub-block / NVL72 rack with the pod count drawn from the scenario's stated "
    "size mix.",
    "Priorities are not in the trace: 30% batch-low (100), 50% batch (1000), 20% prod-high "
    "(10000).",
    "Multi-child GPU JobSets keep their child Jobs in one block: half of them as required "
    "(kueue podset-required-topology), half as preferred; TPU multislice JobSets have no locality.",
    "Heterogeneous scenarios give 25% of multi-child JobSets a second replicated Job of another "
    "size (e.g. trainers plus evaluators).",
    "Every queued JobSet uses exclusive placement (alpha.jobset.sigs.k8s.io/exclusive-topology).",
]


@dataclass(frozen=True)
class ChildShape:
    """What one child Job asks: pods of one shape filling one exclusive domain."""

    label: str
    accelerator: str
    units_per_pod: int
    pods_per_job: int
    node_selector: tuple[tuple[str, str], ...]
    exclusive_key: str
    cpu: str = "8"
    memory: str = "64Gi"
    host_network: bool = False
    weight: float = 1.0
    locality: str | None = None
    """Level that keeps multi-child JobSets of this shape together (blocks), if any."""
    domain_units: int = 0
    """Accelerators of the whole domain a child Job takes to itself (0: just its own pods)."""


@dataclass(frozen=True)
class RJobSpec:
    name: str
    shape: ChildShape
    replicas: int


@dataclass(frozen=True)
class JobSetSpec:
    namespace: str
    name: str
    priority_class: str
    priority: int
    arrival_s: float
    duration_s: float
    rjobs: tuple[RJobSpec, ...]
    locality: Literal["required", "preferred"] | None = None
    order: int = 0

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def created(self) -> datetime:
        return BASE_TIME + timedelta(seconds=round(self.arrival_s))

    @property
    def units(self) -> int:
        return sum(r.replicas * r.shape.pods_per_job * r.shape.units_per_pod for r in self.rjobs)

    @property
    def held_units(self) -> int:
        """Accelerators of the domains this JobSet holds while it runs (nominal domain sizes)."""
        return sum(
            r.replicas * max(r.shape.domain_units, r.shape.pods_per_job * r.shape.units_per_pod)
            for r in self.rjobs
        )

    def to_request(self, *, replicas: dict[str, int] | None = None) -> JobSetRequest:
        """The solver's view; `replicas` overrides the counts (remaining child Jobs, in the
        simulation)."""
        rjobs = []
        for r in self.rjobs:
            s = r.shape
            requests = dict(
                sorted(
                    {
                        "cpu": quantity(s.cpu),
                        "memory": quantity(s.memory),
                        s.accelerator: Decimal(s.units_per_pod),
                    }.items()
                )
            )
            level = s.locality if r.replicas > 1 or len(self.rjobs) > 1 else None
            rjobs.append(
                ReplicatedJobRequest(
                    name=r.name,
                    replicas=r.replicas if replicas is None else replicas.get(r.name, 0),
                    pods_per_job=s.pods_per_job,
                    pod=PodShape(
                        requests=requests,
                        node_selector=dict(sorted(s.node_selector)),
                        host_ports=TPU_PORTS if s.host_network else (),
                    ),
                    exclusive_key=s.exclusive_key,
                    required_topology=level if self.locality == "required" else None,
                    preferred_topology=level if self.locality == "preferred" else None,
                )
            )
        return JobSetRequest(
            namespace=self.namespace,
            name=self.name,
            priority=self.priority,
            creation_timestamp=self.created,
            order=self.order,
            replicated_jobs=tuple(rjobs),
            priority_class_name=self.priority_class or None,
        )

    def to_manifest(self) -> dict[str, Any]:
        keys = {r.shape.exclusive_key for r in self.rjobs}
        annotations = {EXCLUSIVE_TOPOLOGY: next(iter(keys))} if len(keys) == 1 else {}
        return {
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "metadata": {
                "name": self.name,
                "namespace": self.namespace,
                "creationTimestamp": self.created.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "labels": {"kueue.x-k8s.io/queue-name": "training"},
                "annotations": annotations,
            },
            "spec": {
                "failurePolicy": {"maxRestarts": 3},
                "replicatedJobs": [self._rjob_manifest(r, len(keys) > 1) for r in self.rjobs],
            },
        }

    def _rjob_manifest(self, r: RJobSpec, per_rjob_key: bool) -> dict[str, Any]:
        s = r.shape
        pod_annotations: dict[str, str] = {}
        level = s.locality if r.replicas > 1 or len(self.rjobs) > 1 else None
        if level and self.locality == "required":
            pod_annotations[KUEUE_REQUIRED_TOPOLOGY] = level
        elif level and self.locality == "preferred":
            pod_annotations[KUEUE_PREFERRED_TOPOLOGY] = level
        container: dict[str, Any] = {
            "name": "trainer",
            "image": "us-docker.pkg.dev/example/train:latest",
            "command": ["python", "-m", "train"],
            "resources": {
                "requests": {"cpu": s.cpu, "memory": s.memory},
                "limits": {s.accelerator: str(s.units_per_pod)},
            },
        }
        pod_spec: dict[str, Any] = {
            "priorityClassName": self.priority_class,
            "restartPolicy": "Never",
            "nodeSelector": dict(s.node_selector),
            "containers": [container],
        }
        if s.host_network:
            pod_spec["hostNetwork"] = True
            pod_spec["dnsPolicy"] = "ClusterFirstWithHostNet"
            container["ports"] = [{"containerPort": p, "protocol": proto} for p, proto in TPU_PORTS]
        job_meta = {"annotations": {EXCLUSIVE_TOPOLOGY: s.exclusive_key}} if per_rjob_key else {}
        return {
            "name": r.name,
            "replicas": r.replicas,
            "template": {
                "metadata": job_meta,
                "spec": {
                    "parallelism": s.pods_per_job,
                    "completions": s.pods_per_job,
                    "backoffLimit": 0,
                    "template": {"metadata": {"annotations": pod_annotations}, "spec": pod_spec},
                },
            },
        }


@dataclass(frozen=True)
class QueueMix:
    """How trace jobs become JobSets in one scenario."""

    max_replicas: int = 8
    second_rjob: float = 0.0
    """Share of multi-child JobSets that get a second replicated Job of another shape."""


def tpu_menu(pools: Sequence[tuple[TpuType, str, int]]) -> list[ChildShape]:
    """One child shape per (generation, topology) in the fleet, weighted by its pool count."""
    return [
        ChildShape(
            label=f"{t.generation} {shape}",
            accelerator=TPU,
            units_per_pod=4,
            pods_per_job=t.shapes[shape],
            node_selector=((TPU_ACCELERATOR, t.accelerator), (TPU_TOPOLOGY, shape)),
            exclusive_key=NODEPOOL,
            cpu="24",
            memory="96Gi",
            host_network=True,
            weight=float(count),
        )
        for t, shape, count in pools
        if count > 0
    ]


def gpu_menu(
    gpu: GpuType,
    domain_key: str,
    sizes: dict[int, float],
    locality: str | None,
    domain_hosts: int = 0,
) -> list[ChildShape]:
    """Child Jobs of `pods` whole hosts in one domain of `domain_key`, sizes with stated weights."""
    return [
        ChildShape(
            label=f"{gpu.generation} {pods}h",
            accelerator=GPU,
            units_per_pod=gpu.gpus,
            pods_per_job=pods,
            node_selector=((GKE_ACCELERATOR, gpu.accelerator),),
            exclusive_key=domain_key,
            cpu="96",
            memory="512Gi",
            weight=w,
            locality=locality,
            domain_units=domain_hosts * gpu.gpus,
        )
        for pods, w in sorted(sizes.items())
    ]


def _pick(rng: random.Random, menu: Sequence[ChildShape]) -> ChildShape:
    r = rng.random() * math.fsum(s.weight for s in menu)
    for s in menu:
        r -= s.weight
        if r <= 0:
            return s
    return menu[-1]


def make_queue(
    rng: random.Random,
    trace: Sequence[TraceJob],
    menu: Sequence[ChildShape],
    mix: QueueMix,
    *,
    target_units: int | None = None,
    prefix: str = "train",
    duration_cap_s: float | None = None,
) -> list[JobSetSpec]:
    """JobSets for the trace jobs in order, stopping once `target_units` are asked for.

    The result is in arrival order with `order` renumbered, names keep the draw index.
    """
    queue: list[JobSetSpec] = []
    total = 0
    for i, job in enumerate(trace):
        if target_units is not None and total >= target_units:
            break
        replicas = max(1, min(job.gpus // 2, mix.max_replicas))
        shape = _pick(rng, menu)
        rjobs = [RJobSpec("workers", shape, replicas)]
        if replicas > 1 and mix.second_rjob and rng.random() < mix.second_rjob:
            others = [
                s
                for s in menu
                if s.node_selector[0] == shape.node_selector[0]
                and s != shape
                and s.exclusive_key == shape.exclusive_key
            ]
            if others:
                aux = max(1, replicas // 2)
                rjobs = [
                    RJobSpec("workers", shape, replicas - aux),
                    RJobSpec("evaluators", _pick(rng, others), aux),
                ]
        locality: Literal["required", "preferred"] | None = None
        if shape.locality and (replicas > 1 or len(rjobs) > 1):
            locality = "required" if rng.random() < 0.5 else "preferred"
        pc, prio = draw_priority(rng, PRIORITIES)
        duration = job.duration_s if duration_cap_s is None else min(job.duration_s, duration_cap_s)
        spec = JobSetSpec(
            namespace=f"team-{rng.choice('abcdefgh')}",
            name=f"{prefix}-{i:05d}",
            priority_class=pc,
            priority=prio,
            arrival_s=job.submit_s,
            duration_s=max(duration, 60.0),
            rjobs=tuple(rjobs),
            locality=locality,
            order=i,
        )
        queue.append(spec)
        total += spec.units
    queue.sort(key=lambda js: (js.arrival_s, js.order))
    return [dataclasses.replace(js, order=i) for i, js in enumerate(queue)]
