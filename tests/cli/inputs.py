"""Input files for CLI tests: a kubectl-style node list and JobSet manifests, written to tmp_path.

The cluster is written as `kubectl get nodes -o json` output (a v1 List), the format every snapshot
loader must read, so these tests do not depend on placer's own compact description.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from tests.helpers.builders import node_manifest

__all__ = ["NODEPOOL", "jobset_manifest", "write_cluster", "write_jobsets"]

NODEPOOL = "cloud.google.com/gke-nodepool"
TPU_TAINT = {"key": "google.com/tpu", "value": "present", "effect": "NoSchedule"}


def _node(name: str, pool: str) -> dict[str, Any]:
    """A TPU v5e 2x4 host of node pool `pool`: 4 chips, tainted for TPUs."""
    return node_manifest(
        name,
        labels={
            NODEPOOL: pool,
            "cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice",
            "cloud.google.com/gke-tpu-topology": "2x4",
        },
        allocatable={"cpu": "24", "memory": "180Gi", "pods": "110", "google.com/tpu": "4"},
        taints=[TPU_TAINT],
    )


def write_cluster(tmp_path: Path, pools: int = 4, hosts: int = 2) -> Path:
    """`pools` TPU v5e 2x4 node pools of `hosts` nodes (4 chips each), tainted for TPUs."""
    items = [
        _node(f"tpu-pool-{p}-host-{h}", f"tpu-pool-{p}") for p in range(pools) for h in range(hosts)
    ]
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    return path


def jobset_manifest(
    name: str,
    *,
    namespace: str = "default",
    replicas: Any = 2,
    node_selector_strategy: bool = False,
) -> dict[str, Any]:
    """A TPU multislice JobSet: `replicas` slices of 2 hosts x 4 chips, exclusive per node pool."""
    annotations = {"alpha.jobset.sigs.k8s.io/exclusive-topology": NODEPOOL}
    if node_selector_strategy:
        annotations["alpha.jobset.sigs.k8s.io/node-selector"] = "true"
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": name, "namespace": namespace, "annotations": annotations},
        "spec": {
            "replicatedJobs": [
                {
                    "name": "workers",
                    "replicas": replicas,
                    "template": {
                        "spec": {
                            "parallelism": 2,
                            "completions": 2,
                            "template": {
                                "spec": {
                                    "nodeSelector": {"cloud.google.com/gke-tpu-topology": "2x4"},
                                    "containers": [
                                        {
                                            "name": "jax",
                                            "image": "python:3.11",
                                            "resources": {"limits": {"google.com/tpu": 4}},
                                        }
                                    ],
                                }
                            },
                        }
                    },
                }
            ]
        },
    }


def write_jobsets(tmp_path: Path, *manifests: dict[str, Any], name: str = "jobsets.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(manifests, sort_keys=False))
    return path
