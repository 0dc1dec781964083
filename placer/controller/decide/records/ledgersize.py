"""The placement ledger's size: what fits the one ConfigMap it lives in.

The API server refuses a ConfigMap whose values add up to more than 1 MiB (`ValidateConfigMap`,
`MaxSecretSize`, k8s.io/kubernetes v1.36.3). A commit that would grow the ledger past that is
answered 422 as a whole, releases and all, and a controller that sent it again every cycle would
place nothing and free nothing until the queue emptied. So the round's change is fitted to the
limit before it is sent: releases and the records it adopts always go in (they are the cluster's
state); new placements past the limit are refused, the last in the queue first, and stay pending
with that reason; new reservations past it are not written, the farthest first (a reservation is
a promise, not a hold). Each refused placement comes back once finished JobSets free room.
"""

from __future__ import annotations

from collections.abc import Mapping, Set

from placer.controller.decide.records.ledger import Ledger, LedgerEntry

__all__ = ["FULL", "MAX_LEDGER_BYTES", "LedgerBytes"]

MAX_LEDGER_BYTES = 1_048_576
"""The most a ConfigMap's values may hold together, in bytes (the API server's `MaxSecretSize`)."""

FULL = (
    "the placement ledger is full: the API server keeps a ConfigMap within 1 MiB; it is placed "
    "once finished JobSets free room"
)


class LedgerBytes:
    """The ledger's size as a change would leave it, kept as entries are dropped from `put`."""

    def __init__(self, ledger: Ledger, put: Mapping[str, LedgerEntry], remove: Set[str]) -> None:
        self._put = {k: len(e.to_text().encode()) for k, e in put.items()}
        kept = sum(n for k, n in ledger.sizes.items() if k not in remove and k not in put)
        self._stored = {k: n for k, n in ledger.sizes.items() if k not in remove}
        self.total = kept + sum(self._put.values())

    @property
    def over(self) -> bool:
        return self.total > MAX_LEDGER_BYTES

    def drop(self, key: str) -> None:
        """`key` is no longer put: its new value leaves, the stored one (if kept) stays."""
        self.total -= self._put.pop(key)
        self.total += self._stored.get(key, 0)
