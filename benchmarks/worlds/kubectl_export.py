"""Write a generated scenario as a user would hand it to `placer plan`: kubectl JSON plus manifests.

`cluster.json` is what `kubectl get nodes,pods,priorityclasses -A -o json` prints (a v1 `List`),
with GKE/NVIDIA node labels, allocatable and capacity, taints, conditions, and pods bound to nodes
(running JobSet pods with JobSet's labels, notebooks, DaemonSets, finished pods). `jobsets/` holds
one JobSet YAML per pending JobSet. The end-to-end benchmark times `placer plan` on exactly this.

Items are streamed to the file one by one, so a 50,000-node cluster never sits in memory twice.
The output is compact JSON (kubectl indents; the loader must not care).
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import yaml

from benchmarks.worlds.fleets import GeneratedCluster
from benchmarks.worlds.queues import BASE_TIME, JobSetSpec
from benchmarks.worlds.records import GPU, TPU, NodeRec, PodRec

__all__ = ["cluster_items", "write_cluster", "write_jobsets", "write_scenario"]

_STAMP = (BASE_TIME.replace(day=1, month=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
_NOW = BASE_TIME.strftime("%Y-%m-%dT%H:%M:%SZ")

_Dumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
"""libyaml's dumper when PyYAML has it: 2,000 manifests are written per scaling point."""


def _uid(text: str) -> str:
    """A stable RFC-4122-looking uid derived from the object's name (deterministic output)."""
    h = f"{zlib.crc32(text.encode()):08x}{zlib.crc32(text[::-1].encode()):08x}"
    h = (h * 2)[:32]
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:32]}"


def _ip(i: int, base: int) -> str:
    return f"10.{base + (i >> 16) % 64}.{(i >> 8) & 255}.{i & 255}"


def _node(n: NodeRec, i: int) -> dict[str, Any]:
    ready = {
        "type": "Ready",
        "status": "True" if n.ready else "Unknown",
        "reason": "KubeletReady" if n.ready else "NodeStatusUnknown",
        "message": "kubelet is posting ready status"
        if n.ready
        else "Kubelet stopped posting node status.",
        "lastHeartbeatTime": _NOW,
        "lastTransitionTime": _STAMP,
    }
    pressure = [
        {
            "type": t,
            "status": "False",
            "reason": f"KubeletHas{r}",
            "lastHeartbeatTime": _NOW,
            "lastTransitionTime": _STAMP,
        }
        for t, r in (
            ("MemoryPressure", "SufficientMemory"),
            ("DiskPressure", "NoDiskPressure"),
            ("PIDPressure", "SufficientPID"),
        )
    ]
    spec: dict[str, Any] = {
        "providerID": f"gce://bench-project/us-central1-b/{n.name}",
        "podCIDR": f"10.{64 + (i >> 8) % 64}.{i & 255}.0/24",
    }
    if n.taints:
        spec["taints"] = [
            {"key": k, **({"value": v} if v else {}), "effect": e} for k, v, e in n.taints
        ]
    if n.unschedulable:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": n.name,
            "uid": _uid(n.name),
            "creationTimestamp": _STAMP,
            "labels": n.labels,
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
        },
        "spec": spec,
        "status": {
            "capacity": n.capacity,
            "allocatable": n.allocatable,
            "conditions": [*pressure, ready],
            "addresses": [
                {"type": "InternalIP", "address": _ip(i, 0)},
                {"type": "Hostname", "address": n.name},
            ],
            "nodeInfo": {
                "architecture": n.labels.get("kubernetes.io/arch", "amd64"),
                "operatingSystem": "linux",
                "osImage": "Container-Optimized OS from Google",
                "kernelVersion": "6.6.93+",
                "containerRuntimeVersion": "containerd://2.0.6",
                "kubeletVersion": "v1.34.1-gke.1431000",
            },
        },
    }


def _pod(p: PodRec, i: int) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": "main",
        "image": "us-docker.pkg.dev/example/app:1",
        "resources": {"requests": p.requests},
    }
    if p.limits:
        container["resources"]["limits"] = p.limits
    spec: dict[str, Any] = {
        "nodeName": p.node,
        "schedulerName": "default-scheduler",
        "restartPolicy": "Never" if p.owner_kind == "Job" else "Always",
        "containers": [container],
    }
    if p.priority_class:
        spec["priorityClassName"] = p.priority_class
        spec["priority"] = p.priority
    if p.host_ports:
        spec["hostNetwork"] = True
        container["ports"] = [
            {"containerPort": port, "hostPort": port, "protocol": proto}
            for port, proto in p.host_ports
        ]
    if p.owner_kind == "DaemonSet":
        spec["tolerations"] = [{"operator": "Exists"}]
    else:
        accels = [r for r in p.limits if r in (TPU, GPU)]
        spec["tolerations"] = [
            {"key": r, "operator": "Exists", "effect": "NoSchedule"} for r in accels
        ]
    meta: dict[str, Any] = {
        "name": p.name,
        "namespace": p.namespace,
        "uid": _uid(p.name),
        "creationTimestamp": _STAMP,
        "labels": p.labels,
    }
    if p.owner_kind:
        api = {"Job": "batch/v1", "DaemonSet": "apps/v1", "StatefulSet": "apps/v1"}[p.owner_kind]
        meta["ownerReferences"] = [
            {
                "apiVersion": api,
                "kind": p.owner_kind,
                "name": p.owner_name,
                "uid": _uid(p.owner_name),
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
    running = p.phase == "Running"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": spec,
        "status": {
            "phase": p.phase,
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True" if running else "False",
                    "lastTransitionTime": _STAMP,
                }
            ],
            "podIP": _ip(i, 96),
            "startTime": _STAMP,
        },
    }


def cluster_items(cluster: GeneratedCluster) -> Iterator[dict[str, Any]]:
    """PriorityClasses, then Nodes, then Pods, as kubectl lists them."""
    for name, value in sorted(cluster.priority_classes.items()):
        yield {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name, "uid": _uid(name)},
            "value": value,
            "globalDefault": False,
            "preemptionPolicy": "PreemptLowerPriority",
        }
    for i, n in enumerate(cluster.nodes):
        yield _node(n, i)
    i = 0
    for n in cluster.nodes:
        for p in n.pods:
            yield _pod(p, i)
            i += 1


def write_cluster(cluster: GeneratedCluster, path: Path) -> Path:
    """Stream the cluster as one v1 List to `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        f.write('{"apiVersion":"v1","kind":"List","metadata":{"resourceVersion":""},"items":[')
        for k, item in enumerate(cluster_items(cluster)):
            if k:
                f.write(",\n")
            f.write(json.dumps(item, separators=(",", ":")))
        f.write("]}\n")
    return path


def write_jobsets(queue: Sequence[JobSetSpec], directory: Path) -> Path:
    """One `<namespace>-<name>.yaml` per JobSet."""
    directory.mkdir(parents=True, exist_ok=True)
    for js in queue:
        with open(directory / f"{js.namespace}-{js.name}.yaml", "w") as f:
            yaml.dump(js.to_manifest(), f, Dumper=_Dumper, sort_keys=False)
    return directory


def write_scenario(
    cluster: GeneratedCluster, queue: Sequence[JobSetSpec], directory: Path
) -> tuple[Path, Path]:
    """`directory/cluster.json` and `directory/jobsets/`; returns both paths."""
    return (
        write_cluster(cluster, directory / "cluster.json"),
        write_jobsets(queue, directory / "jobsets"),
    )
