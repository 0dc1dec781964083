"""Assembles a running extender from its options: plan source, optional binder, HTTP server.

`placer extender` (placer/commands/extender.py) only turns flags into `ServiceOptions` and calls
`serve`; tests and the benchmark call `build` and `start()` the result. The Kubernetes client is
imported only when an option needs it (watching, binding), so `--plan` runs need no cluster.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from placer.model.errors import InputError
from placer.runtime import freeze_long_lived
from placer.serving import ServingLimits, server_ssl_context
from plugins.extender.server import Binder, ExtenderApp, ExtenderServer
from plugins.extender.sources import store_from_files
from plugins.extender.store import DEFAULT_GUARD_S, ExtenderStore

__all__ = ["Service", "ServiceOptions", "build", "serve"]

log = logging.getLogger(__name__)


class ServiceOptions(BaseModel):
    model_config = ConfigDict(frozen=True)
    host: str = "0.0.0.0"
    port: int = 8888
    plan: Path | None = None
    """A `placer plan --format json` file; without it, watch the JobSets' assignments."""
    cluster: tuple[Path, ...] = ()
    """Snapshot files giving node labels (domain membership) in `--plan` mode."""
    kubeconfig: str | None = None
    """Client configuration for watching and binding; None: in-cluster, then ~/.kube/config."""
    pinned: bool = False
    """`--plan` mode: hold planned pods to their planned nodes, not just to their domains."""
    reservation_guard_s: float = DEFAULT_GUARD_S
    ledger_namespace: str | None = None
    """Watch mode: also watch the controller's placement ledger here, for its reservations."""
    """Reservations starting within this keep pods that are not placer's out of their domains."""
    bind: bool = False
    budget_s: float = 1.0
    max_body_bytes: int = ServingLimits().max_body_bytes
    """Largest request body; sized for node names (`nodeCacheCapable: true`), see the README."""
    max_in_flight: int = ServingLimits().max_in_flight
    """Requests decided at once; the next gets 503 (probes are never refused)."""
    tls_cert_file: Path | None = None
    tls_key_file: Path | None = None
    """Serve HTTPS with this PEM certificate chain and key (`enableHTTPS: true` in the stanza)."""

    def limits(self) -> ServingLimits:
        return ServingLimits(
            max_body_bytes=self.max_body_bytes,
            max_in_flight=self.max_in_flight,
            max_in_flight_bytes=max(ServingLimits().max_in_flight_bytes, self.max_body_bytes),
        )


class Service:
    """A built extender: the server plus whatever keeps its state current."""

    def __init__(self, server: ExtenderServer, stop_source: Callable[[], None] | None = None):
        self.server = server
        self._stop_source = stop_source

    def start(self) -> Service:
        self.server.start()
        return self

    def close(self) -> None:
        if self._stop_source is not None:
            self._stop_source()
        self.server.shutdown()


def build(options: ServiceOptions) -> Service:
    """Load or start the plan source, make the binder, open the port (not yet serving)."""
    stop_source: Callable[[], None] | None = None
    if options.plan is not None:
        store = store_from_files(
            options.plan,
            options.cluster,
            pinned=options.pinned,
            guard_s=options.reservation_guard_s,
        )
    else:
        if options.cluster:
            raise InputError(
                "--cluster needs --plan (the watch reads node labels itself)",
                field="--cluster",
                code="usage",
            )
        from placer.model.kube.client import api_client
        from plugins.extender.kube_source import KubeWatcher

        store = ExtenderStore(synced=False, guard_s=options.reservation_guard_s)
        watcher = KubeWatcher(
            store, api_client(options.kubeconfig), ledger_namespace=options.ledger_namespace
        ).start()
        stop_source = watcher.stop
    binder: Binder | None = None
    if options.bind:
        from placer.model.kube.client import api_client
        from plugins.extender.kube_source import KubeBinder

        binder = KubeBinder(api_client(options.kubeconfig))
    # With a Node watch the store has every node's labels; learning them again from each full
    # NodeList request would only cost time. Without one (--plan) the requests are a source.
    app = ExtenderApp(
        store, binder, learn_labels=options.plan is not None, budget_s=options.budget_s
    )
    try:
        limits = options.limits()
    except ValueError as e:
        raise InputError(str(e), field="--max-body-bytes/--max-in-flight", code="usage") from e
    context = None
    if options.tls_cert_file is not None or options.tls_key_file is not None:
        if options.tls_cert_file is None or options.tls_key_file is None:
            raise InputError("give both or neither", field="--tls-cert-file/--tls-key-file")
        context = server_ssl_context(options.tls_cert_file, options.tls_key_file)
    try:
        server = ExtenderServer(app, options.host, options.port, limits=limits, ssl_context=context)
    except OSError as e:
        if stop_source is not None:
            stop_source()
        raise InputError(
            f"cannot listen on {options.host}:{options.port}: {e.strerror or e}",
            field="--port",
            code="listen",
        ) from e
    return Service(server, stop_source)


def serve(options: ServiceOptions, announce: Callable[[str], None] = log.info) -> None:
    """Build and serve until SIGTERM or SIGINT; then stop accepting, answer the requests in
    flight, and return (the CLI exits 0)."""
    service = build(options)
    # Everything loaded so far (modules, the client, the plan) lives as long as the process: move
    # it out of the collector's reach, so full collections, which otherwise walk it all and stall
    # a request for tens of milliseconds, stay short.
    freeze_long_lived()
    announce(
        f"placer extender: serving {service.server.listening} (filter, prioritize"
        f"{', bind' if options.bind else ''}; /healthz, /readyz)"
    )
    try:
        service.server.serve_until_signalled()
        announce("placer extender: stopped after draining")
    finally:
        service.close()
