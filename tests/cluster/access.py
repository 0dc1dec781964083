"""What a ServiceAccount may do, decided by the real API server's RBAC authorizer.

The shipped manifests' Roles are applied to the control plane and each question goes to the API
server as a SubjectAccessReview, so no rule of RBAC (namespaces, resourceNames, subresources,
aggregation) is re-implemented here. `Authorizer` answers the stand-in API server's `Request`
(tests/controller/apiserver.py), which lets a test provoke faults the real server cannot show on
demand (a 409 on a chosen write) while the real authorizer decides every call.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kubernetes import client as k8s

from tests.cluster.kube import api_client
from tests.controller.apiserver import Request

__all__ = ["RBAC_KINDS", "Authorizer", "rbac_documents", "renamed_account"]

RBAC_KINDS = frozenset(
    {"ServiceAccount", "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"}
)
"""The kinds that decide a ServiceAccount's rights (what a test applies of a manifest)."""


def rbac_documents(docs: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ServiceAccounts, Roles and bindings among a manifest's documents."""
    return [copy.deepcopy(d) for d in docs if d.get("kind") in RBAC_KINDS]


def renamed_account(
    docs: Iterable[dict[str, Any]], namespace: str, account: str, suffix: str
) -> list[dict[str, Any]]:
    """The same rights for an account of a test's own: `account` and every binding naming it get
    `suffix`, so applying them changes nothing the shipped account holds (roles are shared
    unchanged: their rules are what is tested)."""
    result = []
    for doc in rbac_documents(docs):
        kind, meta = doc["kind"], doc["metadata"]
        if kind == "ServiceAccount" and meta["name"] == account and meta["namespace"] == namespace:
            meta["name"] = f"{account}{suffix}"
        elif kind in ("RoleBinding", "ClusterRoleBinding"):
            subjects = doc.get("subjects") or []
            named = [
                s
                for s in subjects
                if s.get("kind") == "ServiceAccount"
                and s.get("name") == account
                and s.get("namespace") == namespace
            ]
            if not named:
                continue
            for subject in named:
                subject["name"] = f"{account}{suffix}"
            meta["name"] = f"{meta['name']}{suffix}"
        elif kind == "ServiceAccount":
            continue
        result.append(doc)
    return result


class Authorizer:
    """`authorizer(request)`: may `namespace/account` make this request? Asked of the API
    server once per distinct request (answers are cached: the rules do not change mid-test)."""

    def __init__(self, admin_kubeconfig: Path, namespace: str, account: str) -> None:
        self._kubeconfig = admin_kubeconfig
        self.user = f"system:serviceaccount:{namespace}:{account}"
        # The groups the API server gives a ServiceAccount's token.
        self.groups = [
            "system:serviceaccounts",
            f"system:serviceaccounts:{namespace}",
            "system:authenticated",
        ]
        self._answers: dict[Request, bool] = {}

    def __call__(self, request: Request) -> bool:
        if request not in self._answers:
            self._answers[request] = self._review(request)
        return self._answers[request]

    def _review(self, request: Request) -> bool:
        resource, _, subresource = request.resource.partition("/")
        attributes = k8s.V1ResourceAttributes(
            verb=request.verb,
            group=request.group,
            resource=resource,
            subresource=subresource or None,
            namespace=request.namespace,
            name=request.name,
        )
        review = k8s.V1SubjectAccessReview(
            spec=k8s.V1SubjectAccessReviewSpec(
                user=self.user, groups=self.groups, resource_attributes=attributes
            )
        )
        with api_client(self._kubeconfig) as api:
            answer = k8s.AuthorizationV1Api(api).create_subject_access_review(review)
        assert answer.status is not None  # the API server always fills it in
        return bool(answer.status.allowed)
