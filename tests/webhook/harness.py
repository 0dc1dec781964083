"""`placer webhook`'s server running in a background thread, and a real HTTPS client for it."""

from __future__ import annotations

import http.client
import json
import ssl
from pathlib import Path
from typing import Any

from cryptography import x509

from plugins.webhook.server import MUTATE_PATH, WebhookOptions, WebhookServer
from tests.webhook.certs import ServerFiles

__all__ = ["RunningWebhook", "review"]


def review(
    pod: dict[str, Any], *, uid: str = "0b5a-uid", operation: str = "CREATE"
) -> dict[str, Any]:
    """An AdmissionReview v1 as the API server sends it for a pod."""
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "requestKind": {"group": "", "version": "v1", "kind": "Pod"},
            "requestResource": {"group": "", "version": "v1", "resource": "pods"},
            "namespace": (pod.get("metadata") or {}).get("namespace", "team-a"),
            "operation": operation,
            "userInfo": {"username": "system:serviceaccount:jobset-system:jobset-controller"},
            "object": pod,
            "oldObject": None,
            "dryRun": False,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
        },
    }


class RunningWebhook:
    """Context manager: the server on 127.0.0.1 (free ports), serving from its threads."""

    def __init__(self, files: ServerFiles, **options: Any) -> None:
        settings: dict[str, Any] = {
            "host": "127.0.0.1",
            "port": 0,
            "metrics_host": "127.0.0.1",
            "metrics_port": 0,
            **options,
        }
        self.files = files
        self.options = WebhookOptions(cert_file=files.cert, key_file=files.key, **settings)
        self.server = WebhookServer(self.options)

    def __enter__(self) -> RunningWebhook:
        self.server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.stop()

    def connection(self, ca: Path | None = None) -> http.client.HTTPSConnection:
        context = ssl.create_default_context(cafile=str(ca or self.files.ca))
        return http.client.HTTPSConnection(
            "127.0.0.1", self.server.port, context=context, timeout=10
        )

    def post(self, body: bytes | dict[str, Any], path: str = MUTATE_PATH) -> tuple[int, Any]:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        conn = self.connection()
        try:
            conn.request("POST", path, body=data, headers={"Content-Type": "application/json"})
            response = conn.getresponse()
            raw = response.read()
        finally:
            conn.close()
        try:
            return response.status, json.loads(raw)
        except ValueError:
            return response.status, raw

    def peer_serial(self) -> int:
        conn = self.connection()
        try:
            conn.connect()
            assert conn.sock is not None
            der = conn.sock.getpeercert(binary_form=True)
        finally:
            conn.close()
        assert der is not None
        return x509.load_der_x509_certificate(der).serial_number

    def get(self, path: str) -> tuple[int, str]:
        conn = http.client.HTTPConnection("127.0.0.1", self.server.metrics_port, timeout=10)
        try:
            conn.request("GET", path)
            response = conn.getresponse()
            return response.status, response.read().decode()
        finally:
            conn.close()
