"""One scenario on the shared control plane: its namespace, nodes, placer processes and checks.

A scenario starts from a clean slate that the previous one may have left dirty: placer's ledger
and Lease are deleted, nodes not asked for are deleted, and placer runs as the ServiceAccount
`placer-system/placer-controller` with exactly the Roles in deploy/controller (applied from the
repository's files). Tear-down force-deletes the scenario's pods (no kubelet will ever confirm a
graceful deletion) and its namespace.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import secrets
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, cast

import yaml
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from placer.model.assignment import ASSIGNMENT_ANNOTATION, Assignment
from tests.cluster.controlplane import ControlPlane
from tests.cluster.kube import (
    api_client,
    apply_all,
    create_nodes,
    ensure_namespace,
    meta_of,
    name_of,
    service_account_token,
)
from tests.cluster.processes import LOOPBACK, Component, free_port, wait_until

REPO = Path(__file__).resolve().parents[2]
PLACER_SYSTEM = "placer-system"
CONTROLLER_SA = "placer-controller"
GATE = "placer.dev/placement"
JOBSET_GROUP, JOBSET_VERSION, JOBSETS = "jobset.x-k8s.io", "v1alpha2", "jobsets"

DEPLOY_RBAC = (
    "deploy/base/namespace.yaml",
    "deploy/controller/serviceaccount.yaml",
    "deploy/controller/rbac.yaml",
    "deploy/controller/rbac-gate.yaml",
    "deploy/controller/rbac-node-labels.yaml",
)
"""The shipped identity and Roles placer runs with in every scenario."""


def load_documents(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [doc for doc in yaml.safe_load_all(handle) if doc]


def example_cluster(name: str) -> dict[str, Any]:
    """An example cluster (examples/clusters/NAME) as `kubectl get -o json` items, via placer's
    own renderer of its compact description."""
    from placer.model.snapshots.load import load_snapshot, snapshot_to_kubectl_list

    listing = snapshot_to_kubectl_list(load_snapshot([REPO / "examples/clusters" / name]))
    return dict(listing)


class Scenario:
    def __init__(self, plane: ControlPlane, directory: Path, test_name: str) -> None:
        self.plane = plane
        self.directory = directory
        slug = "".join(c if c.isalnum() else "-" for c in test_name.lower()).strip("-")
        self.namespace = f"t-{slug.removeprefix('test-')[:24].strip('-')}-{secrets.token_hex(3)}"
        self.processes: dict[str, Component] = {}
        self.admin = plane.admin_kubeconfig
        self._webhook_configs: list[str] = []
        self.namespaces = [self.namespace]
        self._reaper_stop = threading.Event()
        self._reaper: threading.Thread | None = None
        self._api = api_client(self.admin)
        self.core = k8s.CoreV1Api(self._api)
        self.custom = k8s.CustomObjectsApi(self._api)

    # -- set-up and tear-down --------------------------------------------------------------

    def set_up(self) -> None:
        apply_all(self.admin, [d for f in DEPLOY_RBAC for d in load_documents(REPO / f)])
        ensure_namespace(self.admin, self.namespace, {"placer.dev/managed": "true"})
        for kind, name in (
            ("configmap", "placer-ledger"),
            ("lease", "placer-controller"),
            ("lease", "placer-controller-b"),
        ):
            self._delete_quietly(kind, name)
        token = service_account_token(self.admin, PLACER_SYSTEM, CONTROLLER_SA)
        self.placer_kubeconfig = self.plane.token_kubeconfig("placer-controller", token)

    def _delete_quietly(self, kind: str, name: str) -> None:
        try:
            if kind == "configmap":
                self.core.delete_namespaced_config_map(name, PLACER_SYSTEM)
            else:
                k8s.CoordinationV1Api(self._api).delete_namespaced_lease(name, PLACER_SYSTEM)
        except ApiException as error:
            if error.status != 404:
                raise

    def tear_down(self) -> None:
        # The webhook's registration goes first: with failurePolicy Fail, a registration left
        # behind would refuse every later scenario's pods.
        admission = k8s.AdmissionregistrationV1Api(self._api)
        for name in self._webhook_configs:
            with contextlib.suppress(ApiException):
                admission.delete_mutating_webhook_configuration(name)
        for process in self.processes.values():
            process.stop()
        # Every pod of this scenario must be gone before the next one plans on the same nodes:
        # a Job not yet collected recreates pods, and a pod deleted gracefully stays Terminating
        # (holding its node) until something finishes the deletion, so the reaper runs until the
        # namespaces are gone.
        if self._reaper is None:
            self.start_pod_reaper()
        for namespace in self.namespaces:
            with contextlib.suppress(ApiException):
                for jobset in self.list_jobsets(namespace):
                    self.custom.delete_namespaced_custom_object(
                        JOBSET_GROUP, JOBSET_VERSION, namespace, JOBSETS, jobset["metadata"]["name"]
                    )
        for namespace in self.namespaces:
            self.force_delete_pods(namespace)
            with contextlib.suppress(ApiException):
                self.core.delete_namespace(namespace)
        with contextlib.suppress(TimeoutError):
            wait_until(self._namespaces_gone, timeout_s=120, what="the scenario's namespaces gone")
        self._reaper_stop.set()
        if self._reaper is not None:
            self._reaper.join(timeout=10)
        self._api.close()  # type: ignore[no-untyped-call]  # unannotated in the client

    def _namespaces_gone(self) -> bool:
        names = {name_of(n) for n in self.core.list_namespace().items}
        return not names & set(self.namespaces)

    def add_namespace(self, suffix: str) -> str:
        """Another managed namespace for this scenario (split-namespace controllers)."""
        namespace = f"{self.namespace[:50]}-{suffix}"
        ensure_namespace(self.admin, namespace, {"placer.dev/managed": "true"})
        self.namespaces.append(namespace)
        return namespace

    def start_pod_reaper(self) -> None:
        """Finish pod deletions the way a kubelet would once containers stop.

        No kubelet runs here, so a pod bound to a node and deleted with a grace period stays
        Terminating for ever (the garbage collector and JobSet's restarts delete that way).
        This thread deletes such pods with grace period 0, which is what the kubelet's final
        delete does; it touches no other field of any pod.
        """

        def reap() -> None:
            with api_client(self.admin) as api:
                core = k8s.CoreV1Api(api)
                while not self._reaper_stop.wait(0.3):
                    for namespace in list(self.namespaces):
                        with contextlib.suppress(ApiException):
                            for pod in core.list_namespaced_pod(namespace).items:
                                if meta_of(pod).deletion_timestamp is not None:
                                    with contextlib.suppress(ApiException):
                                        core.delete_namespaced_pod(
                                            name_of(pod), namespace, grace_period_seconds=0
                                        )

        self._reaper = threading.Thread(target=reap, name="pod-reaper", daemon=True)
        self._reaper.start()

    def force_delete_pods(self, namespace: str | None = None) -> None:
        namespace = namespace or self.namespace
        for pod in self.core.list_namespaced_pod(namespace).items:
            try:
                self.core.delete_namespaced_pod(name_of(pod), namespace, grace_period_seconds=0)
            except ApiException as error:
                if error.status != 404:
                    raise

    # -- the cluster -----------------------------------------------------------------------

    def use_nodes(self, nodes: Iterable[dict[str, Any]]) -> list[str]:
        """Make these the cluster's only nodes (each recreated, so no earlier state leaks in)."""
        wanted = list(nodes)
        for node in self.core.list_node().items:
            self.core.delete_node(name_of(node))
        wait_until(
            lambda: not self.core.list_node().items, timeout_s=30, what="old nodes to be gone"
        )
        create_nodes(self.admin, wanted)
        return [node["metadata"]["name"] for node in wanted]

    def use_example_cluster(self, name: str) -> dict[str, Any]:
        """Nodes and PriorityClasses of an example cluster; its running pods are left out (a
        scenario that wants them bound creates them, as test_live_snapshot does)."""
        listing = example_cluster(name)
        items = listing["items"]
        self.use_nodes(item for item in items if item["kind"] == "Node")
        classes = [item for item in items if item["kind"] == "PriorityClass"]
        scheduling = k8s.SchedulingV1Api(self._api)
        for priority_class in classes:
            body = copy.deepcopy(priority_class)
            body["metadata"] = {"name": body["metadata"]["name"]}
            try:
                scheduling.create_priority_class(body)
            except ApiException as error:
                if error.status != 409:
                    raise
        return listing

    # -- JobSets ---------------------------------------------------------------------------

    def create_jobset(self, manifest: dict[str, Any], namespace: str | None = None) -> None:
        body = copy.deepcopy(manifest)
        body["metadata"]["namespace"] = namespace or self.namespace
        self.custom.create_namespaced_custom_object(
            JOBSET_GROUP, JOBSET_VERSION, body["metadata"]["namespace"], JOBSETS, body
        )

    def get_jobset(self, name: str, namespace: str | None = None) -> dict[str, Any]:
        answer = self.custom.get_namespaced_custom_object(
            JOBSET_GROUP, JOBSET_VERSION, namespace or self.namespace, JOBSETS, name
        )
        return dict(cast(dict[str, Any], answer))  # the JSON, typed `object`

    def patch_jobset(self, name: str, patch: dict[str, Any], namespace: str | None = None) -> None:
        self.custom.patch_namespaced_custom_object(
            JOBSET_GROUP, JOBSET_VERSION, namespace or self.namespace, JOBSETS, name, patch
        )

    def list_jobsets(self, namespace: str | None = None) -> list[dict[str, Any]]:
        answer = self.custom.list_namespaced_custom_object(
            JOBSET_GROUP, JOBSET_VERSION, namespace or self.namespace, JOBSETS
        )
        return list(cast(dict[str, Any], answer)["items"])  # the JSON, typed `object`

    @contextlib.contextmanager
    def priority_classes(self, bodies: Iterable[dict[str, Any]]) -> Iterator[None]:
        """The PriorityClasses `bodies` created, and deleted afterwards: they are cluster-scoped, so
        they outlive the namespace, other tests compare the cluster's classes, and a default class
        would change every later pod's priority."""
        scheduling = k8s.SchedulingV1Api(self._api)
        made: list[str] = []
        try:
            for body in bodies:
                scheduling.create_priority_class(body)  # type: ignore[arg-type]  # sent as is
                made.append(body["metadata"]["name"])
            yield
        finally:
            for name in made:
                try:
                    scheduling.delete_priority_class(name)
                except ApiException as error:
                    if error.status != 404:
                        raise

    def pods_of(self, jobset: str, namespace: str | None = None) -> list[Any]:
        selector = f"jobset.sigs.k8s.io/jobset-name={jobset}"
        answer = self.core.list_namespaced_pod(namespace or self.namespace, label_selector=selector)
        return [p for p in answer.items if meta_of(p).deletion_timestamp is None]

    def wait_pods_bound(
        self, jobset: str, count: int, timeout_s: float = 120, namespace: str | None = None
    ) -> list[Any]:
        def bound() -> bool:
            pods = self.pods_of(jobset, namespace)
            return len(pods) == count and all(p.spec.node_name for p in pods)

        wait_until(bound, timeout_s=timeout_s, what=f"{count} pods of {jobset} bound")
        return self.pods_of(jobset, namespace)

    def node_labels(self) -> dict[str, dict[str, str]]:
        return {name_of(n): dict(meta_of(n).labels or {}) for n in self.core.list_node().items}

    def wait_for_event(self, name: str, reason: str, timeout_s: float = 90) -> None:
        """Until an Event of `reason` is recorded on the object `name` of this namespace."""
        wait_until(
            lambda: any(e.reason == reason for e in self.events(name)),
            timeout_s=timeout_s,
            what=f"a {reason} event on {name}",
        )

    def report_phase(self, pods: Iterable[Any], phase: str) -> None:
        """Set each pod's phase, as its kubelet would report it (none runs here)."""
        for pod in pods:
            self.core.patch_namespaced_pod_status(
                name_of(pod), self.namespace, {"status": {"phase": phase}}
            )

    def events(self, name: str, namespace: str | None = None) -> list[Any]:
        answer = self.core.list_namespaced_event(
            namespace or self.namespace, field_selector=f"involvedObject.name={name}"
        )
        return list(answer.items)

    # -- placer ----------------------------------------------------------------------------

    def _placer(self, name: str, *argv: str, health_url: str | None = None) -> Component:
        component = Component(
            name,
            [sys.executable, "-m", "placer", *argv],
            self.directory / f"{name}.log",
            health_url=health_url,
            env={"PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1"},
        )
        self.processes[name] = component
        component.start()
        return component

    def start_controller(
        self, *extra: str, identity: str = "placer-0", namespaces: list[str] | None = None
    ) -> Component:
        """`placer controller` as the shipped ServiceAccount, managing `namespaces` (default:
        this scenario's first)."""
        metrics = free_port()
        managed = [f"--namespace={n}" for n in namespaces or [self.namespace]]
        return self._placer(
            f"controller-{identity}",
            "controller",
            f"--kubeconfig={self.placer_kubeconfig}",
            *managed,
            f"--ledger-namespace={PLACER_SYSTEM}",
            f"--lease-namespace={PLACER_SYSTEM}",
            f"--identity={identity}",
            f"--metrics-address={LOOPBACK}",
            f"--metrics-port={metrics}",
            "--window=0.5",
            "--workers=1",
            "--seed=1",
            *extra,
            health_url=f"http://{LOOPBACK}:{metrics}/metrics",
        )

    def start_webhook(self) -> Component:
        """`placer webhook` over TLS on loopback, registered by URL with deploy/'s rules."""
        pair = self.plane.pki.serving("placer-webhook")
        port, metrics = free_port(), free_port()
        component = self._placer(
            "webhook",
            "webhook",
            f"--tls-cert-file={pair.cert}",
            f"--tls-private-key-file={pair.key}",
            f"--host={LOOPBACK}",
            f"--port={port}",
            f"--metrics-address={LOOPBACK}",
            f"--metrics-port={metrics}",
            health_url=f"http://{LOOPBACK}:{metrics}/readyz",
        )
        (configuration,) = load_documents(REPO / "deploy/webhook/mutatingwebhookconfiguration.yaml")
        configuration = copy.deepcopy(configuration)
        configuration["metadata"].pop("annotations", None)
        for webhook in configuration["webhooks"]:
            path = webhook["clientConfig"]["service"]["path"]
            webhook["clientConfig"] = {
                "url": f"https://{LOOPBACK}:{port}{path}",
                "caBundle": base64.b64encode(self.plane.pki.pem).decode(),
            }
        apply_all(self.admin, [configuration])
        self._webhook_configs.append(configuration["metadata"]["name"])
        return component

    def log_tails(self, lines: int = 40) -> str:
        return "\n".join(
            f"--- {p.name} ({p.log_path})\n{p.log_tail(lines)}" for p in self.processes.values()
        )


def assignment_of(jobset: dict[str, Any]) -> dict[str, Any]:
    """placer's record on the JobSet (`placer.dev/assignment`), read by placer and given back in
    its long form (`{"jobs": {name: {"domain": ..., "nodes": ...}}, "plan_id": ...}`)."""
    raw = jobset["metadata"].get("annotations", {}).get(ASSIGNMENT_ANNOTATION)
    return Assignment.from_annotation(raw).model_dump(mode="json") if raw else {}


def seconds_since(start: float) -> float:
    return time.monotonic() - start
