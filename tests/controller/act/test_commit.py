"""Committing into the placement ledger: the compare-and-swap and the fence."""

from __future__ import annotations

import pytest

from placer.controller.act.commit import commit, confirm_gone
from placer.controller.act.executor import RetryPolicy
from placer.controller.act.memory_adapter import MemoryCluster
from placer.controller.decide.records.ledger import (
    Deposed,
    Fence,
    LedgerChange,
    LedgerEntry,
    entry_key,
    read_ledger,
)
from placer.model.errors import ClusterError
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


FAST = RetryPolicy(attempts=1, base_delay_s=0.0)


def _change(owner: str = "ns/a") -> LedgerChange:
    entry = LedgerEntry(owner=owner, uid="u", record=on_blocks(owner, {"a-w-0": "b0"}))
    return LedgerChange(put={entry_key("placement", owner): entry})


def test_a_ledger_that_cannot_be_read_after_a_conflict_is_an_error_not_an_empty_ledger() -> None:
    """Another writer committed first (409), and the fresh read fails with a 500: taking the
    failure for "no ledger" would plan the next round on nothing held, so it is raised."""
    cluster = MemoryCluster()
    empty = read_ledger(None, NS)
    commit(cluster, empty, _change("ns/first"))
    cluster.inject("get", "configmaps", 500)
    with pytest.raises(ClusterError) as refused:
        commit(cluster, empty, _change(), policy=FAST, sleep=lambda s: None)
    assert "injected 500" in str(refused.value)


def test_creating_the_ledger_in_a_missing_namespace_is_an_error_not_a_conflict() -> None:
    """A 404 on create means the namespace is missing, not that another writer moved the
    ledger: it is raised at once rather than re-read and retried."""
    cluster = MemoryCluster()
    cluster.inject("create", "configmaps", 404)
    with pytest.raises(ClusterError) as refused:
        commit(cluster, read_ledger(None, NS), _change(), policy=FAST, sleep=lambda s: None)
    assert refused.value.status == 404


def test_a_jobset_recreated_under_the_same_name_is_gone_for_its_old_entry() -> None:
    """The ledger's entry names the uid it was placed for: a JobSet of the same name with
    another uid is a new object, so the old entry is released; the same uid is not gone."""
    cluster = MemoryCluster()
    obj = cluster.create("jobsets", {"metadata": {"name": "a", "namespace": "ns"}})
    uid = obj["metadata"]["uid"]
    entries = {
        "placement.ns.a": LedgerEntry(owner="ns/a", uid=uid, record=on_blocks("ns/a", {})),
        "placement.ns.b": LedgerEntry(owner="ns/a", uid="older", record=on_blocks("ns/a", {})),
    }
    assert confirm_gone(cluster, entries, sleep=lambda s: None) == {"placement.ns.b"}
