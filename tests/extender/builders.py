"""Inputs for the extender tests: a small two-level cluster, a plan over it, pods, wire payloads.

The cluster has blocks b1, b2, b3 and, inside each, subblocks s1 and s2 (subblock values repeat
across blocks, so a domain is the whole path). The plan:

- ml/train: child Job train-w-0 holds (b1, s1) = nodes n1, n2; its pods 0 and 1 are planned on
  n1 (both). n2 is in the domain only by its labels.
- ml/other: child Job other-w-0 holds (b2, s1) = n5, n6; pods 0 -> n5, 1 -> n6.
- ml/late: unschedulable (holds nothing).
- ml/shared: child Job shared-d-0 without a domain; pod 0 planned on n9.
Free nodes: n3, n4 (b1, s2), n7, n8 (b2, s2), n9, n10 (b3, s1).
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from placer.model.plan import (
    DomainRef,
    JobPlacement,
    JobSetOutcome,
    Plan,
    PodPlacement,
    SolverReport,
)

__all__ = [
    "BLOCK",
    "NODES",
    "SUBBLOCK",
    "daemon_pod",
    "jobset_pod",
    "node_object",
    "plain_pod",
    "post",
    "request",
    "sample_plan",
    "serving_url",
    "write_inputs",
]

BLOCK = "cloud.google.com/gce-topology-block"
SUBBLOCK = "cloud.google.com/gce-topology-subblock"
HOSTNAME = "kubernetes.io/hostname"

NODES: dict[str, tuple[str, str]] = {
    "n1": ("b1", "s1"),
    "n2": ("b1", "s1"),
    "n3": ("b1", "s2"),
    "n4": ("b1", "s2"),
    "n5": ("b2", "s1"),
    "n6": ("b2", "s1"),
    "n7": ("b2", "s2"),
    "n8": ("b2", "s2"),
    "n9": ("b3", "s1"),
    "n10": ("b3", "s1"),
}


def labels_of(name: str) -> dict[str, str]:
    block, sub = NODES[name]
    return {BLOCK: block, SUBBLOCK: sub, HOSTNAME: name, "kubernetes.io/os": "linux"}


def node_object(
    name: str, labels: Mapping[str, str] | None = None, *, note: str = "ok"
) -> dict[str, Any]:
    """A Node in the field order Go's encoder writes (metadata first, name first), with the
    awkward bits real nodes have: JSON inside annotations, nested arrays, images."""
    return {
        "metadata": {
            "name": name,
            "uid": f"uid-{name}",
            "resourceVersion": "42",
            "labels": dict(labels if labels is not None else labels_of(name)),
            "annotations": {
                "csi.volume.kubernetes.io/nodeid": json.dumps({"pd.csi": f"zones/z/{name}"}),
                "note": note,
            },
        },
        "spec": {"taints": [{"key": "google.com/tpu", "value": "present", "effect": "NoSchedule"}]},
        "status": {
            "allocatable": {"cpu": "200", "google.com/tpu": "4", "pods": "110"},
            "capacity": {"cpu": "208", "google.com/tpu": "4", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
            "images": [{"names": [f"repo/img-{k}:v{k}"], "sizeBytes": 1000 + k} for k in range(3)],
        },
    }


def _domain(block: str, sub: str) -> DomainRef:
    return DomainRef(key=SUBBLOCK, value=sub, path=[(BLOCK, block), (SUBBLOCK, sub)])


def sample_plan() -> Plan:
    def job(name: str, rjob: str, domain: DomainRef | None, nodes: list[str]) -> JobPlacement:
        pods = [PodPlacement(index=i, node=n) for i, n in enumerate(nodes)]
        return JobPlacement(name=name, replicated_job=rjob, index=0, domain=domain, pods=pods)

    return Plan(
        solver=SolverReport(name="hand", status="HEURISTIC"),
        jobsets=[
            JobSetOutcome(
                namespace="ml",
                name="train",
                status="placed",
                accelerators=8,
                jobs=[job("train-w-0", "w", _domain("b1", "s1"), ["n1", "n1"])],
            ),
            JobSetOutcome(
                namespace="ml",
                name="other",
                status="placed",
                accelerators=8,
                jobs=[job("other-w-0", "w", _domain("b2", "s1"), ["n5", "n6"])],
            ),
            JobSetOutcome(namespace="ml", name="late", status="unschedulable", reason="no room"),
            JobSetOutcome(
                namespace="ml",
                name="shared",
                status="placed",
                jobs=[job("shared-d-0", "d", None, ["n9"])],
            ),
        ],
    )


def write_inputs(tmp: Path) -> tuple[Path, Path]:
    """(plan.json, cluster.json): the plan document and a kubectl NodeList of the cluster."""
    plan_path = tmp / "plan.json"
    plan_path.write_text(json.dumps(sample_plan().model_dump(mode="json")), encoding="utf-8")
    cluster_path = tmp / "cluster.json"
    items = [{"apiVersion": "v1", "kind": "Node", **node_object(n)} for n in NODES]
    cluster_path.write_text(
        json.dumps({"apiVersion": "v1", "kind": "List", "items": items}), encoding="utf-8"
    )
    return plan_path, cluster_path


def jobset_pod(
    jobset: str,
    rjob: str,
    job_index: int,
    completion_index: int,
    *,
    namespace: str = "ml",
) -> dict[str, Any]:
    """A pod as JobSet and the Job controller label it."""
    job = f"{jobset}-{rjob}-{job_index}"
    labels = {
        "jobset.sigs.k8s.io/jobset-name": jobset,
        "jobset.sigs.k8s.io/replicatedjob-name": rjob,
        "jobset.sigs.k8s.io/job-index": str(job_index),
        "batch.kubernetes.io/job-completion-index": str(completion_index),
        "batch.kubernetes.io/job-name": job,
    }
    return {
        "metadata": {
            "name": f"{job}-{completion_index}-abcde",
            "namespace": namespace,
            "uid": f"uid-{job}-{completion_index}",
            "labels": labels,
            "annotations": dict(labels),
        },
        "spec": {"containers": [{"name": "main", "image": "trainer"}]},
    }


def plain_pod(name: str = "web-1", namespace: str = "apps") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }


def daemon_pod() -> dict[str, Any]:
    pod = plain_pod("tpu-device-plugin-x1", "kube-system")
    pod["metadata"]["ownerReferences"] = [{"kind": "DaemonSet", "name": "tpu-device-plugin"}]
    return pod


def request(url: str, method: str, path: str, body: bytes | None = None) -> tuple[int, bytes]:
    """One HTTP exchange with the extender (a fresh connection each time)."""
    host_port = url.removeprefix("http://")
    conn = http.client.HTTPConnection(host_port, timeout=10)
    try:
        headers = {"Content-Type": "application/json"} if body is not None else {}
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def post(url: str, verb: str, payload: object) -> tuple[int, Any]:
    """POST a JSON payload (or raw bytes) to `<url>/<verb>`; (status, decoded answer)."""
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    status, raw = request(url, "POST", f"/{verb}", body)
    return status, json.loads(raw)


def serving_url(stderr: IO[str]) -> str:
    """The URL `placer extender` announces on stderr, past the INFO lines it logs first."""
    while line := stderr.readline():
        if line.startswith("placer extender: serving "):
            return line.split()[3]
    raise AssertionError("placer extender exited without serving")
