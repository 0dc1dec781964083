"""`ExtenderStore`: the extender's mutable, thread-safe plan state, which hands out `StateView`s.

The sources write to it (`sources.store_from_files` for `--plan`/`--cluster`, `kube_source` for the
watch, `embedded` for a controller's cache), replacing the plan's rows, the reservation rows and
the nodes' labels; every request (`server`) reads one immutable `StateView` (state.py) from it, so
a decision never sees half of an update. Views are rebuilt lazily, on the first read after a
change, because a watch may deliver thousands of node events between two scheduling requests; and
again when the clock brings a reservation's start within the guard (`guard_s`), the moment it
begins keeping other pods out.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence

from plugins.extender.state import JobEntry, Labels, StateView

__all__ = ["DEFAULT_GUARD_S", "ExtenderStore"]

DEFAULT_GUARD_S = 1800.0
"""`--reservation-guard` default: how soon a reservation's start must be to keep other pods out."""


class ExtenderStore:
    """The thread-safe, mutable plan state; sources write, requests read `view()`."""

    def __init__(
        self,
        *,
        synced: bool = True,
        guard_s: float = DEFAULT_GUARD_S,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._lock = threading.Lock()
        self.guard_s = guard_s
        """A reservation keeps other pods out once its start is at most this far away (one
        whose JobSet is past `--max-wait`: at once)."""
        self._clock = clock
        self._reservations: tuple[JobEntry, ...] = ()
        self._guard_changes_at = math.inf
        """When the next reservation enters the guard: the view is rebuilt then."""
        self._jobsets: dict[str, tuple[JobEntry, ...]] = {}
        self._labels: dict[str, dict[str, str]] = {}
        self._synced = synced
        self._version = 0
        self._view: StateView | None = None

    def _changed(self) -> None:
        self._version += 1
        self._view = None

    # -- plan ------------------------------------------------------------------------------------

    def replace_plan(self, entries: Iterable[JobEntry]) -> None:
        """Swap the whole plan (a `--plan` file, or a controller that re-planned everything)."""
        grouped: dict[str, list[JobEntry]] = {}
        for e in entries:
            grouped.setdefault(e.jobset, []).append(e)
        with self._lock:
            self._jobsets = {k: tuple(v) for k, v in grouped.items()}
            self._changed()

    def set_jobset(self, jobset: str, entries: Sequence[JobEntry]) -> None:
        """Replace one JobSet's rows (`namespace/name`); no rows releases its domains."""
        with self._lock:
            old = self._jobsets.get(jobset, ())
            if not entries:
                if jobset in self._jobsets:
                    del self._jobsets[jobset]
                    self._changed()
                return
            if tuple(entries) != old:
                self._jobsets[jobset] = tuple(entries)
                self._changed()

    def replace_reservations(self, entries: Iterable[JobEntry]) -> None:
        """Swap every reservation row (rows with `reserved_from`)."""
        rows = tuple(sorted(entries, key=lambda e: (e.jobset, e.job)))
        with self._lock:
            if rows != self._reservations:
                self._reservations = rows
                self._changed()

    def jobsets(self) -> list[str]:
        with self._lock:
            return sorted(self._jobsets)

    # -- nodes -----------------------------------------------------------------------------------

    def set_node(self, name: str, labels: Labels) -> None:
        self.learn_nodes({name: labels})

    def remove_node(self, name: str) -> None:
        with self._lock:
            if self._labels.pop(name, None) is not None:
                self._changed()

    def learn_nodes(self, labels: Mapping[str, Labels]) -> bool:
        """Record the labels of the given nodes (others untouched); True if anything changed."""
        with self._lock:
            changed = False
            for name, node_labels in labels.items():
                if self._labels.get(name) != node_labels:
                    self._labels[name] = dict(node_labels)
                    changed = True
            if changed:
                self._changed()
            return changed

    def replace_nodes(self, labels: Mapping[str, Labels]) -> None:
        """Swap all node labels (after a full relist)."""
        with self._lock:
            self._labels = {n: dict(v) for n, v in labels.items()}
            self._changed()

    def known_nodes(self) -> int:
        with self._lock:
            return len(self._labels)

    # -- readiness -------------------------------------------------------------------------------

    @property
    def synced(self) -> bool:
        return self._synced

    def set_synced(self, synced: bool) -> None:
        with self._lock:
            if synced != self._synced:
                self._synced = synced
                self._changed()

    def view(self) -> StateView:
        """The current picture; built on the first read after a change, then shared."""
        now = self._clock()
        view = self._view
        if view is not None and now < self._guard_changes_at:
            return view
        with self._lock:
            if self._view is None or now >= self._guard_changes_at:
                entries = [e for rows in self._jobsets.values() for e in rows]
                horizon = now + self.guard_s
                later = [r.reserved_from or 0.0 for r in self._reservations if not r.past_max_wait]
                entries += [
                    r
                    for r in self._reservations
                    if r.past_max_wait or (r.reserved_from or 0.0) <= horizon
                ]
                self._guard_changes_at = min(
                    (t - self.guard_s for t in later if t > horizon), default=math.inf
                )
                self._view = StateView(
                    entries, self._labels, synced=self._synced, version=self._version
                )
            return self._view
