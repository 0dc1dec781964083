"""Named, seeded scenarios: a generated cluster with its background load and a queue of JobSets.

Every builder takes `(seed, size)` and returns the same scenario for the same arguments, so a
number in RESULTS.md can be reproduced from its row. `size` multiplies pool and block counts (the
smoke suite uses tiny sizes, the full suite larger ones); shapes and proportions never change with
it. Fleet facts and background-load rates are listed in `FLEET_ASSUMPTIONS` for the report.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

from benchmarks.worlds.fleets import GeneratedCluster
from benchmarks.worlds.queues import (
    BASE_TIME,
    PRIORITIES,
    ChildShape,
    JobSetSpec,
    QueueMix,
    RJobSpec,
    gpu_menu,
    make_queue,
    tpu_menu,
)
from benchmarks.worlds.records import (
    BLOCK,
    CLIQUE,
    GKE_ACCELERATOR,
    GPU,
    GPU_TYPES,
    HOSTNAME,
    NODEPOOL,
    SUBBLOCK,
    TPU_TYPES,
    quantity,
)
from benchmarks.worlds.trace import sample_jobs
from placer.model.cluster import ClusterSnapshot
from placer.model.workload import JobSetRequest, PodShape, ReplicatedJobRequest

__all__ = [
    "DEMAND_FACTOR",
    "FLEET_ASSUMPTIONS",
    "STATIC_BUILDERS",
    "Scenario",
    "build_tpu_pool_fleet",
    "gb200",
    "h100",
    "h200",
    "hetero",
    "kueue_shared",
    "tpu_mixed",
    "tpu_v5e",
    "tpu_v5p",
    "tpu_v6e",
]

DEMAND_FACTOR = 1.5
"""Static queues ask for 1.5x the free accelerators, so admission has to choose."""

FLEET_ASSUMPTIONS: list[str] = [
    "TPU: one GKE node pool per multi-host slice, 4 chips per host; hosts per slice from the "
    "topology (v5e/v6e 2x4=2, 4x4=4, 4x8=8, 8x8=16; v5p 2x2x2=2, 2x2x4=4, 2x4x4=8, 4x4x4=16); "
    "child Jobs select the topology (nodeSelector) and take one pool each (exclusive on "
    "cloud.google.com/gke-nodepool).",
    "H100 (a3-megagpu-8g) and H200 (a3-ultragpu-8g): 8 GPUs per host, 16 hosts per sub-block, 4-6 "
    "sub-blocks per block (the sub-block size is our assumption); exclusive on "
    "cloud.google.com/gce-topology-subblock.",
    "GB200 (a4x-highgpu-4g): NVL72 domains of 18 hosts x 4 GPUs (nvidia.com/gpu.clique), 8 per "
    "block; 0-3 unhealthy hosts per domain (uniform), half NotReady, half with 1-4 GPUs missing "
    "from allocatable.",
    "Background: 30% of TPU pools, 25% of GPU sub-blocks and 20% of NVL72 domains held by running "
    "JobSets (1-4 domains each; GPU ones leave 0-2 hosts idle); non-JobSet pods on 2% of idle TPU "
    "hosts (all 4 chips) and 8% of idle GPU hosts (1, 2 or 4 GPUs); 1% of nodes cordoned, 1% "
    "NotReady; two DaemonSet pods per node; 1% of nodes carry a Succeeded pod.",
    f"Static queues ask for {DEMAND_FACTOR}x the free accelerators of usable nodes.",
]

TPU_BACKGROUND_HOLD = 0.30


@dataclass
class Scenario:
    """One cluster and one queue; snapshot and requests are built once, shared by all policies."""

    name: str
    family: str
    description: str
    cluster: GeneratedCluster
    queue: list[JobSetSpec]
    tags: frozenset[str] = field(default_factory=frozenset)

    @cached_property
    def snapshot(self) -> ClusterSnapshot:
        return self.cluster.to_snapshot()

    @cached_property
    def requests(self) -> list[JobSetRequest]:
        return [js.to_request() for js in self.queue]

    @property
    def nodes(self) -> int:
        return len(self.cluster.nodes)

    @property
    def demand_units(self) -> int:
        return sum(js.units for js in self.queue)


def _n(base: int, size: float) -> int:
    return max(1, round(base * size))


def _background(
    c: GeneratedCluster,
    *,
    hold_key: str,
    hold: float,
    spare: int,
    notebook_share: float,
    notebook_units: tuple[int, ...],
) -> None:
    c.priority_classes = {name: value for name, value, _ in PRIORITIES}
    c.priority_classes["system-node-critical"] = 2000001000
    c.hold_domains(hold_key, hold, PRIORITIES, spare_hosts=spare)
    c.add_non_jobset_pods(notebook_share, notebook_units)
    c.add_daemonsets()
    c.add_completed_pods(0.01)
    c.degrade(cordoned=0.01, not_ready=0.01)


def _queue(
    c: GeneratedCluster,
    rng: random.Random,
    menu: list[ChildShape],
    mix: QueueMix,
    *,
    count: int | None = None,
) -> list[JobSetSpec]:
    free = c.free_accelerators()
    trace = sample_jobs(rng, count if count is not None else 3000)
    target = None if count is not None else int(DEMAND_FACTOR * free)
    return make_queue(rng, trace, menu, mix, target_units=target)


def _tpu(
    name: str, seed: int, size: float, pools: dict[tuple[str, str], int], description: str
) -> Scenario:
    rng = random.Random(f"{name}:{seed}")
    c = GeneratedCluster(name=name, rng=rng, levels=(NODEPOOL, HOSTNAME))
    fleet = []
    for (gen, shape), count in pools.items():
        n = _n(count, size)
        c.add_tpu_pools(TPU_TYPES[gen], shape, n)
        fleet.append((TPU_TYPES[gen], shape, n))
    _background(
        c,
        hold_key=NODEPOOL,
        hold=TPU_BACKGROUND_HOLD,
        spare=0,
        notebook_share=0.02,
        notebook_units=(4,),
    )
    queue = _queue(c, rng, tpu_menu(fleet), QueueMix(max_replicas=8))
    return Scenario(name, "tpu", description, c, queue, frozenset({"tpu"}))


def tpu_v5e(seed: int, size: float) -> Scenario:
    return _tpu(
        "tpu-v5e",
        seed,
        size,
        {("v5e", "2x4"): 24, ("v5e", "4x4"): 16, ("v5e", "4x8"): 8},
        "TPU v5e slices 2x4/4x4/4x8, 30% of pools held",
    )


def tpu_v6e(seed: int, size: float) -> Scenario:
    return _tpu(
        "tpu-v6e",
        seed,
        size,
        {("v6e", "2x4"): 16, ("v6e", "4x4"): 12, ("v6e", "4x8"): 6, ("v6e", "8x8"): 2},
        "TPU v6e slices 2x4..8x8, 30% of pools held",
    )


def tpu_v5p(seed: int, size: float) -> Scenario:
    return _tpu(
        "tpu-v5p",
        seed,
        size,
        {("v5p", "2x2x2"): 16, ("v5p", "2x2x4"): 12, ("v5p", "2x4x4"): 6, ("v5p", "4x4x4"): 2},
        "TPU v5p slices 2x2x2..4x4x4, 30% of pools held",
    )


def tpu_mixed(seed: int, size: float) -> Scenario:
    return _tpu(
        "tpu-mixed",
        seed,
        size,
        {
            (g, s): n
            for g in ("v5e", "v6e", "v5p")
            for s, n in zip(list(TPU_TYPES[g].shapes)[:3], (10, 8, 5), strict=True)
        },
        "TPU v5e+v6e+v5p pools of 2-8 hosts, 30% held",
    )


def build_tpu_pool_fleet(
    seed: int, pools: int, pending: int, *, held: float = 0.30, daemonsets: bool = True
) -> Scenario:
    """The planner's performance scenario: `pools` TPU pools of 2-8 hosts, `held` of them running.

    Pools are spread evenly over v5e/v6e/v5p and over 2-, 4- and 8-host topologies with weights
    30/35/35 (about 4.8 hosts per pool); `pending` JobSets from the trace ask for those shapes.
    """
    name = f"tpu-fleet-{pools}p-{pending}j"
    rng = random.Random(f"{name}:{seed}")
    c = GeneratedCluster(name="fleet", rng=rng, levels=(NODEPOOL, HOSTNAME))
    weights = {0: 0.30, 1: 0.35, 2: 0.35}
    fleet = []
    for g in ("v5e", "v6e", "v5p"):
        for i, shape in enumerate(list(TPU_TYPES[g].shapes)[:3]):
            n = round(pools / 3 * weights[i])
            c.add_tpu_pools(TPU_TYPES[g], shape, n)
            fleet.append((TPU_TYPES[g], shape, n))
    c.priority_classes = {name: value for name, value, _ in PRIORITIES}
    c.hold_domains(NODEPOOL, held, PRIORITIES)
    c.add_non_jobset_pods(0.02, (4,))
    if daemonsets:
        c.add_daemonsets()
    c.degrade(cordoned=0.01, not_ready=0.01)
    queue = _queue(c, rng, tpu_menu(fleet), QueueMix(max_replicas=8), count=pending)
    return Scenario(
        name,
        "scaling",
        f"{len(c.nodes)} nodes, {pending} pending",
        c,
        queue,
        frozenset({"tpu", "scaling"}),
    )


def _gpu(
    name: str,
    seed: int,
    size: float,
    *,
    gpu: str,
    blocks: int,
    subblocks: int,
    hosts: int,
    domain: str,
    sizes: dict[int, float],
    hold: float,
    spare: int,
    broken: int,
    description: str,
    tags: frozenset[str],
) -> Scenario:
    rng = random.Random(f"{name}:{seed}")
    levels = (BLOCK, domain, HOSTNAME)
    c = GeneratedCluster(name=name, rng=rng, levels=levels, span_level=BLOCK)
    c.add_gpu_blocks(GPU_TYPES[gpu], _n(blocks, size), subblocks, hosts, domain_label=domain)
    if broken:
        c.break_clique_hosts(domain, broken)
    _background(
        c, hold_key=domain, hold=hold, spare=spare, notebook_share=0.08, notebook_units=(1, 2, 4)
    )
    queue = _queue(
        c, rng, gpu_menu(GPU_TYPES[gpu], domain, sizes, BLOCK, hosts), QueueMix(max_replicas=8)
    )
    return Scenario(name, "gpu", description, c, queue, tags)


def h100(seed: int, size: float) -> Scenario:
    return _gpu(
        "h100-subblocks",
        seed,
        size,
        gpu="h100",
        blocks=3,
        subblocks=4,
        hosts=16,
        domain=SUBBLOCK,
        sizes={16: 0.35, 14: 0.2, 12: 0.2, 8: 0.25},
        hold=0.25,
        spare=2,
        broken=0,
        tags=frozenset({"gpu", "fragmented"}),
        description="H100 blocks x 4 sub-blocks x 16 hosts, notebooks on 8% of hosts",
    )


def h200(seed: int, size: float) -> Scenario:
    return _gpu(
        "h200-subblocks",
        seed,
        size,
        gpu="h200",
        blocks=2,
        subblocks=6,
        hosts=16,
        domain=SUBBLOCK,
        sizes={16: 0.4, 15: 0.2, 12: 0.2, 8: 0.2},
        hold=0.25,
        spare=2,
        broken=0,
        tags=frozenset({"gpu", "fragmented"}),
        description="H200 blocks x 6 sub-blocks x 16 hosts, notebooks on 8% of hosts",
    )


def gb200(seed: int, size: float) -> Scenario:
    return _gpu(
        "gb200-nvl72",
        seed,
        size,
        gpu="gb200",
        blocks=2,
        subblocks=8,
        hosts=18,
        domain=CLIQUE,
        sizes={18: 0.15, 16: 0.45, 15: 0.15, 12: 0.15, 8: 0.1},
        hold=0.2,
        spare=2,
        broken=3,
        tags=frozenset({"gpu", "fragmented"}),
        description="GB200 NVL72 racks (18 hosts x 4 GPUs), 0-3 unhealthy hosts each",
    )


def hetero(seed: int, size: float) -> Scenario:
    """TPU pools, H100 sub-blocks and NVL72 racks in one cluster; mixed replicated Jobs."""
    name = f"hetero-{seed}"
    rng = random.Random(f"hetero:{seed}")
    c = GeneratedCluster(
        name="hetero", rng=rng, levels=(BLOCK, SUBBLOCK, CLIQUE, HOSTNAME), span_level=BLOCK
    )
    fleet = []
    for gen, shape, count in (
        ("v6e", "2x4", 8),
        ("v6e", "4x4", 6),
        ("v6e", "4x8", 3),
        ("v5p", "2x2x4", 6),
        ("v5p", "2x4x4", 3),
    ):
        n = _n(count, size)
        c.add_tpu_pools(TPU_TYPES[gen], shape, n)
        fleet.append((TPU_TYPES[gen], shape, n))
    c.add_gpu_blocks(GPU_TYPES["h100"], _n(1, size), 4, 16)
    c.add_gpu_blocks(GPU_TYPES["gb200"], _n(1, size), 6, 18, domain_label=CLIQUE)
    c.break_clique_hosts(CLIQUE, 3)
    c.priority_classes = {name: value for name, value, _ in PRIORITIES}
    c.hold_domains(NODEPOOL, 0.25, PRIORITIES)
    c.hold_domains(SUBBLOCK, 0.15, PRIORITIES, spare_hosts=2)
    c.add_non_jobset_pods(0.05, (1, 2, 4))
    c.add_daemonsets()
    c.add_completed_pods(0.01)
    c.degrade(cordoned=0.01, not_ready=0.01)
    menu = [
        *tpu_menu(fleet),
        *gpu_menu(GPU_TYPES["h100"], SUBBLOCK, {16: 1.0, 12: 1.0, 8: 1.0}, BLOCK, 16),
        *gpu_menu(GPU_TYPES["gb200"], CLIQUE, {18: 0.5, 16: 1.5, 15: 0.5, 12: 0.5}, BLOCK, 18),
    ]
    queue = _queue(c, rng, menu, QueueMix(max_replicas=6, second_rjob=0.25))
    return Scenario(
        name,
        "hetero",
        "TPU v6e/v5p + H100 + GB200, mixed replicated Jobs",
        c,
        queue,
        frozenset({"heterogeneous"}),
    )


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
    c.add_gpu_blocks(GPU_TYPES["h100"], _n(2, size), 4, 16)
    c.add_gpu_blocks(GPU_TYPES["h200"], _n(1, size), 6, 16)
    _background(
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


STATIC_BUILDERS: dict[str, Callable[[int, float], Scenario]] = {
    "tpu-v5e": tpu_v5e,
    "tpu-v6e": tpu_v6e,
    "tpu-v5p": tpu_v5p,
    "tpu-mixed": tpu_mixed,
    "h100-subblocks": h100,
    "h200-subblocks": h200,
    "gb200-nvl72": gb200,
}
"""Fixed scenarios; heterogeneous ones are `hetero(seed, size)` over several seeds."""
