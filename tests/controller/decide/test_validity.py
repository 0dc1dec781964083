"""Judging a record against the cluster: what a JobSet's own pods give back when it is judged."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from placer.controller.decide.observe.survey import PodEntry
from placer.controller.decide.observe.validity import own_usage
from placer.model.kube.pods import PodRef

TPU = "google.com/tpu"


def _pod(name: str, node: str, phase: str, chips: int, port: int | None = None) -> PodEntry:
    chip_count = {TPU: str(chips)}
    container: dict[str, Any] = {
        "name": "c",
        "resources": {"requests": chip_count, "limits": chip_count},
    }
    if port is not None:
        container["ports"] = [{"containerPort": port, "hostPort": port}]
    obj = {
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"nodeName": node, "containers": [container]},
        "status": {"phase": phase},
    }
    return PodEntry(pod=obj, ref=PodRef("ns", "a", "w", 0, int(name[-1])))


def test_only_a_jobsets_live_pods_give_their_room_back() -> None:
    """A running pod's chips, slot and host port count as free when its own record is judged;
    a finished pod holds nothing (the snapshot already counts its room as free), and a pod not
    bound to a node holds nothing either."""
    pods = [
        _pod("p-0", "n1", "Running", 4, port=8471),
        _pod("p-1", "n2", "Succeeded", 4),
        _pod("p-2", "", "Pending", 4),
    ]
    use = own_usage(pods)
    assert set(use) == {"n1"}
    assert use["n1"].requests[TPU] == Decimal(4) and use["n1"].requests["pods"] == Decimal(1)
    assert use["n1"].ports == frozenset({(8471, "TCP")})
