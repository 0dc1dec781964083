"""Generated clusters: GKE TPU slices, H100/H200 blocks, GB200 NVL72 racks, and their load.

`GeneratedCluster` builds fleets the way GKE shapes them: TPU node pools are slices (4 chips per
host; hosts per slice from the topology), H100/H200 hosts carry 8 GPUs under
`cloud.google.com/gce-topology-block/-subblock`, GB200 hosts carry 4 GPUs in NVL72 domains of 18
hosts (`nvidia.com/gpu.clique`). The background load comes from `BackgroundLoad`; records and
machine types from `benchmarks.worlds.records`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from benchmarks.worlds.background import BackgroundLoad
from benchmarks.worlds.records import (
    BLOCK,
    CLIQUE,
    GKE_ACCELERATOR,
    GPU,
    HOST,
    POD_SUFFIX_ALPHABET,
    SUBBLOCK,
    TPU,
    TPU_ACCELERATOR,
    TPU_TOPOLOGY,
    GpuType,
    NodeRec,
    TaintEffect,
    TpuType,
)
from placer.model.cluster import ClusterSnapshot

__all__ = ["GeneratedCluster"]


@dataclass
class GeneratedCluster(BackgroundLoad):
    """Nodes and pods of one generated cluster, plus the facts the report needs about it."""

    name: str
    rng: random.Random
    nodes: list[NodeRec] = field(default_factory=list)
    levels: tuple[str, ...] = ()
    span_level: str | None = None
    """The level above the exclusive domains whose spanning the report counts (blocks), if any."""
    priority_classes: dict[str, int] = field(default_factory=dict)
    running: list[str] = field(default_factory=list)
    """namespace/name of the JobSets already running (the background load)."""

    _pools: dict[str, int] = field(default_factory=dict)

    # --- naming ------------------------------------------------------------------------------

    def _next_pool(self, prefix: str) -> str:
        i = self._pools.get(prefix, 0)
        self._pools[prefix] = i + 1
        return f"{prefix}-{i:04d}"

    def hexid(self, digits: int = 8) -> str:
        return f"{self.rng.getrandbits(4 * digits):0{digits}x}"

    def pod_suffix(self) -> str:
        return "".join(self.rng.choice(POD_SUFFIX_ALPHABET) for _ in range(5))

    def _node(
        self,
        pool: str,
        labels: dict[str, str],
        alloc: dict[str, str],
        taints: list[tuple[str, str, TaintEffect]],
        pool_hash: str,
    ) -> NodeRec:
        name = f"gke-{self.name}-{pool}-{pool_hash}-{self.pod_suffix()[:4]}"
        base = {
            "kubernetes.io/hostname": name,
            "kubernetes.io/os": "linux",
            "cloud.google.com/gke-nodepool": pool,
            "cloud.google.com/gke-os-distribution": "cos",
            "cloud.google.com/gke-boot-disk": "hyperdisk-balanced",
            "topology.kubernetes.io/region": "us-central1",
            "topology.kubernetes.io/zone": "us-central1-b",
        }
        base.update(labels)
        node = NodeRec(
            name=name, labels=base, allocatable=alloc, capacity=dict(alloc), taints=taints
        )
        self.nodes.append(node)
        return node

    # --- fleets -------------------------------------------------------------------------------

    def add_tpu_pools(self, tpu: TpuType, shape: str, count: int) -> None:
        """`count` multi-host node pools, each one slice of `shape` (GKE: one pool per slice)."""
        hosts = tpu.shapes[shape]
        for _ in range(count):
            pool = self._next_pool(f"tpu-{tpu.generation}-{shape}")
            pool_hash = self.hexid()
            for _ in range(hosts):
                self._node(
                    pool,
                    {
                        "node.kubernetes.io/instance-type": tpu.machine,
                        "kubernetes.io/arch": "amd64",
                        "cloud.google.com/machine-family": tpu.machine.split("-")[0],
                        TPU_ACCELERATOR: tpu.accelerator,
                        TPU_TOPOLOGY: shape,
                    },
                    {
                        "cpu": tpu.cpu,
                        "memory": tpu.memory,
                        TPU: "4",
                        "pods": "110",
                        "ephemeral-storage": "47060071478",
                    },
                    [(TPU, "present", "NoSchedule")],
                    pool_hash,
                )

    def add_gpu_blocks(
        self, gpu: GpuType, blocks: int, subblocks: int, hosts: int, domain_label: str = SUBBLOCK
    ) -> None:
        """`blocks` x `subblocks` x `hosts`; GB200 racks also get their NVLink clique label."""
        cluster_uuid = f"{self.hexid(8)}-{self.hexid(4)}-{self.hexid(4)}"
        for b in range(blocks):
            block = self.hexid(16)
            pool = self._next_pool(f"{gpu.generation}-pool")
            pool_hash = self.hexid()
            for s in range(subblocks):
                sub = self.hexid(16)
                for _ in range(hosts):
                    labels = {
                        "node.kubernetes.io/instance-type": gpu.machine,
                        "kubernetes.io/arch": gpu.arch,
                        "cloud.google.com/machine-family": gpu.machine.split("-")[0],
                        GKE_ACCELERATOR: gpu.accelerator,
                        "cloud.google.com/gke-gpu": "true",
                        "nvidia.com/gpu.present": "true",
                        BLOCK: block,
                        SUBBLOCK: sub,
                        HOST: self.hexid(16),
                    }
                    if domain_label == CLIQUE:
                        labels[CLIQUE] = f"{cluster_uuid}.{b * subblocks + s}"
                    self._node(
                        pool,
                        labels,
                        {
                            "cpu": gpu.cpu,
                            "memory": gpu.memory,
                            GPU: str(gpu.gpus),
                            "pods": "110",
                            "ephemeral-storage": "1000000000000",
                        },
                        [(GPU, "present", "NoSchedule")],
                        pool_hash,
                    )

    # --- outputs --------------------------------------------------------------------------------

    def to_snapshot(self) -> ClusterSnapshot:
        return ClusterSnapshot(
            nodes=tuple(n.to_node() for n in self.nodes),
            priority_classes=dict(self.priority_classes),
            levels=self.levels,
            source=f"generated:{self.name}",
        )

    def total_accelerators(self) -> int:
        return sum(n.accelerators() for n in self.nodes)

    def free_accelerators(self, usable_only: bool = True) -> int:
        return sum(
            n.free_accelerators()
            for n in self.nodes
            if not usable_only or (n.ready and not n.unschedulable)
        )
