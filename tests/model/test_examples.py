"""The bundled examples load and match their comments; their kubectl rendering is current."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from placer.model.cluster import ClusterSnapshot
from placer.model.jobset.parse import load_jobsets
from placer.model.snapshots.load import load_snapshot, snapshot_to_kubectl_list
from placer.model.topology import Topology

ROOT = Path(__file__).resolve().parents[2]
CLUSTERS = ROOT / "examples" / "clusters"
JOBSETS = ROOT / "examples" / "jobsets"
POOL = "cloud.google.com/gke-nodepool"


def whole_free_domains(snap: ClusterSnapshot, key: str, selector: dict[str, str]) -> list[str]:
    """Domains of `key` whose nodes all match `selector`, are usable, unheld and fully free."""
    by = snap.by_name()
    out = []
    for d in Topology(snap, snap.levels).domains(key):
        nodes = [by[n] for n in d.nodes]
        if all(
            n.usable
            and not n.jobsets
            and all(n.labels.get(k) == v for k, v in selector.items())
            and all(n.free.get(r, 0) == v for r, v in n.allocatable.items() if "/" in r)
            for n in nodes
        ):
            out.append(d.value)
    return out


@pytest.mark.parametrize(
    "name", ["tpu-v5e-v6e.yaml", "h100-h200.yaml", "gb200-nvl72.yaml", "tpu-kubectl.json"]
)
def test_clusters_load(name: str) -> None:
    snap = load_snapshot([CLUSTERS / name])
    assert snap.nodes
    assert any(not n.usable for n in snap.nodes), "every example has some broken capacity"
    assert any(n.jobsets for n in snap.nodes), "every example has a running JobSet"


def test_tpu_cluster_fits_the_canonical_and_v6e_examples() -> None:
    snap = load_snapshot([CLUSTERS / "tpu-v5e-v6e.yaml"])
    pools = {n.labels[POOL] for n in snap.nodes}
    assert len(pools) == 13
    v5e = whole_free_domains(snap, POOL, {"cloud.google.com/gke-tpu-topology": "2x4"})
    v6e = whole_free_domains(snap, POOL, {"cloud.google.com/gke-tpu-topology": "4x4"})
    assert v5e == [f"v5e-2x4-pool-{i}" for i in range(3, 8)]
    assert v6e == [f"v6e-4x4-pool-{i}" for i in range(1, 4)]
    [multislice] = load_jobsets([JOBSETS / "tpu-v5e-multislice.yaml"])
    [v6e_js] = load_jobsets([JOBSETS / "tpu-multislice_v6e-jax-workload.yaml"])
    assert multislice.replicated_jobs[0].replicas <= len(v5e)
    assert v6e_js.replicated_jobs[0].replicas <= len(v6e)


def test_gpu_clusters_have_hierarchies() -> None:
    h = load_snapshot([CLUSTERS / "h100-h200.yaml"])
    assert h.levels[:2] == (
        "cloud.google.com/gce-topology-block",
        "cloud.google.com/gce-topology-subblock",
    )
    assert {n.allocatable["nvidia.com/gpu"] for n in h.nodes} == {8}
    sub = "cloud.google.com/gce-topology-subblock"
    [llm] = load_jobsets([JOBSETS / "h100-training.yaml"], priorities=h.priorities)
    free = whole_free_domains(h, sub, {"cloud.google.com/gke-accelerator": "nvidia-h100-mega-80gb"})
    assert llm.replicated_jobs[0].exclusive_key == sub
    assert llm.priority == 1000
    assert len(free) == 6 >= llm.replicated_jobs[0].replicas

    g = load_snapshot([CLUSTERS / "gb200-nvl72.yaml"])
    clique = "nvidia.com/gpu.clique"
    domains = Topology(g, g.levels).domains(clique)
    assert [len(d.nodes) for d in domains] == [18] * 6
    usable = [sum(g.node(n).usable for n in d.nodes) for d in domains]
    assert usable == [18, 15, 18, 18, 17, 17]
    [moe] = load_jobsets([JOBSETS / "gb200-training.yaml"])
    rj = moe.replicated_jobs[0]
    assert (rj.exclusive_key, rj.pods_per_job, dict(rj.pod.requests)["nvidia.com/gpu"]) == (
        clique,
        16,
        Decimal(4),
    )


def test_queue_has_several_priorities() -> None:
    snap = load_snapshot([CLUSTERS / "tpu-v5e-v6e.yaml"])
    queue = load_jobsets([JOBSETS / "queue"], priorities=snap.priorities)
    assert len(queue) >= 4
    assert len({j.priority for j in queue}) >= 3
    assert all(j.creation_timestamp is not None for j in queue)
    assert [j.order for j in queue] == list(range(len(queue)))


def test_all_example_jobsets_parse() -> None:
    assert len(load_jobsets([JOBSETS])) >= 8


def test_kubectl_rendering_is_current_and_equivalent() -> None:
    compact = load_snapshot([CLUSTERS / "tpu-v5e-v6e.yaml"])
    checked_in = (CLUSTERS / "tpu-kubectl.json").read_text()
    rendered = json.dumps(snapshot_to_kubectl_list(compact), indent=2, sort_keys=True) + "\n"
    assert checked_in == rendered, "run: python examples/clusters/render_kubectl.py"
    kubectl = load_snapshot([CLUSTERS / "tpu-kubectl.json"])
    assert kubectl.nodes == compact.nodes
    assert kubectl.priority_classes == compact.priority_classes
