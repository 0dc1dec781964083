"""Fleets and queues for `benchmarks.kueue_admission`, as API objects for the real control plane.

Two sources, one shape (`Setup`):

- `racks_setup`: the synthetic GPU fleet of blocks x racks x hosts (8 GPUs each), one host in
  every third rack taken by a stray whole-host pod, and a queue of JobSets of 1-3 child Jobs of
  half a rack each, exclusive per rack.
- `scenario_setup`: a fleet and queue of the benchmark suite (`benchmarks.worlds.scenarios`: the TPU
  and GB200 fleets the static and over-time benchmarks use), with their running pods (JobSets
  holding domains, notebooks, DaemonSets) bound where the generator put them.

`queued` turns a pending JobSet into what each mode submits: Kueue's queue label on both;
for Kueue TAS alone each pod template asks for its child Job in one domain of the JobSet's
exclusive key (`podset-slice-required-topology`, slice size = pods per child Job) and tolerates
its accelerator's taint (TAS reads templates, not the pods ExtendedResourceToleration changes);
for placer's check the templates carry placer's gate.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from benchmarks.cluster_throughput import GPU, gpu_node
from benchmarks.worlds import scenarios
from benchmarks.worlds.kubectl_export import cluster_items
from placer.model.workload import PLACER_TOPOLOGY_PREFIX, TOPOLOGY_ANNOTATIONS, topology_annotation

__all__ = ["FLEET_LABEL", "Pending", "Setup", "queued", "racks_setup", "scenario_setup"]

EXCLUSIVE = "alpha.jobset.sigs.k8s.io/exclusive-topology"
BLOCK, RACK, HOST = "example.com/block", "example.com/rack", "kubernetes.io/hostname"
FLEET_LABEL = ("example.com/fleet", "bench")
"""Put on every node: what the ResourceFlavor's nodeLabels select."""
GATE = "placer.dev/placement"
STRAY_NAMESPACE = "bench-stray"
GPUS_PER_HOST = 8
TERMINAL = ("Succeeded", "Failed")
NODE_STATUS = ("allocatable", "capacity", "conditions")


@dataclass(frozen=True)
class Pending:
    """One queued JobSet: its manifest (no namespace) and what it asks."""

    manifest: dict[str, Any]
    accelerators: int
    pods: int

    @property
    def name(self) -> str:
        return str(self.manifest["metadata"]["name"])

    @property
    def exclusive_key(self) -> str:
        return str(self.manifest["metadata"]["annotations"][EXCLUSIVE])


@dataclass(frozen=True)
class Setup:
    name: str
    nodes: list[dict[str, Any]]
    pods: list[dict[str, Any]]
    """Bound pods of no queued JobSet, each with its namespace."""
    priority_classes: list[dict[str, Any]]
    levels: tuple[str, ...]
    """Kueue Topology levels, coarse to fine, hostname last."""
    accelerator: str
    queue: list[Pending] = field(default_factory=list)


def _jobset(name: str, replicas: int, pods: int) -> dict[str, Any]:
    limits = {GPU: str(GPUS_PER_HOST)}
    container = {"name": "train", "image": "busybox", "resources": {"limits": limits}}
    job = {
        "parallelism": pods,
        "completions": pods,
        "backoffLimit": 0,
        "template": {"spec": {"restartPolicy": "Never", "containers": [container]}},
    }
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": name, "annotations": {EXCLUSIVE: RACK}},
        "spec": {
            "replicatedJobs": [{"name": "w", "replicas": replicas, "template": {"spec": job}}]
        },
    }


