"""Committing into the placement ledger: the compare-and-swap and the fence."""

from __future__ import annotations

import pytest

from placer.controller.act.commit import commit
from placer.controller.act.memory_adapter import MemoryCluster
from placer.controller.decide.ledger import (
    Deposed,
    Fence,
    LedgerChange,
    LedgerEntry,
    entry_key,
    read_ledger,
)
from tests.controller.builders import on_blocks

NS = "placer-system"


def test_commit_requires_the_version_it_was_decided_on() -> None:
    cluster = MemoryCluster()
    empty = read_ledger(None, NS)
    entry = LedgerEntry(owner="ns/a", uid="u", record=on_blocks("ns/a", {"a-w-0": "b0"}))
    change = LedgerChange(put={entry_key("placement", "ns/a"): entry})
    first = commit(cluster, empty, change)
    assert first.committed and set(first.ledger.entries) == {"placement.ns.a"}
    again = commit(cluster, empty, change)  # decided before the first commit: refused
    assert not again.committed and again.conflict
    assert again.ledger.resource_version == first.ledger.resource_version
    fenced = LedgerChange(fence=Fence(holder="me", term=5))
    with pytest.raises(Deposed):
        commit(cluster, first.ledger, fenced)
