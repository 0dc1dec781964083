"""deploy/ renders and hangs together: every kustomization, one Namespace, versioned image,
probes on the ports the flags open, metrics Services, a PodDisruptionBudget per Deployment, a
writable /tmp under a read-only root, and the webhook's configuration matching its server.

Documents are gathered by following each kustomization's `resources:` (files and directories);
when `kubectl` is installed, `kubectl kustomize` must render the same objects.
"""

from __future__ import annotations

import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from placer.cli import build_parser
from placer.model.workload import JOBSET_NAME_LABEL
from plugins.webhook.admission import MANAGED_LABEL
from plugins.webhook.server import MUTATE_PATH

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
KUSTOMIZATIONS = sorted(p.parent.name for p in DEPLOY.glob("*/kustomization.yaml"))
COMPONENTS = ("controller", "scheduler", "webhook")
NAMESPACE = "placer-system"
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
IMAGE = f"ghcr.io/placer-dev/placer:{VERSION}"
CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding", "MutatingWebhookConfiguration"}

Doc = dict[str, Any]


def resolve(directory: Path) -> list[Doc]:
    """The documents a kustomization lists, bases followed, in order."""
    kustomization = yaml.safe_load((directory / "kustomization.yaml").read_text())
    assert kustomization["kind"] == "Kustomization"
    assert set(kustomization) <= {"apiVersion", "kind", "resources"}, "only plain resources"
    docs: list[Doc] = []
    for entry in kustomization["resources"]:
        path = (directory / entry).resolve()
        if path.is_dir():
            docs.extend(resolve(path))
        else:
            docs.extend(d for d in yaml.safe_load_all(path.read_text()) if d)
    return docs


def by_key(docs: list[Doc]) -> dict[tuple[str, str], Doc]:
    return {(d["kind"], d["metadata"]["name"]): d for d in docs}


def rendered(name: str) -> dict[tuple[str, str], Doc]:
    return by_key(resolve(DEPLOY / name))


def test_every_component_has_a_kustomization() -> None:
    assert set(COMPONENTS) <= set(KUSTOMIZATIONS)
    assert "monitoring" in KUSTOMIZATIONS  # the ServiceMonitor example, applied on its own
    for name in COMPONENTS:
        assert not any(d["kind"] == "ServiceMonitor" for d in resolve(DEPLOY / name)), name


@pytest.mark.parametrize("name", KUSTOMIZATIONS)
def test_kubectl_kustomize_renders_the_same_objects(name: str) -> None:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl not installed: the structural checks below still ran")
    out = subprocess.run(
        [kubectl, "kustomize", str(DEPLOY / name)], check=True, capture_output=True, text=True
    ).stdout
    docs = [d for d in yaml.safe_load_all(out) if d]
    assert sorted(by_key(docs)) == sorted(by_key(resolve(DEPLOY / name)))
    # Same content too (kustomize only reorders keys and documents).
    assert by_key(docs) == by_key(resolve(DEPLOY / name))


def test_one_namespace_shared_by_every_component() -> None:
    namespaces = []
    for name in COMPONENTS:
        docs = resolve(DEPLOY / name)
        [ns] = [d for d in docs if d["kind"] == "Namespace"]
        namespaces.append(ns)
        for d in docs:
            if d["kind"] not in CLUSTER_SCOPED:
                assert d["metadata"]["namespace"] == NAMESPACE, (name, d["metadata"]["name"])
    assert all(ns == namespaces[0] for ns in namespaces)  # identical: applying all is safe
    assert namespaces[0]["metadata"]["name"] == NAMESPACE
    # Only the base declares it.
    declaring = [
        p.relative_to(DEPLOY).as_posix()
        for p in DEPLOY.rglob("*.yaml")
        if any((d or {}).get("kind") == "Namespace" for d in yaml.safe_load_all(p.read_text()))
    ]
    assert declaring == ["base/namespace.yaml"]


def container_of(deployment: Doc) -> Doc:
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    return dict(container)


def parsed_args(container: Doc) -> Any:
    command = container.get("command")
    argv = list(container.get("args") or [])
    if command is not None:
        assert command[0] == "placer", command
        argv = [*command[1:], *argv]
    return build_parser().parse_args(argv)


def serving_ports(args: Any) -> dict[str, int]:
    """What the command listens on, by the container port name the manifests use for it."""
    if args.command == "controller":
        return {"metrics": args.metrics_port}
    if args.command == "extender":
        return {"http": args.port}
    if args.command == "webhook":
        return {"https": args.port, "metrics": args.metrics_port}
    raise AssertionError(args.command)


def deployments() -> list[Any]:
    result: list[Any] = []
    for name in COMPONENTS:
        docs = rendered(name)
        result.extend(
            pytest.param(name, d, docs, id=d["metadata"]["name"])
            for (kind, _), d in docs.items()
            if kind == "Deployment"
        )
    return result