def racks_setup(blocks: int, racks: int, hosts: int, jobsets: int) -> Setup:
    nodes = [
        gpu_node(
            f"gpu-b{b}-r{r}-h{h}",
            {BLOCK: f"b{b}", RACK: f"b{b}-r{r}", FLEET_LABEL[0]: FLEET_LABEL[1]},
        )
        for b in range(blocks)
        for r in range(racks)
        for h in range(hosts)
    ]
    limits = {GPU: str(GPUS_PER_HOST)}
    stray = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"stray-{n['metadata']['name']}", "namespace": STRAY_NAMESPACE},
            "spec": {
                "nodeName": n["metadata"]["name"],
                "containers": [{"name": "c", "image": "busybox", "resources": {"limits": limits}}],
            },
        }
        for index, n in enumerate(nodes[::hosts])
        if index % 3 == 0
    ]
    pods = max(1, hosts // 2)
    queue = [
        Pending(
            _jobset(f"js-{i:03d}", 1 + i % 3, pods),
            (1 + i % 3) * pods * GPUS_PER_HOST,
            (1 + i % 3) * pods,
        )
        for i in range(jobsets)
    ]
    return Setup("racks", nodes, stray, [], (BLOCK, RACK, HOST), GPU, queue)


def _bare(pod: dict[str, Any]) -> dict[str, Any]:
    """A generated bound pod as created here: no owner (the garbage collector would delete a
    pod whose owner does not exist), no server-set fields, no status."""
    meta = pod["metadata"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": meta["name"],
            "namespace": meta.get("namespace") or "default",
            "labels": dict(meta.get("labels") or {}),
        },
        "spec": pod["spec"],
    }


def scenario_setup(name: str, seed: int, size: float) -> Setup:
    """A benchmark scenario (`scenarios.STATIC_BUILDERS[name]`) as objects to create."""
    sc = scenarios.STATIC_BUILDERS[name](seed, size)
    nodes, pods, classes = [], [], []
    for item in cluster_items(sc.cluster):
        if item["kind"] == "Node":
            item = copy.deepcopy(item)
            item["metadata"].setdefault("labels", {})[FLEET_LABEL[0]] = FLEET_LABEL[1]
            # what a scheduler and Kueue read; the client refuses a partial nodeInfo
            status = item.get("status") or {}
            item["status"] = {k: status[k] for k in NODE_STATUS if k in status}
            nodes.append(item)
        elif item["kind"] == "Pod" and (item.get("status") or {}).get("phase") not in TERMINAL:
            pods.append(_bare(item))
        elif item["kind"] == "PriorityClass":
            classes.append(
                {k: v for k, v in item.items() if k != "metadata"}
                | {"metadata": {"name": item["metadata"]["name"]}}
            )
    accelerator = next(
        k for n in nodes for k in n["status"]["allocatable"] if k.endswith(("/gpu", "/tpu"))
    )
    queue = []
    for spec in sc.queue:
        manifest = spec.to_manifest()
        manifest["metadata"].pop("namespace", None)
        if EXCLUSIVE not in manifest["metadata"].get("annotations", {}):
            continue  # the benchmark is about exclusive domains
        queue.append(
            Pending(
                manifest,
                spec.units,
                sum(r.replicas * r.shape.pods_per_job for r in spec.rjobs),
            )
        )
    return Setup(name, nodes, pods, classes, tuple(sc.cluster.levels), accelerator, queue)


def queued(pending: Pending, mode: str, accelerator: str) -> dict[str, Any]:
    """The manifest as `mode` (tas or placer) submits it to Kueue's LocalQueue `training`."""
    manifest = copy.deepcopy(pending.manifest)
    manifest["metadata"].setdefault("labels", {})["kueue.x-k8s.io/queue-name"] = "training"
    manifest["metadata"]["annotations"]["placer.dev/expected-duration"] = "2h"
    for rj in manifest["spec"]["replicatedJobs"]:
        job = rj["template"]["spec"]
        pod = job["template"]
        spec = pod["spec"]
        if mode == "tas":
            pods = min(job.get("parallelism", 1), job.get("completions", job.get("parallelism", 1)))
            pod.setdefault("metadata", {}).setdefault("annotations", {}).update(
                {
                    "kueue.x-k8s.io/podset-slice-required-topology": pending.exclusive_key,
                    "kueue.x-k8s.io/podset-slice-size": str(pods),
                }
            )
            spec.setdefault("tolerations", []).append(
                {"key": accelerator, "operator": "Exists", "effect": "NoSchedule"}
            )
        else:
            spec["schedulingGates"] = [{"name": GATE}]
            # Kueue refuses its own topology annotations on a flavor without topologyName
            # (placer's): the same request in placer's spelling
            annotations = pod.setdefault("metadata", {}).setdefault("annotations", {})
            for key in [k for k in annotations if k in TOPOLOGY_ANNOTATIONS]:
                annotations[topology_annotation(key, PLACER_TOPOLOGY_PREFIX)] = annotations.pop(key)
    return manifest
