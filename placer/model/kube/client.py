"""The one Kubernetes boundary: client setup, error conversion, paged lists and watches.

Every placer module that talks to an API server goes through here: the controller's adapter
(`placer.controller.act.kube_adapter`), the live snapshot loader (`placer.model.snapshots.live`) and
the extender's watch and binder (`plugins.extender.kube_source`). It is the one module that imports
the official `kubernetes` client beyond the leader elector, so the three agree on:

- **which configuration is used**: an explicit kubeconfig file; else the pod's service account
  (in-cluster); else the default kubeconfig ($KUBECONFIG, ~/.kube/config). A configuration that
  cannot be loaded is one `ClusterError` line naming what was tried (`config_error`).
- **what a failure is**: every client, transport or decoding failure becomes a `ClusterError`
  carrying the HTTP status; 408, 429, 500, 502, 503, 504 and connection problems are
  `temporary` (worth retrying), other statuses permanent; 410 Gone is `ResourceExpired`, so a
  watcher relists instead of backing off.
- **how objects travel**: as raw JSON (`_preload_content=False`), never as the client's model
  objects, so fields this client version does not know survive; lists are read in pages of
  `PAGE_SIZE`, as kubectl does; watches carry a server-side timeout and ask for bookmarks.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

import urllib3
import yaml
from kubernetes import client, config, watch
from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException
from kubernetes.config.incluster_config import InClusterConfigLoader

from placer.model.errors import ClusterError, ResourceExpired

__all__ = [
    "CLIENT_ERRORS",
    "DEFAULT_KUBECONFIG",
    "PAGE_SIZE",
    "SERVICE_ACCOUNT_DIR",
    "TEMPORARY_STATUSES",
    "ApiClient",
    "EventType",
    "KubeApis",
    "WatchStop",
    "api_client",
    "api_error",
    "config_error",
    "converted",
    "list_all",
    "read_json",
    "watch_events",
]

Obj = dict[str, Any]
EventType = Literal["ADDED", "MODIFIED", "DELETED", "BOOKMARK"]
_EVENT_TYPES: frozenset[str] = frozenset({"ADDED", "MODIFIED", "DELETED", "BOOKMARK"})

DEFAULT_KUBECONFIG = "~/.kube/config"
"""Where the client looks when neither --kubeconfig nor $KUBECONFIG is given (its documented
default)."""
SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
"""Where a pod's service account token and CA certificate are mounted (in-cluster config)."""
PAGE_SIZE = 500
"""Objects per list call; large clusters are read in pages, as kubectl does."""
TEMPORARY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
"""HTTP statuses worth retrying: a timeout, throttling, or a server that is (re)starting or
overloaded. 501, 505 and the 4xx a request earns (400, 403, 404, 409, 422) are permanent."""
CLIENT_ERRORS: tuple[type[Exception], ...] = (ApiException, urllib3.exceptions.HTTPError, OSError)
"""What a client call raises when the server refuses or cannot be reached (`converted`)."""
_CONFIG_ERRORS = (ConfigException, OSError, ValueError, TypeError, AttributeError, yaml.YAMLError)
"""What loading a configuration raises: the client's own error, an unreadable file, and the
TypeErrors and YAML errors of a file that is not a kubeconfig at all."""


# --- client setup ------------------------------------------------------------------------------


def config_error(kubeconfig: str | None, error: Exception) -> str:
    """One line: what was tried (the file given; else in-cluster, then $KUBECONFIG or
    ~/.kube/config) and how to give a configuration.

    The client's own message ("Invalid kube-config file. No configuration found.") names neither
    the file it tried nor how to give another."""
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


def api_client(kubeconfig: str | None = None) -> ApiClient:
    """A client for the cluster `kubeconfig` names; without one, the pod's service account when
    running in a cluster, else the default kubeconfig, so the same call works in a pod and on a
    laptop. Raises `ClusterError(config_error(...))` when no configuration can be loaded.

    Each client gets its own configuration: the client's process-wide default is never set, so
    two clients of one process never share a server or a token by accident."""
    try:
        if kubeconfig:
            return _from_kubeconfig(kubeconfig)
        try:
            return _in_cluster()
        except ConfigException:
            return _from_kubeconfig(None)
    except _CONFIG_ERRORS as e:
        raise ClusterError(config_error(kubeconfig, e)) from e