@pytest.mark.parametrize(
    ("component", "deployment", "docs"),
    deployments(),
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_deployment_runs_the_versioned_image_with_probes_on_its_ports(
    component: str, deployment: Doc, docs: dict[tuple[str, str], Doc]
) -> None:
    container = container_of(deployment)
    assert container["image"] == IMAGE
    assert container["imagePullPolicy"] == "IfNotPresent"
    args = parsed_args(container)
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == serving_ports(args)
    for probe in ("readinessProbe", "livenessProbe"):
        port = container[probe]["httpGet"]["port"]
        assert port in ports, (probe, port)
    if args.command == "webhook":
        assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
        assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    pod = deployment["spec"]["template"]["spec"]
    security = {**(pod.get("securityContext") or {}), **container["securityContext"]}
    assert security["runAsNonRoot"] is True and security["runAsUser"] == 65532
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"]["drop"] == ["ALL"]
    assert security["seccompProfile"]["type"] == "RuntimeDefault"
    if security.get("readOnlyRootFilesystem"):
        [tmp] = [m for m in container["volumeMounts"] if m["mountPath"] == "/tmp"]
        [volume] = [v for v in pod["volumes"] if v["name"] == tmp["name"]]
        assert "emptyDir" in volume
    assert ("ServiceAccount", pod["serviceAccountName"]) in docs


@pytest.mark.parametrize(
    ("component", "deployment", "docs"),
    deployments(),
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_each_deployment_has_a_disruption_budget_and_services_reach_its_ports(
    component: str, deployment: Doc, docs: dict[tuple[str, str], Doc]
) -> None:
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert deployment["spec"]["selector"]["matchLabels"].items() <= labels.items()
    [pdb] = [
        d
        for (kind, _), d in docs.items()
        if kind == "PodDisruptionBudget"
        and d["spec"]["selector"]["matchLabels"].items() <= labels.items()
    ]
    assert 0 < pdb["spec"]["minAvailable"] < deployment["spec"]["replicas"]
    container = container_of(deployment)
    ports = serving_ports(parsed_args(container))
    services = [
        d
        for (kind, _), d in docs.items()
        if kind == "Service" and d["spec"]["selector"].items() <= labels.items()
    ]
    targets = {p["targetPort"] for s in services for p in s["spec"]["ports"]}
    assert targets == set(ports)
    if "metrics" in ports:  # a metrics Service the ServiceMonitor example selects
        monitor = by_key(resolve(DEPLOY / "monitoring"))[("ServiceMonitor", "placer")]
        wanted = monitor["spec"]["selector"]["matchLabels"]
        [metrics] = [s for s in services if wanted.items() <= s["metadata"]["labels"].items()]
        assert [p["name"] for p in metrics["spec"]["ports"]] == ["metrics"]
        assert monitor["spec"]["endpoints"][0]["port"] == "metrics"


def test_webhook_configuration_matches_its_server_and_certificate() -> None:
    docs = rendered("webhook")
    config = docs[("MutatingWebhookConfiguration", "placer-webhook")]
    [hook] = config["webhooks"]
    assert hook["admissionReviewVersions"] == ["v1"]
    assert hook["sideEffects"] == "None"
    assert hook["failurePolicy"] == "Fail"
    assert hook["reinvocationPolicy"] == "IfNeeded"
    assert 1 <= hook["timeoutSeconds"] <= 10
    assert hook["rules"] == [
        {
            "operations": ["CREATE"],
            "apiGroups": [""],
            "apiVersions": ["v1"],
            "resources": ["pods"],
            "scope": "Namespaced",
        }
    ]
    assert hook["namespaceSelector"] == {"matchLabels": {MANAGED_LABEL: "true"}}
    assert {"key": JOBSET_NAME_LABEL, "operator": "Exists"} in hook["objectSelector"][
        "matchExpressions"
    ]
    assert {"key": MANAGED_LABEL, "operator": "NotIn", "values": ["false"]} in hook[
        "objectSelector"
    ]["matchExpressions"]
    # The API server reaches the HTTPS port through the Service, on the path the server serves.
    ref = hook["clientConfig"]["service"]
    assert ref["path"] == MUTATE_PATH
    service = docs[("Service", ref["name"])]
    assert service["metadata"]["namespace"] == ref["namespace"]
    [port] = [p for p in service["spec"]["ports"] if p["port"] == ref["port"]]
    container = container_of(docs[("Deployment", "placer-webhook")])
    args = parsed_args(container)
    named = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert named[port["targetPort"]] == args.port
    # cert-manager: the injected CA is the webhook Certificate's, issued for the Service's name,
    # into the Secret the pods mount where --tls-cert-file points.
    namespace, name = config["metadata"]["annotations"]["cert-manager.io/inject-ca-from"].split("/")
    certificate = docs[("Certificate", name)]
    assert certificate["metadata"]["namespace"] == namespace
    assert f"{ref['name']}.{ref['namespace']}.svc" in certificate["spec"]["dnsNames"]
    issuer = docs[("Issuer", certificate["spec"]["issuerRef"]["name"])]
    ca_certificate = next(
        d
        for (kind, _), d in docs.items()
        if kind == "Certificate" and d["spec"]["secretName"] == issuer["spec"]["ca"]["secretName"]
    )
    assert ca_certificate["spec"]["isCA"] is True
    pod = docs[("Deployment", "placer-webhook")]["spec"]["template"]["spec"]
    [volume] = [v for v in pod["volumes"] if "secret" in v]
    assert volume["secret"]["secretName"] == certificate["spec"]["secretName"]
    [mount] = [m for m in container["volumeMounts"] if m["name"] == volume["name"]]
    assert Path(args.tls_cert_file) == Path(mount["mountPath"]) / "tls.crt"
    assert Path(args.tls_private_key_file) == Path(mount["mountPath"]) / "tls.key"


def test_webhook_runs_without_api_access() -> None:
    docs = rendered("webhook")
    account = docs[("ServiceAccount", "placer-webhook")]
    assert account["automountServiceAccountToken"] is False
    pod = docs[("Deployment", "placer-webhook")]["spec"]["template"]["spec"]
    assert pod["automountServiceAccountToken"] is False
    assert not any(kind.endswith(("Role", "RoleBinding")) for kind, _ in docs)
