"""A real Kubernetes control plane on loopback: etcd, kube-apiserver, kube-controller-manager,
kube-scheduler, the JobSet manager and the Kueue manager, from the binaries tests/cluster/build.py
builds.

Layout follows envtest (controller-runtime's test control plane): a real API server over a real
etcd, generated certificates, a service-account key pair, RBAC authorization. Beyond envtest, the
job controller, garbage collector and namespace controller run (pods get created and cleaned up),
kube-scheduler binds pods, and JobSet and Kueue run their own managers and admission webhooks,
registered by URL on 127.0.0.1 (never by Service reference: the API server would dial a
ClusterIP). No kubelet runs: nodes are API objects that stay Ready because the node lifecycle
controller is off; a scenario that needs a Running pod sets its status itself.

Every process binds 127.0.0.1 and every client dials 127.0.0.1.
"""

from __future__ import annotations

import base64
import json
import ssl
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.cluster.pki import CertificateAuthority, KeyPair, service_account_keys
from tests.cluster.processes import LOOPBACK, Component, free_port, wait_until

__all__ = ["ControlPlane", "Versions"]

SERVICE_CLUSTER_IP_RANGE = "10.0.0.0/24"
"""Only an allocation range for Service objects: nothing here dials a ClusterIP."""

KCM_CONTROLLERS = "job-controller,garbage-collector-controller,namespace-controller"
"""The job controller makes pods; the garbage collector deletes a deleted JobSet's Jobs and pods;
the namespace controller empties deleted namespaces. The node lifecycle controller stays off: with
no kubelet sending heartbeats it would taint every node NotReady."""

KUEUE_FRAMEWORKS = ("jobset.x-k8s.io/jobset",)
"""Kueue manages JobSets only: its webhooks for other kinds (pods, Jobs, Deployments) are not
registered, so nothing else placer's tests create passes through Kueue."""


KUEUE_METRICS_CERTS = Path("/etc/kueue/metrics/certs")
"""Kueue reads its metrics server certificate from this fixed path whenever its internal
certificate management is off (cmd/kueue/main.go); no flag or field moves it."""


def in_private_mount(source: Path, target: Path, command: list[str]) -> list[str]:
    """`command` run in a private mount namespace with `source` bind-mounted at `target`.

    Only the empty mount point is created on the machine (once); the run's certificates are
    visible to that one process and vanish with it, so concurrent runs do not clash.
    """
    target.mkdir(parents=True, exist_ok=True)
    script = 'mount --bind "$0" "$1" && shift && exec "$@"'
    return [
        "unshare",
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        script,
        str(source),
        str(target),
        *command,
    ]


@dataclass(frozen=True)
class Versions:
    """What this control plane runs, for the README and the deploy READMEs."""

    kubernetes: str
    etcd: str
    jobset: str
    kueue: str


def kubeconfig_document(server: str, ca: Path, *, user: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "test", "cluster": {"server": server, "certificate-authority": str(ca)}}
        ],
        "users": [{"name": "user", "user": user}],
        "contexts": [{"name": "test", "context": {"cluster": "test", "user": "user"}}],
        "current-context": "test",
    }


