"""deploy/scheduler/ stays consistent with the code: the extender stanza uses the verbs and field
names the server serves, the Deployment's command parses, probes and ports line up."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import yaml

from placer.cli import build_parser

DEPLOY = Path(__file__).resolve().parents[2] / "deploy" / "scheduler"


def documents() -> dict[str, dict[str, Any]]:
    with (DEPLOY / "extender.yaml").open(encoding="utf-8") as f:
        return {d["kind"]: d for d in yaml.safe_load_all(f)}


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


def test_rbac_covers_the_watch_and_the_binding() -> None:
    rules = documents()["ClusterRole"]["rules"]
    granted = {
        (g, r, v)
        for rule in rules
        for g in rule["apiGroups"]
        for r in rule["resources"]
        for v in rule["verbs"]
    }
    assert ("jobset.x-k8s.io", "jobsets", "watch") in granted
    assert ("", "nodes", "watch") in granted
    assert ("", "pods/binding", "create") in granted
