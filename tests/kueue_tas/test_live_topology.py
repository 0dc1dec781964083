"""The live loader in a cluster without Kueue (kmock's emulator, over HTTP): no Topology kind is
served, so the levels come from elsewhere. The cluster's Topology giving the levels, Topologies
that disagree and `--levels` winning are asked of the real API server and Kueue
(tests/cluster/test_live_snapshot.py), whose control plane always serves the kind."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from placer.model.snapshots.live import load_live_snapshot
from tests.kueue_tas.test_topology_object import BLOCK, kube_node
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


def test_no_kueue_in_the_cluster_gives_no_levels(emulator: tuple[Emulator, str]) -> None:
    emu, kubeconfig = emulator
    seed(emu, kube_node("n1", {BLOCK: "b1"}))
    assert load_live_snapshot(kubeconfig).levels == ()