def _from_kubeconfig(path: str | None) -> ApiClient:
    # the client's config loaders are unannotated
    api: ApiClient = config.new_client_from_config(config_file=path)  # type: ignore[no-untyped-call]
    return api


def _in_cluster() -> ApiClient:
    """The service account's token (re-read as it rotates) and CA, and the API server's address
    from $KUBERNETES_SERVICE_HOST/PORT; ConfigException when not in a pod."""
    configuration = client.Configuration()
    # unannotated in the client
    loader: Any = InClusterConfigLoader(  # type: ignore[no-untyped-call]
        token_filename=str(SERVICE_ACCOUNT_DIR / "token"),
        cert_filename=str(SERVICE_ACCOUNT_DIR / "ca.crt"),
    )
    loader.load_and_set(configuration)
    return ApiClient(configuration)


class KubeApis:
    """The API groups placer calls, over one `ApiClient`.

    Typed `Any`: placer sends and receives raw JSON, never the client's model classes."""

    def __init__(self, api: ApiClient) -> None:
        self.client = api
        self.core: Any = client.CoreV1Api(api)
        self.custom: Any = client.CustomObjectsApi(api)
        self.scheduling: Any = client.SchedulingV1Api(api)
        self.coordination: Any = client.CoordinationV1Api(api)

    @property
    def host(self) -> str:
        """The API server's URL, to name the source of what was read."""
        return str(self.client.configuration.host)

    def close(self) -> None:
        self.client.close()  # type: ignore[no-untyped-call]  # unannotated in the client


# --- error conversion --------------------------------------------------------------------------


def api_error(action: str, error: Exception) -> ClusterError:
    """The `ClusterError` for a failed client call; `action` says what was being done
    ("listing nodes", "patching pods ml/p") and starts the message."""
    if isinstance(error, ApiException):
        status = int(error.status or 0)
        if not status:  # the client's own refusal (a TLS failure, an unsendable body)
            return ClusterError(f"{action}: {_one_line(error.reason or type(error).__name__)}")
        text = f"{action}: HTTP {status}: {_status_message(error)}"
        if status == 410:
            return ResourceExpired(text)
        return ClusterError(text, status=status, temporary=status in TEMPORARY_STATUSES)
    return ClusterError(f"{action}: {_transport_reason(error)}", temporary=True)


@contextlib.contextmanager
def converted(action: str) -> Iterator[None]:
    """Run a client call; what it raises of `CLIENT_ERRORS` leaves as `api_error(action, e)`."""
    try:
        yield
    except CLIENT_ERRORS as e:
        raise api_error(action, e) from e


def read_json(response: Any, action: str) -> Obj:
    """The JSON object a raw (`_preload_content=False`) response carries; anything else is a
    permanent `ClusterError` (the server is not speaking the Kubernetes API)."""
    try:
        data = json.loads(response.data)
    except ValueError as e:
        raise ClusterError(f"{action}: the server answered invalid JSON: {e}") from e
    if not isinstance(data, dict):
        raise ClusterError(f"{action}: the server answered {type(data).__name__}, not an object")
    return data


def _status_message(error: ApiException) -> str:
    """The `message` of the Status object the server sent, else the HTTP reason phrase."""
    message = str(error.reason or "")
    with contextlib.suppress(ValueError, AttributeError, TypeError):
        message = json.loads(error.body or "{}").get("message") or message
    return _one_line(message)


def _transport_reason(error: Exception) -> str:
    """`cannot connect to HOST:PORT: [Errno 111] Connection refused`, not urllib3's retry story."""
    if isinstance(error, urllib3.exceptions.MaxRetryError):
        reason = error.reason or error
        where = f"{error.pool.host}:{error.pool.port}" if error.pool is not None else "the server"
        text = str(reason).rsplit(": ", 1)[-1] if ": " in str(reason) else str(reason)
        connecting = isinstance(reason, urllib3.exceptions.ConnectTimeoutError)  # or refused
        head = "cannot connect to" if connecting else "no answer from"
        return f"{head} {where}: {_one_line(text)}"
    return f"{type(error).__name__}: {_one_line(str(error))}"


