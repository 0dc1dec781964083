"""What the RBAC objects of a manifest grant, decided the way the API server's RBAC authorizer
decides, so tests can run a component over HTTP with exactly the rights its manifests give it.

Only what placer's manifests use: ClusterRoles bound by ClusterRoleBindings (every namespace),
Roles bound by RoleBindings (their namespace), rules of apiGroups, resources, verbs and
resourceNames. As in Kubernetes, a rule with resourceNames allows a list or a watch only when the
request selects one of those names (`fieldSelector=metadata.name=<name>`), and never a create.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from tests.controller.apiserver import Request

__all__ = ["API_GROUPS", "authorizer"]

API_GROUPS = {
    "nodes": "",
    "pods": "",
    "events": "",
    "configmaps": "",
    "jobsets": "jobset.x-k8s.io",
    "priorityclasses": "scheduling.k8s.io",
    "leases": "coordination.k8s.io",
    "topologies": "kueue.x-k8s.io",
    "workloads": "kueue.x-k8s.io",
    "workloads/status": "kueue.x-k8s.io",
    "admissionchecks": "kueue.x-k8s.io",
    "admissionchecks/status": "kueue.x-k8s.io",
    "clusterqueues": "kueue.x-k8s.io",
    "resourceflavors": "kueue.x-k8s.io",
}
"""The API group of each resource the API-server stand-in serves."""

Doc = Mapping[str, Any]


def _bound(binding: Doc, namespace: str, account: str) -> bool:
    return any(
        s.get("kind") == "ServiceAccount"
        and s.get("name") == account
        and s.get("namespace") == namespace
        for s in binding.get("subjects") or []
    )


def _rules(docs: list[Doc], namespace: str, account: str) -> list[tuple[str | None, Doc]]:
    """(namespace the rule applies in, None for every namespace; rule) for the account."""
    roles = {
        (d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"]): d
        for d in docs
        if d.get("kind") in ("Role", "ClusterRole")
    }
    result: list[tuple[str | None, Doc]] = []
    for d in docs:
        kind = d.get("kind")
        if kind not in ("RoleBinding", "ClusterRoleBinding") or not _bound(d, namespace, account):
            continue
        scope = d["metadata"].get("namespace") if kind == "RoleBinding" else None
        ref = d["roleRef"]
        role_ns = scope if ref["kind"] == "Role" else None
        role = roles.get((ref["kind"], role_ns, ref["name"]))
        if role is not None:
            result.extend((scope, rule) for rule in role.get("rules") or [])
    return result


def _allows(rule: Doc, request: Request) -> bool:
    group = API_GROUPS[request.resource]
    if not ({group, "*"} & set(rule.get("apiGroups") or [])):
        return False
    if not ({request.resource, "*"} & set(rule.get("resources") or [])):
        return False
    if not ({request.verb, "*"} & set(rule.get("verbs") or [])):
        return False
    names = rule.get("resourceNames")
    if names:
        return request.verb != "create" and request.name in names
    return True


def authorizer(docs: Iterable[Doc], namespace: str, account: str) -> Callable[[Request], bool]:
    """Whether the service account `namespace/account` may make a request, by these objects."""
    rules = _rules([d for d in docs if d], namespace, account)

    def authorize(request: Request) -> bool:
        return any(
            (scope is None or scope == request.namespace) and _allows(rule, request)
            for scope, rule in rules
        )

    return authorize
