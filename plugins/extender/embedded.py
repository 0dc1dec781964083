"""The extender inside `placer controller --extender-port N`: one process, one cluster picture.

The controller already lists and watches Nodes and JobSets, and records its own assignment writes
the moment the API server accepts them. Instead of a second watch, a follower thread copies what
changed in the controller's cache into an `ExtenderStore`, so the extender enforces an assignment
as soon as the controller has written it. Only the cache's small reading surface is used (the
`ControllerCache` protocol below), so this module does not import the controller.

Copying is incremental: objects in the cache are replaced, never mutated, when they change, so an
identity check per JobSet and per Node finds what to re-read; pod churn (which bumps the cache's
version constantly) costs one pass over two dicts, not a rebuild.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any, Protocol

from placer.model.errors import InputError
from plugins.extender.server import ExtenderApp, ExtenderServer
from plugins.extender.sources import jobset_entries, ledger_reservations, node_labels
from plugins.extender.store import DEFAULT_GUARD_S, ExtenderStore

__all__ = ["CacheFollower", "ControllerCache", "EmbeddedExtender", "serve"]

log = logging.getLogger(__name__)

LEDGER_NAME = "placer-ledger"
"""The controller's placement ledger ConfigMap (`placer.controller.decide.records.ledger`): its
reservations."""


class _State(Protocol):
    # Read-only: the cache's state (`ClusterState`) is a frozen dataclass.
    @property
    def nodes(self) -> Mapping[str, Mapping[str, Any]]: ...

    @property
    def jobsets(self) -> Mapping[tuple[str, str], Mapping[str, Any]]: ...


class ControllerCache(Protocol):
    """What the follower reads of `placer.controller.act.cache.ClusterCache`."""

    relists: int

    @property
    def version(self) -> int: ...

    def state(self) -> _State: ...

    def wait_for_change(self, since: int, timeout_s: float) -> bool: ...


class CacheFollower:
    """Keeps an `ExtenderStore` equal to what a controller cache holds."""

    def __init__(self, cache: ControllerCache, store: ExtenderStore) -> None:
        self.cache = cache
        self.store = store
        self._jobsets: dict[tuple[str, str], Mapping[str, Any]] = {}
        self._nodes: dict[str, Mapping[str, Any]] = {}
        self._ledger_obj: Mapping[str, Any] | None = None

    def _ledger(self, state: Any) -> Mapping[str, Any] | None:
        """The placement ledger ConfigMap in the controller's cache (its reservations)."""
        configmaps: Mapping[tuple[str, str], Mapping[str, Any]] = getattr(state, "configmaps", {})
        for (_, name), obj in configmaps.items():
            if name == LEDGER_NAME:
                return obj
        return None

    def sync_once(self) -> int:
        """Copy what changed since the last call; returns how many objects were re-read."""
        if self.cache.relists == 0:
            return 0  # nothing listed yet: stay not-ready rather than enforce an empty plan
        state = self.cache.state()
        changed = 0
        jobsets = dict(state.jobsets)
        for key, obj in jobsets.items():
            if self._jobsets.get(key) is not obj:
                jobset, rows = jobset_entries(obj)
                self.store.set_jobset(jobset, rows)
                changed += 1
        for key in self._jobsets.keys() - jobsets.keys():
            self.store.set_jobset(f"{key[0]}/{key[1]}", [])
            changed += 1
        ledger = self._ledger(state)
        if ledger is not self._ledger_obj:
            self.store.replace_reservations(ledger_reservations(ledger))
            self._ledger_obj = ledger
            changed += 1
        nodes = dict(state.nodes)
        fresh = {}
        for name, obj in nodes.items():
            if self._nodes.get(name) is not obj:
                fresh[name] = node_labels(obj)[1]
        if fresh:
            self.store.learn_nodes(fresh)
            changed += len(fresh)
        for name in self._nodes.keys() - nodes.keys():
            self.store.remove_node(name)
            changed += 1
        self._jobsets, self._nodes = jobsets, nodes
        if not self.store.synced:
            self.store.set_synced(True)
        return changed

    def run(self, stop: threading.Event, *, min_interval_s: float = 0.05) -> None:
        seen = -1
        while not stop.is_set():
            if self.cache.version != seen:
                seen = self.cache.version
                try:
                    self.sync_once()
                except Exception:  # a bad object must not stop the extender's updates
                    log.exception("copying the controller's cache into the extender failed")
            self.cache.wait_for_change(seen, 1.0)
            stop.wait(min_interval_s)  # batch bursts of events into one pass


class EmbeddedExtender:
    """The running pieces, for a clean stop in tests."""

    def __init__(self, server: ExtenderServer, follower: CacheFollower) -> None:
        self.server = server
        self.follower = follower
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=follower.run, args=(self._stop,), name="placer-extender-follow", daemon=True
        )

    def start(self) -> EmbeddedExtender:
        self._thread.start()
        self.server.start()
        return self

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.server.shutdown()


def serve(
    controller: Any, port: int, *, host: str = "0.0.0.0", guard_s: float = DEFAULT_GUARD_S
) -> EmbeddedExtender:
    """Serve the extender from `controller.cache` on `port` in background threads (the hook
    `placer controller --extender-port` calls); returns at once. `guard_s`: reservations starting
    within it keep pods that are not placer's out of their domains."""
    store = ExtenderStore(synced=False, guard_s=guard_s)
    follower = CacheFollower(controller.cache, store)
    try:
        server = ExtenderServer(ExtenderApp(store, learn_labels=False), host, port)
    except OSError as e:
        raise InputError(
            f"cannot listen on {host}:{port}: {e.strerror or e}",
            field="--extender-port",
            code="listen",
        ) from e
    log.info("scheduler extender on %s, following the controller's cache", server.listening)
    return EmbeddedExtender(server, follower).start()
