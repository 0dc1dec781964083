"""The synthetic cluster `benchmarks.extender_bench` serves: GKE TPU nodes, JobSet pods, a plan.

Kept apart from the load generator and the report so the inputs can be read (and changed) on their
own: what the extender is asked about decides what its latency means. Nodes are named and labelled
as GKE names them, 16 to a subblock and 16 subblocks to a block (`node_name`, `node_labels`);
`realistic_node` is a whole Node object as the API serves it (~9 KB, for the NodeList series);
`jobset_pod` and `plain_pod` are the pods the scheduler asks about, one the plan knows and one it
does not; `bench_plan` is the plan that reserves a share of the subblocks.
"""

from __future__ import annotations

import json
from typing import Any

from benchmarks.worlds.records import BLOCK, SUBBLOCK
from placer.model.plan import (
    DomainRef,
    JobPlacement,
    JobSetOutcome,
    Plan,
    PodPlacement,
    SolverReport,
)

__all__ = [
    "NODES_PER_SUBBLOCK",
    "SUBBLOCKS_PER_BLOCK",
    "bench_plan",
    "jobset_pod",
    "node_labels",
    "node_name",
    "plain_pod",
    "realistic_node",
]

NODES_PER_SUBBLOCK = 16
SUBBLOCKS_PER_BLOCK = 16


def node_name(i: int) -> str:
    return f"gke-tpu-v5p-pool-{i // NODES_PER_SUBBLOCK:03d}-{i:05d}"


def node_labels(i: int) -> dict[str, str]:
    name = node_name(i)
    sub = i // NODES_PER_SUBBLOCK
    return {
        "beta.kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/instance-type": "ct5p-hightpu-4t",
        "beta.kubernetes.io/os": "linux",
        BLOCK: f"b{sub // SUBBLOCKS_PER_BLOCK}",
        SUBBLOCK: f"sb{sub % SUBBLOCKS_PER_BLOCK}",
        "cloud.google.com/gce-topology-host": f"h{i // 4}",
        "cloud.google.com/gke-boot-disk": "pd-balanced",
        "cloud.google.com/gke-container-runtime": "containerd",
        "cloud.google.com/gke-nodepool": f"tpu-pool-{sub}",
        "cloud.google.com/gke-os-distribution": "cos",
        "cloud.google.com/gke-tpu-accelerator": "tpu-v5p-slice",
        "cloud.google.com/gke-tpu-topology": "4x4x4",
        "cloud.google.com/machine-family": "ct5p",
        "cloud.google.com/private-node": "false",
        "failure-domain.beta.kubernetes.io/region": "us-east5",
        "failure-domain.beta.kubernetes.io/zone": "us-east5-a",
        "iam.gke.io/gke-metadata-server-enabled": "true",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": "ct5p-hightpu-4t",
        "topology.kubernetes.io/region": "us-east5",
        "topology.kubernetes.io/zone": "us-east5-a",
    }


