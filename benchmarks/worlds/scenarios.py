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
    PRIORITIES,
    ChildShape,
    JobSetSpec,
    QueueMix,
    gpu_menu,
    make_queue,
    tpu_menu,
)
from benchmarks.worlds.records import (
    BLOCK,
    CLIQUE,
    GPU_TYPES,
    HOSTNAME,
    NODEPOOL,
    SUBBLOCK,
    TPU_TYPES,
)
from benchmarks.worlds.trace import sample_jobs
from placer.model.cluster import ClusterSnapshot
from placer.model.workload import JobSetRequest

__all__ = [
    "DEMAND_FACTOR",
    "FLEET_ASSUMPTIONS",
    "STATIC_BUILDERS",
    "Scenario",
    "add_background",
    "build_tpu_pool_fleet",
    "gb200",
    "h100",
    "h200",
    "hetero",
    "scaled_count",
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


def scaled_count(base: int, size: float) -> int:
    """A pool or block count scaled by the scenario's `size`, never below one."""
    return max(1, round(base * size))


def add_background(
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
        n = scaled_count(count, size)
        c.add_tpu_pools(TPU_TYPES[gen], shape, n)
        fleet.append((TPU_TYPES[gen], shape, n))
    add_background(
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
    c.add_gpu_blocks(
        GPU_TYPES[gpu], scaled_count(blocks, size), subblocks, hosts, domain_label=domain
    )
    if broken:
        c.break_clique_hosts(domain, broken)
    add_background(
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
        n = scaled_count(count, size)
        c.add_tpu_pools(TPU_TYPES[gen], shape, n)
        fleet.append((TPU_TYPES[gen], shape, n))
    c.add_gpu_blocks(GPU_TYPES["h100"], scaled_count(1, size), 4, 16)
    c.add_gpu_blocks(GPU_TYPES["gb200"], scaled_count(1, size), 6, 18, domain_label=CLIQUE)
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
