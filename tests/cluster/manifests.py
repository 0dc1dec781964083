"""JobSet's and Kueue's own CRDs and webhook configurations, read from their Go modules.

The files come from the module cache (the same versions the binaries were built from), so the
schemas the API server validates against are upstream's, not a copy kept here. Webhook
configurations are rewritten from a Service reference to a URL on 127.0.0.1 with the test CA's
bundle: the API server must never dial a ClusterIP on these machines.
"""

from __future__ import annotations

import base64
import copy
from pathlib import Path
from typing import Any

import yaml

__all__ = [
    "jobset_crds",
    "jobset_webhooks",
    "kueue_conversion",
    "kueue_converted_by_webhook",
    "kueue_crds",
    "kueue_webhooks",
]

KUEUE_WEBHOOK_GROUPS = {"kueue.x-k8s.io", "jobset.x-k8s.io"}
"""Kueue webhooks kept: its own kinds and JobSet's (the only integration the tests enable)."""


def _documents(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [doc for doc in yaml.safe_load_all(handle) if doc]


def jobset_crds(source: Path) -> list[dict[str, Any]]:
    return _documents(source / "config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml")


def kueue_crds(source: Path) -> list[dict[str, Any]]:
    """Kueue's CRDs; those its kustomization patches for conversion get the webhook by URL."""
    bases = source / "config/components/crd/bases"
    return [doc for path in sorted(bases.glob("*.yaml")) for doc in _documents(path)]


def kueue_converted_by_webhook(source: Path) -> set[str]:
    """Names of the CRDs Kueue's kustomization patches to convert by webhook. The others serve
    several versions with the same schema and convert with strategy None, as installed upstream:
    Kueue's webhook has no conversion for them (a v1beta1 Topology sent to it fails with "not
    convertible")."""
    crd_dir = source / "config/components/crd"
    kustomization = _documents(crd_dir / "kustomization.yaml")[0]
    patches = [_documents(crd_dir / p["path"])[0] for p in kustomization.get("patches", [])]
    return {
        p["metadata"]["name"]
        for p in patches
        if p.get("spec", {}).get("conversion", {}).get("strategy") == "Webhook"
    }


def kueue_conversion(
    crds: list[dict[str, Any]], converted: set[str], port: int, ca_pem: bytes
) -> list[dict[str, Any]]:
    """Point the CRDs named in `converted` at Kueue's /convert endpoint on loopback."""
    out = []
    for crd in crds:
        crd = copy.deepcopy(crd)
        if crd["metadata"]["name"] in converted:
            crd["spec"]["conversion"] = {
                "strategy": "Webhook",
                "webhook": {
                    "clientConfig": {
                        "url": f"https://127.0.0.1:{port}/convert",
                        "caBundle": base64.b64encode(ca_pem).decode(),
                    },
                    "conversionReviewVersions": ["v1"],
                },
            }
        out.append(crd)
    return out


def _by_url(
    configurations: list[dict[str, Any]], prefix: str, port: int, ca_pem: bytes
) -> list[dict[str, Any]]:
    bundle = base64.b64encode(ca_pem).decode()
    out = []
    for configuration in configurations:
        configuration = copy.deepcopy(configuration)
        configuration["metadata"]["name"] = prefix + configuration["metadata"]["name"]
        for webhook in configuration.get("webhooks", []):
            path = webhook["clientConfig"]["service"]["path"]
            webhook["clientConfig"] = {
                "url": f"https://127.0.0.1:{port}{path}",
                "caBundle": bundle,
            }
        out.append(configuration)
    return out


def jobset_webhooks(source: Path, port: int, ca_pem: bytes) -> list[dict[str, Any]]:
    """JobSet's mutating and validating webhooks (JobSets and pods), by URL."""
    documents = _documents(source / "config/components/webhook/manifests.yaml")
    return _by_url(documents, "jobset-", port, ca_pem)


def kueue_webhooks(source: Path, port: int, ca_pem: bytes) -> list[dict[str, Any]]:
    """Kueue's webhooks for its own kinds and for JobSets, by URL."""
    kept = []
    for configuration in _documents(source / "config/components/webhook/manifests.yaml"):
        configuration = copy.deepcopy(configuration)
        configuration["webhooks"] = [
            webhook
            for webhook in configuration.get("webhooks", [])
            if all(
                group in KUEUE_WEBHOOK_GROUPS
                for rule in webhook.get("rules", [])
                for group in rule.get("apiGroups", [])
            )
        ]
        kept.append(configuration)
    return _by_url(kept, "kueue-", port, ca_pem)
