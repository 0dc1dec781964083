"""deploy/kueue: placer's AdmissionCheck, a ClusterQueue using it, and exactly the rights
`placer controller --kueue-admission-check` uses, rendered by `kubectl kustomize` (required:
this test fails without kubectl) and checked by running the controller over HTTP with those
rights as RBAC decides them."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

from placer.controller.act.cache import KUEUE_KINDS
from placer.controller.act.kube_adapter import KubeAdapter
from placer.controller.decide.kueue.workloads import CONTROLLER_NAME
from placer.controller.reconcile import Clocks, Controller, ControllerConfig
from tests.controller.apiserver import ApiServer, Request
from tests.controller.builders import tpu_cluster
from tests.controller.test_kueue_admission import CHECK, check_of, submit
from tests.deploy.rbac import authorizer

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


def test_the_rights_are_exactly_what_the_controller_uses(tmp_path: Path) -> None:
    """Rendered with deploy/controller, the Kueue Roles let the controller list and watch
    Kueue's objects, read a Workload back on a 409 and patch its status; every Kueue right
    granted is one it used."""
    controller = kustomize("controller")
    kueue = kustomize("kueue")
    [deployment] = [d for d in controller if d["kind"] == "Deployment"]
    namespace = deployment["metadata"]["namespace"]
    account = deployment["spec"]["template"]["spec"]["serviceAccountName"]
    allowed = authorizer([*controller, *kueue], namespace, account)
    seen: list[Request] = []

    def authorize(request: Request) -> bool:
        seen.append(request)
        return allowed(request)

    cluster = tpu_cluster(blocks=3)
    cluster.create(
        "admissionchecks",
        {"metadata": {"name": CHECK}, "spec": {"controllerName": CONTROLLER_NAME}},
    )
    submit(cluster, "a", jobs=2)
    cluster.inject("patch", "workloads", 409)  # another check's controller wrote first
    cluster.inject("patch", "admissionchecks", 409)
    with ApiServer(cluster, authorize=authorize) as api:
        ctl = Controller(
            KubeAdapter(api.client(), request_timeout_s=5),
            ControllerConfig(solver="best-fit", window_s=0.0, kueue_admission_check=True),
            clocks=Clocks(sleep=lambda s: None),
        )
        report = ctl.run_once()
    assert report.executed is not None and report.executed.failed == []
    assert check_of(cluster, "a")["state"] == "Ready"
    [active] = cluster.get("admissionchecks", CHECK)["status"]["conditions"]
    assert (active["type"], active["status"]) == ("Active", "True")
    refused = [r for r in seen if not allowed(r)]
    assert refused == []
    kueue_resources = {*KUEUE_KINDS, "workloads/status", "admissionchecks/status"} - {"topologies"}
    used = {(r.resource, r.verb) for r in seen if r.resource in kueue_resources}
    used |= {(s.kind, "watch") for s in ctl.cache.streams if s.kind in kueue_resources}
    granted = {
        (resource, verb)
        for role in kueue
        if role["kind"] == "ClusterRole"
        for rule in role["rules"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    assert granted == used
