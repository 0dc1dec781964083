"""Leader-election settings: which Lease, who we are, and how fast leadership is renewed.

Plain data shared by the adapter interface (which runs the election) and `leader.py` (which runs
the work while leading); the defaults read where the controller runs (its pod and namespace).
"""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["LeaderSettings", "default_identity", "default_namespace"]

_SA_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def default_identity() -> str:
    """Pod name (the hostname in a pod) plus a random suffix: unique across restarts."""
    return f"{socket.gethostname()}-{uuid.uuid4().hex[:6]}"


def default_namespace() -> str:
    """The namespace the controller runs in: $POD_NAMESPACE, the service account's, else default."""
    if os.environ.get("POD_NAMESPACE"):
        return os.environ["POD_NAMESPACE"]
    try:
        return _SA_NAMESPACE.read_text().strip() or "placer-system"
    except OSError:
        return "placer-system"


@dataclass(frozen=True)
class LeaderSettings:
    lease: str = "placer-controller"
    namespace: str = field(default_factory=default_namespace)
    identity: str = field(default_factory=default_identity)
    lease_duration_s: int = 15
    renew_deadline_s: int = 10
    retry_period_s: int = 2
