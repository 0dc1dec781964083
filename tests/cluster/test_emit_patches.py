"""`placer plan --emit`'s child Job patches, applied as the README says, on the real control plane.

The README's way without the controller: create the JobSet suspended, patch each child Job with
the file `--emit` wrote, resume. The real API server validates each patch (a node field
requirement naming two nodes was refused here), JobSet resumes the Jobs and kube-scheduler binds
their pods: every pod must land where the plan put it. Nothing of placer runs in the cluster.
"""

from __future__ import annotations

import copy
import io
import json
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client as k8s

from placer.cli import main as placer_main
from tests.cluster.kube import name_of
from tests.cluster.processes import wait_until
from tests.cluster.scenario import REPO, Scenario
from tests.cluster.test_gate_binding import POOL, multislice

EXCLUSIVE = "alpha.jobset.sigs.k8s.io/exclusive-topology"
STRATEGIC = "application/strategic-merge-patch+json"


def _suspended(name: str, slices: int, namespace: str, *, exclusive: bool) -> dict[str, Any]:
    manifest = copy.deepcopy(multislice(name, slices))
    manifest["metadata"]["namespace"] = namespace
    manifest["spec"]["suspend"] = True
    if not exclusive:
        del manifest["metadata"]["annotations"][EXCLUSIVE]
    return manifest


def _plan_and_emit(tmp: Path, manifests: list[dict[str, Any]]) -> dict[str, Any]:
    jobsets = tmp / "jobsets.yaml"
    jobsets.write_text(yaml.safe_dump_all(manifests))
    emitted = tmp / "emit"
    cluster = REPO / "examples/clusters/tpu-v5e-v6e.yaml"
    argv = ["plan", "--cluster", str(cluster), str(jobsets), "--emit", str(emitted), "-o", "json"]
    printed = io.StringIO()
    with redirect_stdout(printed):
        assert placer_main(argv) == 0
    return {"plan": json.loads(printed.getvalue()), "dir": emitted}


def _planned_nodes(plan: dict[str, Any]) -> dict[str, set[str]]:
    """Child Job name -> the nodes the plan gave its pods."""
    return {
        job["name"]: {pod["node"] for pod in job["pods"]}
        for outcome in plan["jobsets"]
        for job in outcome["jobs"]
    }


def test_emitted_patches_are_accepted_and_pods_land_where_the_plan_put_them(
    scenario: Scenario, tmp_path: Path
) -> None:
    scenario.use_example_cluster("tpu-v5e-v6e.yaml")
    ns = scenario.namespace
    manifests = [
        _suspended("slices", 2, ns, exclusive=True),  # pinned by matchExpressions
        _suspended("loose", 1, ns, exclusive=False),  # pinned by node name, one term per node
    ]
    emitted = _plan_and_emit(tmp_path, manifests)
    planned = _planned_nodes(emitted["plan"])
    assert sorted(planned) == ["loose-workers-0", "slices-workers-0", "slices-workers-1"]
    assert len(planned["loose-workers-0"]) == 2, "the loose Job must span two nodes"
    for manifest in manifests:
        scenario.create_jobset(manifest)

    batch = k8s.BatchV1Api(scenario.core.api_client)
    patches = sorted((emitted["dir"] / "jobs" / ns).glob("*.yaml"))
    assert [p.stem for p in patches] == sorted(planned)
    for path in patches:
        _wait_for_job(batch, path.stem, ns)
        batch.patch_namespaced_job(
            path.stem, ns, yaml.safe_load(path.read_text()), _content_type=STRATEGIC
        )
    loose = scenario.core.api_client.sanitize_for_serialization(
        batch.read_namespaced_job("loose-workers-0", ns)
    )
    affinity = loose["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
    names = [
        field["values"]
        for term in affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        for field in term.get("matchFields", [])
    ]
    assert sorted(names) == [[n] for n in sorted(planned["loose-workers-0"])]

    for manifest in manifests:
        scenario.patch_jobset(manifest["metadata"]["name"], {"spec": {"suspend": False}})
    slices = scenario.wait_pods_bound("slices", count=4)
    loose_pods = scenario.wait_pods_bound("loose", count=2)
    labels = scenario.node_labels()
    for pod in [*slices, *loose_pods]:
        job = pod.metadata.labels["batch.kubernetes.io/job-name"]
        if job.startswith("slices-"):
            planned_pools = {labels[n][POOL] for n in planned[job]}
            assert {labels[pod.spec.node_name][POOL]} == planned_pools, job
        else:
            assert pod.spec.node_name in planned[job], job


def _wait_for_job(batch: k8s.BatchV1Api, name: str, namespace: str) -> None:
    def exists() -> bool:
        return any(name_of(j) == name for j in batch.list_namespaced_job(namespace).items)

    wait_until(exists, timeout_s=60, what=f"JobSet to create Job {name}")