@dataclass
class ControlPlane:
    """The running components, their ports, kubeconfigs and logs under `root`."""

    root: Path
    binaries: Path
    sources: dict[str, Path]
    """Module cache directories of JobSet and Kueue (their CRDs and webhook manifests)."""
    versions: Versions
    components: dict[str, Component] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.logs = self.root / "logs"
        self.pki = CertificateAuthority(self.root / "pki")
        self.sa_keys: KeyPair = service_account_keys(self.root / "pki")
        self.etcd_port = free_port()
        self.apiserver_port = free_port()
        self.jobset_webhook_port = free_port()
        self.kueue_webhook_port = free_port()
        self.server = f"https://{LOOPBACK}:{self.apiserver_port}"
        admin = self.pki.client("admin", "placer-test-admin", ("system:masters",))
        self.admin_kubeconfig = self.write_kubeconfig(
            "admin", {"client-certificate": str(admin.cert), "client-key": str(admin.key)}
        )
        self._admin_pair = admin
        self.tls = ssl.create_default_context(cafile=str(self.pki.cert_path))
        self.tls.load_cert_chain(str(admin.cert), str(admin.key))

    # -- kubeconfigs ------------------------------------------------------------------------

    def write_kubeconfig(self, name: str, user: dict[str, str]) -> Path:
        path = self.root / f"{name}.kubeconfig"
        document = kubeconfig_document(self.server, self.pki.cert_path, user=user)
        path.write_text(yaml.safe_dump(document))
        path.chmod(0o600)
        return path

    def token_kubeconfig(self, name: str, token: str) -> Path:
        """A kubeconfig that authenticates with a ServiceAccount token (RBAC applies)."""
        return self.write_kubeconfig(name, {"token": token})

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> None:
        self._start_etcd()
        self._start_apiserver()
        self._start_controller_manager()
        self._start_scheduler(self.scheduler_config())
        self.install_crds()
        self._start_jobset()
        self._start_kueue()
        self._wait_for_admission()

    def _wait_for_admission(self, timeout_s: float = 120.0) -> None:
        """Until a Pod and a queued JobSet pass every admission webhook (dry runs, nothing kept).

        A manager's /readyz can answer before its webhook handlers do: JobSet's pod webhook
        (`mpod.kb.io`) was seen answering 404 just after start, which the API server turns into a
        500 for the first Pod any scenario creates. Waiting here keeps that out of every test.
        """
        from kubernetes import client as k8s

        from tests.cluster.kube import api_client

        api = api_client(self.admin_kubeconfig)
        core, custom = k8s.CoreV1Api(api), k8s.CustomObjectsApi(api)
        container = {"name": "c", "image": "x"}
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "probe"},
               "spec": {"containers": [container]}}  # fmt: skip
        template = {"spec": {"template": {"spec": {"restartPolicy": "Never",
                                                   "containers": [container]}}}}  # fmt: skip
        jobset = {
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "metadata": {"name": "probe", "labels": {"kueue.x-k8s.io/queue-name": "probe"}},
            "spec": {"replicatedJobs": [{"name": "w", "template": template}]},
        }

        def admitted() -> bool:
            core.create_namespaced_pod("default", pod, dry_run="All")  # type: ignore[arg-type]
            custom.create_namespaced_custom_object(
                "jobset.x-k8s.io", "v1alpha2", "default", "jobsets", jobset, dry_run="All"
            )
            return True

        try:
            wait_until(admitted, timeout_s=timeout_s, what="every admission webhook to answer")
        finally:
            api.close()  # type: ignore[no-untyped-call]  # unannotated in the client

    def stop(self) -> None:
        for component in reversed(list(self.components.values())):
            component.stop()

    def _add(self, component: Component, *, ready_timeout_s: float = 120.0) -> Component:
        self.components[component.name] = component
        component.start(ready_timeout_s=ready_timeout_s)
        return component

    def _start_etcd(self) -> None:
        peer = free_port()
        client_url = f"http://{LOOPBACK}:{self.etcd_port}"
        peer_url = f"http://{LOOPBACK}:{peer}"
        self._add(
            Component(
                "etcd",
                [
                    str(self.binaries / "etcd"),
                    "--name=test",
                    f"--data-dir={self.root / 'etcd'}",
                    f"--listen-client-urls={client_url}",
                    f"--advertise-client-urls={client_url}",
                    f"--listen-peer-urls={peer_url}",
                    f"--initial-advertise-peer-urls={peer_url}",
                    f"--initial-cluster=test={peer_url}",
                    # Test data: losing it on a machine crash is fine, waiting on fsync is not.
                    "--unsafe-no-fsync",
                    "--log-level=warn",
                ],
                self.logs / "etcd.log",
                health_url=f"{client_url}/health",
            )
        )

    def etcd_compact(self) -> int:
        """Compact etcd to its current revision (what the API server does every 5 minutes); a
        watch from an older resourceVersion is then answered 410 Gone. Returns the revision."""
        base = f"http://{LOOPBACK}:{self.etcd_port}/v3/kv"
        key = base64.b64encode(b"/").decode()
        status = _post_json(f"{base}/range", {"key": key, "limit": 1})
        revision = int(status["header"]["revision"])
        _post_json(f"{base}/compaction", {"revision": revision, "physical": True})
        return revision

    def _start_apiserver(self) -> None:
        serving = self.pki.serving("apiserver")
        self._add(
            Component(
                "kube-apiserver",
                [
                    str(self.binaries / "kube-apiserver"),
                    f"--etcd-servers=http://{LOOPBACK}:{self.etcd_port}",
                    f"--cert-dir={self.root / 'apiserver-certs'}",
                    f"--tls-cert-file={serving.cert}",
                    f"--tls-private-key-file={serving.key}",
                    f"--client-ca-file={self.pki.cert_path}",
                    f"--secure-port={self.apiserver_port}",
                    f"--bind-address={LOOPBACK}",
                    f"--advertise-address={LOOPBACK}",
                    f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
                    "--allow-privileged=true",
                    # TaintNodesByCondition taints every new Node not-ready until the node
                    # lifecycle controller (off here, no kubelets) clears it; create_nodes sets
                    # that taint itself on the nodes that are NotReady.
                    "--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
                    # GKE and most GPU clusters run it; placer models it by default.
                    "--enable-admission-plugins=ExtendedResourceToleration",
                    # The `kubernetes` Service's endpoint would be 127.0.0.1, which the API
                    # refuses for Endpoints; nothing here uses that Service.
                    "--endpoint-reconciler-type=none",
                    "--authorization-mode=RBAC",
                    f"--service-account-issuer=https://{LOOPBACK}:{self.apiserver_port}/",
                    f"--service-account-key-file={self.sa_keys.cert}",
                    f"--service-account-signing-key-file={self.sa_keys.key}",
                    "--v=1",
                ],
                self.logs / "kube-apiserver.log",
                health_url=f"{self.server}/readyz",
                tls=self.tls,
            ),
            ready_timeout_s=180.0,
        )

    def restart_apiserver(self) -> float:
        """Crash kube-apiserver (SIGKILL) and start it again; returns the seconds it was away.

        Its watch cache starts afresh at etcd's current revision, so every client's watch comes
        back with a resourceVersion the server no longer serves (410 Gone), as after a real
        restart; after `etcd_compact` etcd cannot serve it either."""
        server = self.components["kube-apiserver"]
        started = time.monotonic()
        server.kill()
        server.start(ready_timeout_s=180.0)
        return time.monotonic() - started

    def _start_controller_manager(self) -> None:
        self._add(
            Component(
                "kube-controller-manager",
                [
                    str(self.binaries / "kube-controller-manager"),
                    f"--kubeconfig={self.admin_kubeconfig}",
                    f"--controllers={KCM_CONTROLLERS}",
                    "--leader-elect=false",
                    f"--bind-address={LOOPBACK}",
                    f"--secure-port={free_port()}",
                    "--concurrent-job-syncs=10",
                    "--v=1",
                ],
                self.logs / "kube-controller-manager.log",
            )
        )

    def scheduler_config(self, extenders: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """A KubeSchedulerConfiguration: the default profile, optionally with extenders."""
        config: dict[str, Any] = {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "clientConnection": {
                "kubeconfig": str(self.admin_kubeconfig),
                "qps": 500,
                "burst": 1000,
            },
            "leaderElection": {"leaderElect": False},
        }
        if extenders:
            config["extenders"] = extenders
        return config

    def _start_scheduler(self, config: dict[str, Any]) -> None:
        path = self.root / "kube-scheduler.yaml"
        path.write_text(yaml.safe_dump(config))
        port = free_port()
        self._add(
            Component(
                "kube-scheduler",
                [
                    str(self.binaries / "kube-scheduler"),
                    f"--config={path}",
                    f"--bind-address={LOOPBACK}",
                    f"--secure-port={port}",
                    f"--authentication-kubeconfig={self.admin_kubeconfig}",
                    f"--authorization-kubeconfig={self.admin_kubeconfig}",
                    "--v=1",
                ],
                self.logs / "kube-scheduler.log",
            )
        )

    def reconfigure_scheduler(self, config: dict[str, Any]) -> None:
        """Restart kube-scheduler with another configuration (the extender scenarios)."""
        self.components.pop("kube-scheduler").stop()
        self._start_scheduler(config)

    # -- JobSet and Kueue -------------------------------------------------------------------

    def install_crds(self) -> None:
        from tests.cluster.kube import apply_all, wait_for_crds
        from tests.cluster.manifests import (
            jobset_crds,
            kueue_conversion,
            kueue_converted_by_webhook,
            kueue_crds,
        )

        source = self.sources["kueue"]
        kueue = kueue_conversion(
            kueue_crds(source),
            kueue_converted_by_webhook(source),
            self.kueue_webhook_port,
            self.pki.pem,
        )
        crds = jobset_crds(self.sources["jobset"]) + kueue
        apply_all(self.admin_kubeconfig, crds)
        wait_for_crds(self.admin_kubeconfig, [crd["metadata"]["name"] for crd in crds])

    def _manager_certs(self, name: str) -> Path:
        pair = self.pki.serving(name)
        directory = self.root / f"{name}-certs"
        directory.mkdir(exist_ok=True)
        (directory / "tls.crt").write_bytes(pair.cert.read_bytes())
        (directory / "tls.key").write_bytes(pair.key.read_bytes())
        return directory

    def _manager_settings(self, name: str, webhook_port: int) -> tuple[dict[str, Any], int, int]:
        """What the JobSet and Kueue managers' Configurations share (both controller-runtime
        managers): no leader election, our certificates instead of their own rotation, every
        server on loopback. Returns the settings, the probe port and the metrics port."""
        probe_port, metrics_port = free_port(), free_port()
        settings = {
            "leaderElection": {"leaderElect": False},
            "internalCertManagement": {"enable": False},
            "webhook": {
                "port": webhook_port,
                "host": LOOPBACK,
                "certDir": str(self._manager_certs(f"{name}-webhook")),
            },
            "metrics": {"bindAddress": f"{LOOPBACK}:{metrics_port}"},
            "health": {"healthProbeBindAddress": f"{LOOPBACK}:{probe_port}"},
        }
        return settings, probe_port, metrics_port

    def _start_jobset(self) -> None:
        from tests.cluster.kube import apply_all
        from tests.cluster.manifests import jobset_webhooks

        webhook_port = self.jobset_webhook_port
        shared, probe_port, metrics_port = self._manager_settings("jobset", webhook_port)
        config = {
            "apiVersion": "config.jobset.x-k8s.io/v1alpha1",
            "kind": "Configuration",
            **shared,
        }
        path = self.root / "jobset-config.yaml"
        path.write_text(yaml.safe_dump(config))
        apply_all(
            self.admin_kubeconfig,
            jobset_webhooks(self.sources["jobset"], webhook_port, self.pki.pem),
        )
        self._add(
            Component(
                "jobset",
                [
                    str(self.binaries / "jobset"),
                    f"--config={path}",
                    f"--kubeconfig={self.admin_kubeconfig}",
                    f"--metrics-bind-address={LOOPBACK}:{metrics_port}",
                    f"--health-probe-bind-address={LOOPBACK}:{probe_port}",
                ],
                self.logs / "jobset.log",
                health_url=f"http://{LOOPBACK}:{probe_port}/readyz",
            )
        )

    def _start_kueue(self) -> None:
        from tests.cluster.kube import apply_all, ensure_namespace
        from tests.cluster.manifests import kueue_webhooks

        webhook_port = self.kueue_webhook_port
        shared, probe_port, _ = self._manager_settings("kueue", webhook_port)
        ensure_namespace(self.admin_kubeconfig, "kueue-system")
        config = {
            "apiVersion": "config.kueue.x-k8s.io/v1beta2",
            "kind": "Configuration",
            "namespace": "kueue-system",
            **shared,
            "manageJobsWithoutQueueName": False,
            "integrations": {"frameworks": list(KUEUE_FRAMEWORKS)},
        }
        path = self.root / "kueue-config.yaml"
        path.write_text(yaml.safe_dump(config))
        apply_all(
            self.admin_kubeconfig,
            kueue_webhooks(self.sources["kueue"], webhook_port, self.pki.pem),
        )
        metrics_certs = self._manager_certs("kueue-metrics")
        command = [
            str(self.binaries / "kueue"),
            f"--config={path}",
            f"--kubeconfig={self.admin_kubeconfig}",
            # The visibility API is an aggregated API server: its APIService would make the API
            # server dial a Service. Off, as upstream.md requires.
            "--feature-gates=VisibilityOnDemand=false",
        ]
        self._add(
            Component(
                "kueue",
                in_private_mount(metrics_certs, KUEUE_METRICS_CERTS, command),
                self.logs / "kueue.log",
                health_url=f"http://{LOOPBACK}:{probe_port}/readyz",
            )
        )

    # -- diagnostics ------------------------------------------------------------------------

    def log_tails(self, lines: int = 30) -> str:
        parts = []
        for component in self.components.values():
            header = f"--- {component.name} ({component.log_path})"
            parts.append(f"{header}\n{component.log_tail(lines)}")
        return "\n".join(parts)


def _post_json(url: str, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        return dict(json.loads(answer.read()))
