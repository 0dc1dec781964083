"""Say which Kubernetes client configuration was looked for, when none could be loaded.

The client's own message ("Invalid kube-config file. No configuration found.") names neither the
file it tried nor how to give another. The modules that build API clients (the live snapshot
loader, the controller's adapter, the extender's source) raise `ClusterError(config_error(...))`
instead. No kubernetes import here: the default location is the client's documented one.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DEFAULT_KUBECONFIG", "config_error"]

DEFAULT_KUBECONFIG = "~/.kube/config"


def config_error(kubeconfig: str | None, error: Exception) -> str:
    """One line: what was tried (the file given; else in-cluster, then $KUBECONFIG or
    ~/.kube/config) and how to give a configuration."""
    detail = " ".join(str(error).split()) or type(error).__name__
    if kubeconfig:
        return f"cannot load the Kubernetes configuration from {kubeconfig}: {detail}"
    env = os.environ.get("KUBECONFIG", "")
    tried = f"$KUBECONFIG ({env})" if env else str(Path(DEFAULT_KUBECONFIG).expanduser())
    exists = any(Path(p).expanduser().exists() for p in (env.split(os.pathsep) if env else [tried]))
    state = detail if exists else "no such file"
    return (
        f"no Kubernetes configuration: not running in a cluster, and {tried}: {state}; "
        "give one with --kubeconfig PATH (or set KUBECONFIG)"
    )
