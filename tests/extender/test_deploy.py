"""deploy/scheduler/ stays consistent with the code: the extender stanza uses the verbs and field
names the server serves, the Deployment's command parses, probes and ports line up, and its RBAC
grants exactly what its flags need. That those rights suffice, and that the extender is not ready
without its ledger Role, the real API server decides (tests/cluster/test_shipped_rights.py)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import yaml

from placer.cli import build_parser
from placer.controller.decide.records.ledger import LEDGER_NAME
from plugins.extender.service import ServiceOptions

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy" / "scheduler"


def all_documents() -> list[dict[str, Any]]:
    with (DEPLOY / "extender.yaml").open(encoding="utf-8") as f:
        return [d for d in yaml.safe_load_all(f) if d]


def documents() -> dict[str, dict[str, Any]]:
    return {d["kind"]: d for d in all_documents()}


def expanded_command(deployment: dict[str, Any]) -> list[str]:
    """The container's command as the kubelet runs it: `$(VAR)` replaced from its env, where
    `fieldRef: metadata.namespace` is the Deployment's namespace."""
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    env = {}
    for var in container.get("env") or []:
        ref = (var.get("valueFrom") or {}).get("fieldRef") or {}
        if ref:
            assert ref["fieldPath"] == "metadata.namespace", var
            env[var["name"]] = deployment["metadata"]["namespace"]
        else:
            env[var["name"]] = var["value"]
    return [re.sub(r"\$\((\w+)\)", lambda m: env[m.group(1)], a) for a in container["command"]]


def controller_ledger_namespace() -> str:
    """Where the shipped controller keeps its ledger: its --ledger-namespace, else (the default)
    $POD_NAMESPACE, which its Deployment sets to its own namespace."""
    with (ROOT / "deploy" / "controller" / "deployment.yaml").open(encoding="utf-8") as f:
        deployment = yaml.safe_load(f)
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    args = build_parser().parse_args(container["args"])
    if args.ledger_namespace:
        return str(args.ledger_namespace)
    [ns] = [e for e in container["env"] if e["name"] == "POD_NAMESPACE"]
    assert ns["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace"
    return str(deployment["metadata"]["namespace"])


def extender_stanza() -> dict[str, Any]:
    with (DEPLOY / "kube-scheduler-config.yaml").open(encoding="utf-8") as f:
        config = yaml.safe_load(f)
    assert config["apiVersion"] == "kubescheduler.config.k8s.io/v1"
    assert config["kind"] == "KubeSchedulerConfiguration"
    [stanza] = config["extenders"]
    return dict(stanza)


def test_extender_stanza() -> None:
    stanza = extender_stanza()
    assert (stanza["filterVerb"], stanza["prioritizeVerb"]) == ("filter", "prioritize")
    assert stanza["nodeCacheCapable"] is True
    assert stanza["ignorable"] is False
    assert stanza["weight"] > 0
    assert {(r["name"], r["ignoredByScheduler"]) for r in stanza["managedResources"]} == {
        ("google.com/tpu", False),
        ("nvidia.com/gpu", False),
    }
    allowed = {
        "urlPrefix",
        "filterVerb",
        "prioritizeVerb",
        "bindVerb",
        "preemptVerb",
        "weight",
        "enableHTTPS",
        "tlsConfig",
        "httpTimeout",
        "nodeCacheCapable",
        "managedResources",
        "ignorable",
    }
    assert set(stanza) <= allowed


def test_service_deployment_and_config_line_up() -> None:
    docs = documents()
    url = urlparse(extender_stanza()["urlPrefix"])
    service = docs["Service"]
    assert url.hostname == (
        f"{service['metadata']['name']}.{service['metadata']['namespace']}.svc.cluster.local"
    )
    [port] = service["spec"]["ports"]
    assert url.port == port["port"]
    [container] = docs["Deployment"]["spec"]["template"]["spec"]["containers"]
    command = container["command"]
    assert command[:2] == ["placer", "extender"]
    args = build_parser().parse_args(command[1:])
    assert args.port == container["ports"][0]["containerPort"]
    assert args.plan is None  # watch mode in the cluster
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"


def granted(path: Path) -> set[tuple[str, str, str]]:
    with path.open(encoding="utf-8") as f:
        [role] = [d for d in yaml.safe_load_all(f) if d["kind"] == "ClusterRole"]
    return {
        (g, r, v)
        for rule in role["rules"]
        for g in rule["apiGroups"]
        for r in rule["resources"]
        for v in rule["verbs"]
    }


def test_rbac_is_exactly_what_the_flags_need() -> None:
    """The Deployment watches (no --plan) and does not bind: its role lists and watches JobSets
    and Nodes, nothing more; pods/binding comes only with the separate --bind manifest."""
    [container] = documents()["Deployment"]["spec"]["template"]["spec"]["containers"]
    args = build_parser().parse_args(container["command"][1:])
    assert args.plan is None and not args.bind
    assert granted(DEPLOY / "extender.yaml") == {
        ("jobset.x-k8s.io", "jobsets", "list"),
        ("jobset.x-k8s.io", "jobsets", "watch"),
        ("", "nodes", "list"),
        ("", "nodes", "watch"),
    }
    # the ledger: list and watch of that one ConfigMap, in the namespace the controller keeps
    # it in, which is the one the Deployment passes (and the default in that pod)
    docs = documents()
    args = build_parser().parse_args(expanded_command(docs["Deployment"])[1:])
    role = docs["Role"]
    assert args.ledger_namespace == role["metadata"]["namespace"] == controller_ledger_namespace()
    assert role["rules"] == [
        {
            "apiGroups": [""],
            "resources": ["configmaps"],
            "resourceNames": [LEDGER_NAME],
            "verbs": ["list", "watch"],
        }
    ]
    account = docs["ServiceAccount"]["metadata"]
    binding = docs["RoleBinding"]
    assert binding["metadata"]["namespace"] == role["metadata"]["namespace"]
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": role["metadata"]["name"],
    }
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": account["name"], "namespace": account["namespace"]}
    ]
    assert granted(DEPLOY / "extender-bind.yaml") == {("", "pods/binding", "create")}
    with (DEPLOY / "extender-bind.yaml").open(encoding="utf-8") as f:
        [binding] = [d for d in yaml.safe_load_all(f) if d["kind"] == "ClusterRoleBinding"]
    account = documents()["ServiceAccount"]["metadata"]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": account["name"], "namespace": account["namespace"]}
    ]


def test_limits_fit_the_memory_limit() -> None:
    """The body and in-flight limits the Deployment passes keep the worst case (about 25 bytes
    of decoded objects per body byte, benchmarks/RESULTS-extender.md) under its memory limit."""
    [container] = documents()["Deployment"]["spec"]["template"]["spec"]["containers"]
    args = build_parser().parse_args(container["command"][1:])
    memory = container["resources"]["limits"]["memory"]
    assert memory == "2Gi"
    assert args.max_body_bytes <= 8 * 1024 * 1024
    assert args.max_body_bytes * 25 < 1024**3  # any single request under 1 GiB
    options = ServiceOptions(max_body_bytes=args.max_body_bytes, max_in_flight=args.max_in_flight)
    in_flight = options.limits().max_in_flight_bytes
    assert in_flight * 25 + 256 * 1024**2 < 2 * 1024**3  # every request at once, plus the state
