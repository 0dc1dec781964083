"""Node and pod records of a generated cluster, and the GKE machine types they are made of.

A record holds what the API server would (quantity strings, labels, taints, readiness, phases), so
one record feeds both paths the benchmarks measure: `NodeRec.to_node()` for the in-process solver
runs and `kubectl_export` for the end-to-end `placer plan` runs. `to_node` derives free capacity by
the loaders' rules (allocatable minus non-terminal pods' requests, one `pods` slot each); a test
checks that loading the exported JSON gives the same nodes.
"""

from __future__ import annotations

import functools
import math
import random
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Literal

from placer.model.cluster import JobSetUsage, Node
from placer.model.resources import parse_resource_map
from placer.model.scheduling import Taint
from placer.model.workload import JOBSET_NAME_LABEL

__all__ = [
    "BLOCK",
    "CLIQUE",
    "GKE_ACCELERATOR",
    "GPU",
    "GPU_TYPES",
    "HOST",
    "HOSTNAME",
    "NODEPOOL",
    "POD_SUFFIX_ALPHABET",
    "SUBBLOCK",
    "TPU",
    "TPU_ACCELERATOR",
    "TPU_TOPOLOGY",
    "TPU_TYPES",
    "GpuType",
    "NodeRec",
    "PodRec",
    "TaintEffect",
    "TpuType",
    "draw_priority",
    "quantity",
]

HOSTNAME = "kubernetes.io/hostname"
NODEPOOL = "cloud.google.com/gke-nodepool"
TPU_ACCELERATOR = "cloud.google.com/gke-tpu-accelerator"
TPU_TOPOLOGY = "cloud.google.com/gke-tpu-topology"
GKE_ACCELERATOR = "cloud.google.com/gke-accelerator"
BLOCK = "cloud.google.com/gce-topology-block"
SUBBLOCK = "cloud.google.com/gce-topology-subblock"
HOST = "cloud.google.com/gce-topology-host"
CLIQUE = "nvidia.com/gpu.clique"
TPU = "google.com/tpu"
GPU = "nvidia.com/gpu"
POD_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]
"""What `placer.model.scheduling.Taint.effect` accepts."""


@functools.lru_cache(maxsize=4096)
def quantity(text: str) -> Decimal:
    """Kubernetes quantity -> Decimal, parsed once per distinct string (50k nodes repeat them)."""
    return parse_resource_map({"q": text})["q"]


@dataclass(frozen=True)
class TpuType:
    """A GKE TPU generation: node labels, machine, allocatable, and its multi-host slice shapes."""

    generation: str
    accelerator: str
    machine: str
    cpu: str
    memory: str
    shapes: dict[str, int]
    """topology label -> hosts per slice (4 chips per host)."""


@dataclass(frozen=True)
class GpuType:
    generation: str
    accelerator: str
    machine: str
    gpus: int
    cpu: str
    memory: str
    arch: str = "amd64"


TPU_TYPES: dict[str, TpuType] = {
    "v5e": TpuType(
        "v5e",
        "tpu-v5-lite-podslice",
        "ct5lp-hightpu-4t",
        "110820m",
        "185005764Ki",
        {"2x4": 2, "4x4": 4, "4x8": 8, "8x8": 16, "8x16": 32, "16x16": 64},
    ),
    "v6e": TpuType(
        "v6e",
        "tpu-v6e-slice",
        "ct6e-standard-4t",
        "179500m",
        "704197468Ki",
        {"2x4": 2, "4x4": 4, "4x8": 8, "8x8": 16, "8x16": 32, "16x16": 64},
    ),
    "v5p": TpuType(
        "v5p",
        "tpu-v5p-slice",
        "ct5p-hightpu-4t",
        "207500m",
        "436476732Ki",
        {"2x2x2": 2, "2x2x4": 4, "2x4x4": 8, "4x4x4": 16, "4x4x8": 32, "4x8x8": 64},
    ),
}

GPU_TYPES: dict[str, GpuType] = {
    "h100": GpuType("h100", "nvidia-h100-mega-80gb", "a3-megagpu-8g", 8, "206300m", "1845452376Ki"),
    "h200": GpuType("h200", "nvidia-h200-141gb", "a3-ultragpu-8g", 8, "222300m", "2906493788Ki"),
    "gb200": GpuType(
        "gb200", "nvidia-gb200", "a4x-highgpu-4g", 4, "138300m", "859138004Ki", arch="arm64"
    ),
}


