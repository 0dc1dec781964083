"""The live loader reads the cluster's Kueue Topology as the levels (over HTTP, kmock emulator)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from placer.model.snapshots.live import load_live_snapshot
from tests.kueue_tas.test_topology_object import BLOCK, HOST, RACK, kube_node, topology
from tests.model.snapshots.test_live import Emulator, write_kubeconfig

TOPOLOGIES = "kueue.x-k8s.io/v1beta2/topologies"


@pytest.fixture()
def emulator(tmp_path: Path) -> Iterator[tuple[Emulator, str]]:
    with Emulator() as emu:
        yield emu, write_kubeconfig(tmp_path / "kubeconfig", emu.url)


PENDING = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p", "namespace": "default"},
    "spec": {"containers": [{"name": "c"}]},
    "status": {"phase": "Pending"},
}


def seed(emu: Emulator, node: dict[str, Any], *topologies: dict[str, Any]) -> None:
    """A node, a pending pod (so the emulator knows pods) and the Topologies."""
    emu.objects["v1/nodes", None, node["metadata"]["name"]] = node
    emu.objects["v1/pods", "default", "p"] = PENDING
    for t in topologies:
        emu.objects[TOPOLOGIES, None, t["metadata"]["name"]] = t


def test_the_clusters_topology_gives_the_levels(emulator: tuple[Emulator, str]) -> None:
    emu, kubeconfig = emulator
    seed(emu, kube_node("n1", {BLOCK: "b1", RACK: "r1"}), topology())
    assert load_live_snapshot(kubeconfig).levels == (BLOCK, RACK, HOST)
    # --levels wins over the cluster's Topology
    assert load_live_snapshot(kubeconfig, levels=[RACK]).levels == (RACK,)


def test_topologies_that_disagree_give_no_levels(
    emulator: tuple[Emulator, str], caplog: pytest.LogCaptureFixture
) -> None:
    emu, kubeconfig = emulator
    other = topology(levels=[{"nodeLabel": RACK}])
    other["metadata"]["name"] = "racks"
    seed(emu, kube_node("n1", {BLOCK: "b1", RACK: "r1"}), topology(), other)
    assert load_live_snapshot(kubeconfig).levels == ()
    assert "Kueue Topologies default, racks differ" in caplog.text


def test_no_kueue_in_the_cluster_gives_no_levels(emulator: tuple[Emulator, str]) -> None:
    emu, kubeconfig = emulator
    seed(emu, kube_node("n1", {BLOCK: "b1"}))
    assert load_live_snapshot(kubeconfig).levels == ()
