"""The Kueue TAS scenario: non-exclusive GPU JobSets placed by topology annotations alone.

Every other scenario (`scenarios`) queues exclusive-topology JobSets; this one is the queue Kueue's
Topology-Aware Scheduling serves instead, JobSets whose pods ask for a rack or block level as a
required or preferred topology and share hosts with other workloads. `benchmarks.kueue_tas`
plans it against Kueue's own placement. It lives apart because its JobSets are a different kind
(`SharedJobSetSpec` builds its own request) and only that benchmark uses it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from benchmarks.worlds.fleets import GeneratedCluster
from benchmarks.worlds.queues import (
    BASE_TIME,
    PRIORITIES,
    ChildShape,
    JobSetSpec,
    RJobSpec,
)
from benchmarks.worlds.records import (
    BLOCK,
    GKE_ACCELERATOR,
    GPU,
    GPU_TYPES,
    HOSTNAME,
    SUBBLOCK,
    quantity,
)
from benchmarks.worlds.scenarios import Scenario, add_background, scaled_count
from placer.model.workload import JobSetRequest, PodShape, ReplicatedJobRequest

__all__ = ["KUEUE_SHARED_SHAPES", "SharedJobSetSpec", "kueue_shared"]


@dataclass(frozen=True)
class SharedJobSetSpec(JobSetSpec):
    """A JobSet without exclusive placement, placed by Kueue TAS annotations alone: one replicated
    job of whole-host (or half-host) GPU pods with a required or preferred topology level."""

    level: str = SUBBLOCK
    required: bool = True
    gpu_accelerator: str = ""
    gpus_per_pod: int = 8

    def to_request(self, *, replicas: dict[str, int] | None = None) -> JobSetRequest:
        r = self.rjobs[0]
        pod = PodShape(
            requests={
                "cpu": quantity(str(12 * self.gpus_per_pod)),
                "memory": quantity(f"{64 * self.gpus_per_pod}Gi"),
                GPU: quantity(str(self.gpus_per_pod)),
            },
            node_selector={GKE_ACCELERATOR: self.gpu_accelerator},
        )
        rjob = ReplicatedJobRequest(
            name=r.name,
            replicas=r.replicas if replicas is None else replicas.get(r.name, 0),
            pods_per_job=r.shape.pods_per_job,
            pod=pod,
            required_topology=self.level if self.required else None,
            preferred_topology=None if self.required else self.level,
        )
        return JobSetRequest(
            namespace=self.namespace,
            name=self.name,
            priority=self.priority,
            creation_timestamp=BASE_TIME,
            order=self.order,
            replicated_jobs=(rjob,),
        )


KUEUE_SHARED_SHAPES: list[tuple[int, int, int, str, bool, float]] = [
    # (replicas, pods per child Job, GPUs per pod, level, required, weight)
    (1, 4, 8, SUBBLOCK, True, 1.0),
    (2, 4, 8, SUBBLOCK, True, 1.0),
    (1, 12, 8, SUBBLOCK, True, 0.6),
    (4, 2, 4, SUBBLOCK, True, 1.0),
    (2, 8, 8, SUBBLOCK, False, 1.0),
    (4, 4, 8, SUBBLOCK, False, 0.6),
    (2, 12, 8, BLOCK, True, 0.5),
    (4, 8, 8, BLOCK, True, 0.4),
    (3, 6, 8, BLOCK, False, 0.5),
]
"""The non-exclusive queue's menu: sizes from half a rack (sub-block) to two racks, required or
preferred at the rack or block level."""


def kueue_shared(seed: int, size: float) -> Scenario:
    """H100 and H200 blocks, notebooks and running JobSets in the background, and a queue of
    non-exclusive JobSets that carry only Kueue TAS annotations (rack = sub-block, block)."""
    rng = random.Random(f"kueue-shared:{seed}")
    c = GeneratedCluster(
        name="kueue-shared", rng=rng, levels=(BLOCK, SUBBLOCK, HOSTNAME), span_level=BLOCK
    )
    c.add_gpu_blocks(GPU_TYPES["h100"], scaled_count(2, size), 4, 16)
    c.add_gpu_blocks(GPU_TYPES["h200"], scaled_count(1, size), 6, 16)
    add_background(
        c, hold_key=SUBBLOCK, hold=0.2, spare=2, notebook_share=0.15, notebook_units=(1, 2, 4)
    )
    target = int(1.3 * c.free_accelerators())
    weights = [w for *_, w in KUEUE_SHARED_SHAPES]
    queue: list[JobSetSpec] = []
    units = 0
    while units < target:
        replicas, pods, gpus, level, required, _ = rng.choices(KUEUE_SHARED_SHAPES, weights)[0]
        gpu = GPU_TYPES[rng.choice(["h100", "h100", "h200"])]
        pclass, prio, _ = rng.choices(PRIORITIES, [w for *_, w in PRIORITIES])[0]
        shape = ChildShape(
            label=f"{gpu.generation} {pods}x{gpus}",
            accelerator=GPU,
            units_per_pod=gpus,
            pods_per_job=pods,
            node_selector=((GKE_ACCELERATOR, gpu.accelerator),),
            exclusive_key="",
        )
        i = len(queue)
        queue.append(
            SharedJobSetSpec(
                namespace=f"team-{i % 5}",
                name=f"tas-{i:04d}",
                priority_class=pclass,
                priority=prio,
                arrival_s=float(i),
                duration_s=3600.0,
                rjobs=(RJobSpec("workers", shape, replicas),),
                order=i,
                level=level,
                required=required,
                gpu_accelerator=gpu.accelerator,
                gpus_per_pod=gpus,
            )
        )
        units += replicas * pods * gpus
    return Scenario(
        f"kueue-shared-{seed}",
        "gpu",
        "H100 + H200, non-exclusive JobSets with Kueue required/preferred rack or block topology",
        c,
        queue,
        frozenset({"gpu", "kueue"}),
    )