@dataclass
class PodRec:
    """A pod bound to a node, as `kubectl get pods -o json` would show it."""

    namespace: str
    name: str
    node: str
    requests: dict[str, str]
    limits: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    owner_kind: str = ""
    owner_name: str = ""
    priority_class: str = ""
    priority: int = 0
    phase: str = "Running"
    host_ports: tuple[tuple[int, str], ...] = ()

    @property
    def active(self) -> bool:
        return self.phase not in ("Succeeded", "Failed")

    def effective_requests(self) -> dict[str, str]:
        """Requests default to limits, per resource (the usual case for accelerators)."""
        return {**self.limits, **self.requests}


@dataclass
class NodeRec:
    name: str
    labels: dict[str, str]
    allocatable: dict[str, str]
    capacity: dict[str, str]
    taints: list[tuple[str, str, TaintEffect]] = field(default_factory=list)
    """(key, value, effect)."""
    ready: bool = True
    unschedulable: bool = False
    pods: list[PodRec] = field(default_factory=list)

    def set_not_ready(self) -> None:
        """The node lifecycle controller taints an unreachable node as well."""
        self.ready = False
        self.taints.append(("node.kubernetes.io/unreachable", "", "NoSchedule"))
        self.taints.append(("node.kubernetes.io/unreachable", "", "NoExecute"))

    def to_node(self) -> Node:
        """The planner's view, by the loader's rules: free = allocatable minus active pods'
        requests (resources the node offers, one `pods` slot each); per-JobSet usage recorded."""
        alloc = {k: quantity(v) for k, v in self.allocatable.items()}
        free = dict(alloc)
        usage: dict[str, dict[str, Decimal]] = {}
        ports: dict[str, set[tuple[int, str]]] = {}
        prios: dict[str, int] = {}
        for pod in self.pods:
            if not pod.active:
                continue
            req = {
                k: quantity(v)
                for k, v in pod.effective_requests().items()
                if k in alloc and quantity(v) != 0
            }
            if "pods" in alloc:
                req["pods"] = Decimal(1)
            for k, v in req.items():
                free[k] -= v
            if JOBSET_NAME_LABEL in pod.labels:
                owner = f"{pod.namespace}/{pod.labels[JOBSET_NAME_LABEL]}"
                mine = usage.setdefault(owner, {})
                for k, v in req.items():
                    mine[k] = mine.get(k, Decimal(0)) + v
                ports.setdefault(owner, set()).update(pod.host_ports)
                prios[owner] = max(prios.get(owner, pod.priority), pod.priority)
        all_ports = sorted({hp for p in self.pods if p.active for hp in p.host_ports})
        return Node(
            name=self.name,
            labels=dict(self.labels),
            taints=tuple(Taint(key=k, value=v, effect=e) for k, v, e in self.taints),
            allocatable=alloc,
            free=free,
            ready=self.ready,
            unschedulable=self.unschedulable,
            used_host_ports=tuple(all_ports),
            jobsets=tuple(sorted(usage)),
            jobset_usage={
                o: JobSetUsage(
                    requests=dict(sorted(u.items())),
                    host_ports=tuple(sorted(ports[o])),
                    priority=prios[o],
                )
                for o, u in sorted(usage.items())
            },
        )

    def accelerators(self) -> int:
        return sum(int(quantity(v)) for k, v in self.allocatable.items() if k in (TPU, GPU))

    def free_accelerators(self) -> int:
        used = sum(
            int(quantity(v))
            for p in self.pods
            if p.active
            for k, v in p.effective_requests().items()
            if k in (TPU, GPU)
        )
        return self.accelerators() - used


def draw_priority(rng: random.Random, priorities: list[tuple[str, int, float]]) -> tuple[str, int]:
    """(class name, value) with the given weights."""
    r = rng.random() * math.fsum(w for _, _, w in priorities)
    for name, value, w in priorities:
        r -= w
        if r <= 0:
            return name, value
    return priorities[-1][0], priorities[-1][1]