def _one_line(text: str) -> str:
    return " ".join(text.split())


# --- list and watch ----------------------------------------------------------------------------


def list_all(
    call: Callable[..., Any], action: str, *, request_timeout_s: float | None = None, **params: Any
) -> tuple[list[Obj], str]:
    """Every item of list call `call` (a client method; `params` its arguments), page by page,
    and the list's resourceVersion to watch from. A continue token that expired mid-list
    (410) is `ResourceExpired`, as for a watch."""
    items: list[Obj] = []
    token: str | None = None
    while True:
        with converted(action):  # reading the body can fail too: a connection cut mid-list
            response = call(
                limit=PAGE_SIZE,
                _continue=token,
                _preload_content=False,
                _request_timeout=request_timeout_s,
                **params,
            )
            data = read_json(response, action)
        items.extend(data.get("items") or [])
        meta = data.get("metadata") or {}
        token = meta.get("continue") or None
        if not token:
            return items, str(meta.get("resourceVersion") or "")


class WatchStop:
    """A stop signal for watches followed on other threads.

    `set()` ends every open watch at once (the client shuts its socket down, so a thread blocked
    reading a quiet stream returns) instead of at its next event, and every watch started after
    ends before its first event. Also a plain event to wait on between watches."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._open: list[Any] = []

    def set(self) -> None:
        with self._lock:
            self._event.set()
            open_watches = list(self._open)
        for stream in open_watches:
            stream.stop()

    def is_set(self) -> bool:
        return self._event.is_set()

    def wait(self, timeout_s: float) -> bool:
        return self._event.wait(timeout_s)

    def _opened(self, stream: Any) -> None:
        with self._lock:
            self._open.append(stream)

    def _closed(self, stream: Any) -> None:
        with self._lock:
            self._open.remove(stream)


def watch_events(
    call: Callable[..., Any],
    action: str,
    *,
    resource_version: str,
    timeout_s: float,
    on_connected: Callable[[], None] | None = None,
    stop: WatchStop | None = None,
    **params: Any,
) -> Iterator[tuple[EventType, Obj]]:
    """(type, raw object) of each change list call `call` reports after `resource_version`,
    until the server ends the watch after `timeout_s` or `stop` is set. An expired
    `resource_version` raises `ResourceExpired`.

    `on_connected` runs once the server has answered 200, before any event, so a caller can tell
    a healthy, quiet watch from one that keeps failing."""
    stream: Any = watch.Watch()  # type: ignore[no-untyped-call]  # unannotated in the client

    # Deliberately unannotated and without a docstring: the client's `Watch` reads the return
    # type from the function's docstring, and without one it yields raw JSON.
    def connect(**kwargs):  # type: ignore[no-untyped-def]
        response = call(**kwargs)
        if stop is not None and stop.is_set():  # set while connecting: end before any event
            response.close()
        elif on_connected is not None:
            on_connected()
        return response

    kwargs: dict[str, Any] = {
        "timeout_seconds": max(1, int(timeout_s)),
        "allow_watch_bookmarks": True,
        **params,
    }
    if resource_version:
        kwargs["resource_version"] = resource_version
    if stop is not None:
        stop._opened(stream)
    try:
        for event in stream.stream(connect, **kwargs):
            if stop is not None and stop.is_set():
                return
            kind, obj = event.get("type"), event.get("raw_object")
            if kind in _EVENT_TYPES and isinstance(obj, dict):
                yield kind, obj
    except CLIENT_ERRORS as e:
        if stop is not None and stop.is_set():
            return  # its socket was shut down to stop it: not a failure
        raise api_error(action, e) from e
    finally:
        stream.stop()
        if stop is not None:
            stop._closed(stream)
