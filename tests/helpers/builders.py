"""Kubernetes objects as a snapshot file or an API server holds them (plain mappings)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["READY", "node_manifest"]

HOSTNAME = "kubernetes.io/hostname"
READY: tuple[Mapping[str, str], ...] = ({"type": "Ready", "status": "True"},)
"""The conditions of a node that is Ready."""


def node_manifest(
    name: str,
    *,
    labels: Mapping[str, str] | None = None,
    allocatable: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, str]] = (),
    conditions: Sequence[Mapping[str, str]] | None = READY,
    unschedulable: bool = False,
) -> dict[str, Any]:
    """A Node: `labels` (its hostname label unless they name one), `allocatable` (default 8 CPUs,
    110 pods), `taints`, `conditions` (default Ready; None for none) and `unschedulable` (left out
    when False, as the API server does)."""
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = [dict(t) for t in taints]
    if unschedulable:
        spec["unschedulable"] = True
    status: dict[str, Any] = {"allocatable": dict(allocatable or {"cpu": "8", "pods": "110"})}
    if conditions is not None:
        status["conditions"] = [dict(c) for c in conditions]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {HOSTNAME: name, **(labels or {})}},
        "spec": spec,
        "status": status,
    }