def realistic_node(i: int) -> dict[str, Any]:
    """A GKE TPU node as the API serves it (field order as Go's encoder writes it): labels,
    annotations with embedded JSON, a taint, conditions, addresses, node info and 20 images."""
    name = node_name(i)
    labels = node_labels(i)
    conditions = [
        "FrequentUnregisterNetDevice", "KernelDeadlock", "ReadonlyFilesystem",
        "CorruptDockerOverlay2", "FrequentKubeletRestart", "MemoryPressure", "DiskPressure",
        "PIDPressure", "Ready",
    ]  # fmt: skip
    return {
        "metadata": {
            "name": name,
            "uid": f"5f0c{i:08d}-aaaa-bbbb-cccc-0123456789ab",
            "resourceVersion": str(1_000_000 + i),
            "creationTimestamp": "2026-05-01T10:00:00Z",
            "labels": labels,
            "annotations": {
                "container.googleapis.com/instance_id": str(9_000_000_000_000 + i),
                "csi.volume.kubernetes.io/nodeid": json.dumps(
                    {"pd.csi.storage.gke.io": f"projects/p/zones/us-east5-a/instances/{name}"}
                ),
                "node.alpha.kubernetes.io/ttl": "0",
                "node.gke.io/last-applied-node-labels": ",".join(
                    f"{k}={v}" for k, v in list(labels.items())[:12]
                ),
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
        },
        "spec": {
            "podCIDR": f"10.{i // 256}.{i % 256}.0/24",
            "podCIDRs": [f"10.{i // 256}.{i % 256}.0/24"],
            "providerID": f"gce://p/us-east5-a/{name}",
            "taints": [{"key": "google.com/tpu", "value": "present", "effect": "NoSchedule"}],
        },
        "status": {
            "capacity": {"cpu": "208", "google.com/tpu": "4", "memory": "462202520Ki",
                         "ephemeral-storage": "98831908Ki", "pods": "110"},
            "allocatable": {"cpu": "207640m", "google.com/tpu": "4", "memory": "451487384Ki",
                            "ephemeral-storage": "47060071478", "pods": "110"},
            "conditions": [
                {
                    "type": t,
                    "status": "True" if t == "Ready" else "False",
                    "lastHeartbeatTime": "2026-06-01T10:00:00Z",
                    "lastTransitionTime": "2026-05-01T10:00:00Z",
                    "reason": f"{t}Reason",
                    "message": f"kubelet reports {t} as expected",
                }
                for t in conditions
            ],
            "addresses": [
                {"type": "InternalIP", "address": f"10.128.{i // 256}.{i % 256}"},
                {"type": "Hostname", "address": name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "machineID": f"{i:032x}", "systemUUID": f"{i:036d}", "bootID": f"{i:036d}",
                "kernelVersion": "6.1.100+", "osImage": "Container-Optimized OS from Google",
                "containerRuntimeVersion": "containerd://1.7.22",
                "kubeletVersion": "v1.33.2-gke.1000", "kubeProxyVersion": "v1.33.2-gke.1000",
                "operatingSystem": "linux", "architecture": "amd64",
            },
            "images": [
                {
                    "names": [
                        f"us-docker.pkg.dev/proj/repo/image-{k}@sha256:{k * 7919:064x}",
                        f"us-docker.pkg.dev/proj/repo/image-{k}:v1.{k}",
                    ],
                    "sizeBytes": 100_000_000 + k,
                }
                for k in range(20)
            ],
        },
    }  # fmt: skip


def jobset_pod(jobset: str, completion_index: int) -> dict[str, Any]:
    """A TPU training pod as JobSet creates it (labels, annotations, env, affinity...)."""
    job = f"{jobset}-workers-0"
    labels = {
        "batch.kubernetes.io/controller-uid": "c0ffee00-0000-4000-8000-000000000001",
        "batch.kubernetes.io/job-completion-index": str(completion_index),
        "batch.kubernetes.io/job-name": job,
        "controller-uid": "c0ffee00-0000-4000-8000-000000000001",
        "job-name": job,
        "jobset.sigs.k8s.io/global-replicas": "1",
        "jobset.sigs.k8s.io/group-name": "default",
        "jobset.sigs.k8s.io/job-global-index": "0",
        "jobset.sigs.k8s.io/job-index": "0",
        "jobset.sigs.k8s.io/job-key": "3f1e0c2d4b5a69788796a5b4c3d2e1f0a9b8c7d6",
        "jobset.sigs.k8s.io/jobset-name": jobset,
        "jobset.sigs.k8s.io/jobset-uid": "c0ffee00-0000-4000-8000-000000000002",
        "jobset.sigs.k8s.io/replicatedjob-name": "workers",
        "jobset.sigs.k8s.io/replicatedjob-replicas": "1",
        "jobset.sigs.k8s.io/restart-attempt": "0",
    }
    env = [{"name": f"ENV_{k}", "value": f"value-{k}" * 3} for k in range(20)]
    return {
        "metadata": {
            "name": f"{job}-{completion_index}-x7k2p",
            "generateName": f"{job}-{completion_index}-",
            "namespace": "bench",
            "uid": f"pod-uid-{completion_index:08d}",
            "labels": labels,
            "annotations": dict(labels),
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": job,
                                 "uid": "c0ffee00", "controller": True}],
        },
        "spec": {
            "subdomain": jobset,
            "hostname": f"{job}-{completion_index}",
            "restartPolicy": "Never",
            "nodeSelector": {"cloud.google.com/gke-tpu-accelerator": "tpu-v5p-slice",
                             "cloud.google.com/gke-tpu-topology": "4x4x4"},
            "tolerations": [
                {"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"},
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                 "effect": "NoExecute", "tolerationSeconds": 300},
            ],
            "containers": [
                {
                    "name": "trainer",
                    "image": "us-docker.pkg.dev/proj/repo/trainer:v1.2.3",
                    "command": ["python", "-m", "train", "--config", "/etc/train/config.yaml"],
                    "env": env,
                    "ports": [{"containerPort": 8471}, {"containerPort": 8080}],
                    "resources": {"requests": {"cpu": "200", "memory": "400Gi",
                                               "google.com/tpu": "4"},
                                  "limits": {"google.com/tpu": "4"}},
                    "volumeMounts": [{"name": "config", "mountPath": "/etc/train"}],
                }
            ],
            "volumes": [{"name": "config", "configMap": {"name": "train-config"}}],
            "schedulerName": "default-scheduler",
            "priority": 0,
        },
        "status": {"phase": "Pending", "qosClass": "Burstable"},
    }  # fmt: skip


def plain_pod() -> dict[str, Any]:
    """A pod the plan does not know, also asking for TPUs (so the scheduler would ask)."""
    pod = jobset_pod("unplanned", 0)
    pod["metadata"] = {"name": "notebook-7f9c", "namespace": "research", "uid": "nb-uid"}
    return pod


def bench_plan(nodes: int, reserved_share: float) -> tuple[Plan, list[str]]:
    """One placed JobSet per reserved subblock, its 16 pods pinned one per node."""
    subblocks = nodes // NODES_PER_SUBBLOCK
    outcomes = []
    for sub in range(int(subblocks * reserved_share)):
        block, sb = f"b{sub // SUBBLOCKS_PER_BLOCK}", f"sb{sub % SUBBLOCKS_PER_BLOCK}"
        name = f"js-{sub:04d}"
        domain = DomainRef(key=SUBBLOCK, value=sb, path=[(BLOCK, block), (SUBBLOCK, sb)])
        pods = [
            PodPlacement(index=k, node=node_name(sub * NODES_PER_SUBBLOCK + k))
            for k in range(NODES_PER_SUBBLOCK)
        ]
        job = JobPlacement(
            name=f"{name}-workers-0", replicated_job="workers", index=0, domain=domain, pods=pods
        )
        outcomes.append(
            JobSetOutcome(
                namespace="bench", name=name, status="placed", accelerators=64, jobs=[job]
            )
        )
    plan = Plan(solver=SolverReport(name="bench", status="HEURISTIC"), jobsets=outcomes)
    return plan, [node_name(i) for i in range(nodes)]
