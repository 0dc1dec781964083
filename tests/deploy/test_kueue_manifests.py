"""deploy/kueue: placer's AdmissionCheck and a ClusterQueue using it, rendered by `kubectl
kustomize` (required: this test fails without kubectl). That its rights are exactly what
`placer controller --kueue-admission-check` uses is decided by the real API server
(tests/cluster/test_shipped_rights.py)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

from placer.controller.decide.observe.kueue import CONTROLLER_NAME

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"

Doc = dict[str, Any]


def kustomize(name: str) -> list[Doc]:
    kubectl = shutil.which("kubectl")
    assert kubectl is not None, "kubectl is needed to render deploy/ (Debian: kubernetes-client)"
    out = subprocess.run(
        [kubectl, "kustomize", str(DEPLOY / name)], check=True, capture_output=True, text=True
    ).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def by_kind(docs: list[Doc]) -> dict[str, list[Doc]]:
    result: dict[str, list[Doc]] = {}
    for d in docs:
        result.setdefault(d["kind"], []).append(d)
    return result


def test_the_check_and_a_queue_using_it_without_kueue_tas() -> None:
    docs = by_kind(kustomize("kueue"))
    [check] = docs["AdmissionCheck"]
    assert check["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    assert check["spec"] == {"controllerName": CONTROLLER_NAME}  # no parameters: placer has none
    [queue] = docs["ClusterQueue"]
    rules = queue["spec"]["admissionChecksStrategy"]["admissionChecks"]
    assert [r["name"] for r in rules] == [check["metadata"]["name"]]
    flavors = {f["name"] for g in queue["spec"]["resourceGroups"] for f in g["flavors"]}
    defined = {f["metadata"]["name"]: f for f in docs["ResourceFlavor"]}
    assert flavors <= set(defined)
    assert not any((defined[f].get("spec") or {}).get("topologyName") for f in flavors)
