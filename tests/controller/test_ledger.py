"""The placement ledger: what it holds, adopts and releases, and the commit's precondition."""

from __future__ import annotations

import pytest

from benchmarks.simulate import cluster_sim as sim
from placer.controller.act.commit import claim, commit
from placer.controller.act.memory_adapter import MemoryCluster
from placer.controller.decide.records.ledger import (
    LEDGER_NAME,
    Deposed,
    LedgerChange,
    LedgerEntry,
    entry_key,
    read_ledger,
)
from placer.model.assignment import ASSIGNMENT_ANNOTATION
from tests.controller.builders import (
    add_jobset,
    assert_exclusive,
    block_of,
    controller,
    gated,
    jobset_pods,
    on_blocks,
    record,
    tpu_cluster,
)

NS = "placer-system"


def ledger(cluster: MemoryCluster) -> dict[str, LedgerEntry]:
    return dict(read_ledger(cluster.get("configmaps", LEDGER_NAME, namespace=NS), NS).entries)


def blocks_in_ledger(cluster: MemoryCluster) -> dict[str, set[str]]:
    return {
        e.owner: {j.domain.value for j in e.record.jobs.values() if j.domain}
        for e in ledger(cluster).values()
    }


def test_placements_are_committed_to_the_ledger_before_the_record() -> None:
    cluster = tpu_cluster(blocks=3)
    add_jobset(cluster, "a", jobs=2, namespace="ns1")
    cluster.calls.clear()
    controller(cluster).run_once()
    a = record(cluster, "a", "ns1")
    assert a is not None
    [entry] = ledger(cluster).values()
    assert entry.owner == "ns1/a" and entry.record == a and entry.kind == "placement"
    assert entry.uid == cluster.get("jobsets", "a", namespace="ns1")["metadata"]["uid"]
    order = [c[1] for c in cluster.calls if c[0] in ("create", "patch")]
    assert order.index("configmaps") < order.index("jobsets") < order.index("pods")


def test_sequential_runs_with_different_namespaces_never_share_a_block() -> None:
    """The reported double placement: ns1 then ns2, each run managing one namespace."""
    cluster = tpu_cluster(blocks=3)
    add_jobset(cluster, "x", jobs=2, namespace="ns1")
    add_jobset(cluster, "y", jobs=2, namespace="ns2")
    controller(cluster, namespaces=("ns1",)).run_once()
    report = controller(cluster, namespaces=("ns2",)).run_once()
    assert "ns2/y" in report.planned.unschedulable  # 1 block left, y needs 2
    assert record(cluster, "y", "ns2") is None
    assert all(gated(p) for p in jobset_pods(cluster, "y"))
    assert_exclusive(cluster)


def test_a_stale_writer_loses_the_commit_and_plans_again_from_the_new_ledger() -> None:
    cluster = tpu_cluster(blocks=3)
    add_jobset(cluster, "x", jobs=1, namespace="ns1")
    add_jobset(cluster, "y", jobs=1, namespace="ns2")
    first = controller(cluster, namespaces=("ns1",))
    second = controller(cluster, namespaces=("ns2",))
    first.relist()
    second.relist()  # both decide on the same picture: an empty ledger
    assert first.run_cycle(force_plan=True).committed
    report = second.run_cycle(force_plan=True)
    assert report.committed and report.rounds == 2  # lost once, planned again, committed
    x, y = record(cluster, "x", "ns1"), record(cluster, "y", "ns2")
    assert x is not None and y is not None
    assert block_of(x, "x-w-0") != block_of(y, "y-w-0")
    assert blocks_in_ledger(cluster) == {
        "ns1/x": {block_of(x, "x-w-0")},
        "ns2/y": {block_of(y, "y-w-0")},
    }


def test_a_stale_writer_that_no_longer_fits_writes_nothing() -> None:
    cluster = tpu_cluster(blocks=2)
    add_jobset(cluster, "x", jobs=2, namespace="ns1")
    add_jobset(cluster, "y", jobs=1, namespace="ns2")
    first = controller(cluster, namespaces=("ns1",))
    second = controller(cluster, namespaces=("ns2",))
    first.relist()
    second.relist()
    first.run_cycle(force_plan=True)
    report = second.run_cycle(force_plan=True)
    assert report.rounds == 2 and "ns2/y" in report.planned.unschedulable
    assert [w.op for w in report.writes] == ["event"]  # only the Unschedulable event
    assert record(cluster, "y", "ns2") is None
    assert all(gated(p) for p in jobset_pods(cluster, "y"))


def test_a_record_without_a_ledger_entry_is_adopted_and_held() -> None:
    """Records written before the ledger existed: held for everyone, and adopted by their
    controller."""
    cluster = tpu_cluster(blocks=2)
    add_jobset(cluster, "old", jobs=1, namespace="ns1")
    cluster.patch(
        "jobsets",
        "old",
        {
            "metadata": {
                "annotations": {
                    ASSIGNMENT_ANNOTATION: on_blocks("ns1/old", {"old-w-0": "b0"}).to_annotation()
                }
            }
        },
        namespace="ns1",
    )
    add_jobset(cluster, "new", jobs=2, namespace="ns2")
    report = controller(cluster, namespaces=("ns2",)).run_once()
    assert "ns2/new" in report.planned.unschedulable  # b0 is held by ns1/old's record
    controller(cluster, namespaces=("ns1",)).run_once()
    assert blocks_in_ledger(cluster) == {"ns1/old": {"b0"}}


def test_a_finished_jobset_is_released_by_any_controller() -> None:
    cluster = tpu_cluster(blocks=2)
    add_jobset(cluster, "x", jobs=2, namespace="ns1")
    controller(cluster, namespaces=("ns1",)).run_once()
    sim.finish(cluster, "ns1", "x")
    add_jobset(cluster, "y", jobs=2, namespace="ns2")
    report = controller(cluster, namespaces=("ns2",)).run_once()  # does not manage ns1
    assert list(report.planned.placed) == ["ns2/y"]
    assert set(blocks_in_ledger(cluster)) == {"ns2/y"}


def test_an_entry_whose_jobset_the_cache_does_not_show_is_held_until_confirmed() -> None:
    cluster = tpu_cluster(blocks=2)
    add_jobset(cluster, "y", jobs=2, namespace="ns2")
    slow = controller(cluster, namespaces=("ns2",))
    slow.relist()  # before x exists
    add_jobset(cluster, "x", jobs=1, namespace="ns1")
    controller(cluster, namespaces=("ns1",)).run_once()
    slow.cache.relist(next(s for s in slow.cache.streams if s.kind == "configmaps"))
    report = slow.run_cycle(force_plan=True)  # sees x's entry, not x itself
    assert "ns2/y" in report.planned.unschedulable
    assert set(blocks_in_ledger(cluster)) == {"ns1/x"}  # not released: x exists
    cluster.delete("jobsets", "x", namespace="ns1")
    report = slow.run_cycle(force_plan=True)  # x is confirmed gone by a read
    assert list(report.planned.placed) == ["ns2/y"]
    assert set(blocks_in_ledger(cluster)) == {"ns2/y"}


def test_a_deposed_leader_commits_nothing() -> None:
    cluster = tpu_cluster(blocks=3)
    add_jobset(cluster, "x", jobs=1)
    old = controller(cluster, identity="old")
    old.fence = claim(cluster, NS, "old")
    old.relist()
    new_fence = claim(cluster, NS, "new")  # a newer leader took over
    assert new_fence.term == old.fence.term + 1
    cluster.calls.clear()
    with pytest.raises(Deposed):
        old.run_cycle(force_plan=True)
    # Its one commit was sent on the version it had read, and refused (409).
    assert [c for c in cluster.calls if c[0] in ("patch", "create")] == [
        ("patch", "configmaps", LEDGER_NAME)
    ]
    after = read_ledger(cluster.get("configmaps", LEDGER_NAME, namespace=NS), NS)
    assert after.entries == {} and (after.holder, after.term) == ("new", new_fence.term)
    assert record(cluster, "x") is None and all(gated(p) for p in jobset_pods(cluster, "x"))


def test_a_deposed_leader_stops_its_loop_and_writes_nothing() -> None:
    import threading

    cluster = tpu_cluster(blocks=3)
    old = controller(cluster, identity="old", debounce_s=0.0)
    stop = threading.Event()
    old.fence = claim(cluster, NS, "old")
    claim(cluster, NS, "new")
    add_jobset(cluster, "x", jobs=1)
    thread = threading.Thread(target=old.run, args=(stop,), daemon=True)
    thread.start()
    thread.join(timeout=10)
    assert not thread.is_alive() and old.deposed and stop.is_set()
    assert record(cluster, "x") is None


def test_entries_of_another_kind_are_held_and_never_released_here() -> None:
    """Room for issue 11's reservations: an entry of another kind holds its domains, and placement
    logic neither plans over it nor releases it, whatever its owner's state."""
    cluster = tpu_cluster(blocks=2)
    reservation = LedgerEntry(
        kind="reservation", owner="ns9/gone", record=on_blocks("ns9/gone", {"r-0": "b0"})
    )
    commit(
        cluster,
        read_ledger(None, NS),
        LedgerChange(put={entry_key("reservation", "ns9/gone"): reservation}),
    )
    add_jobset(cluster, "y", jobs=2, namespace="ns1")
    report = controller(cluster).run_once()
    assert "ns1/y" in report.planned.unschedulable
    add_jobset(cluster, "z", jobs=1, namespace="ns1")
    report = controller(cluster).run_once()
    assert list(report.planned.placed) == ["ns1/z"]
    z = record(cluster, "z", "ns1")
    assert z is not None and block_of(z, "z-w-0") == "b1"
    assert "reservation.ns9.gone" in ledger(cluster)


def test_leaders_of_different_leases_share_the_ledger_same_lease_deposes() -> None:
    """Controllers elected on different Leases (split namespaces) each claim their own term and
    neither deposes the other; a newer leader of the same Lease still deposes the older one."""
    cluster = tpu_cluster(blocks=3)
    add_jobset(cluster, "x", jobs=1, namespace="ns1")
    add_jobset(cluster, "y", jobs=1, namespace="ns2")
    a = controller(cluster, identity="a0", namespaces=("ns1",))
    b = controller(cluster, identity="b0", namespaces=("ns2",))
    a.fence = claim(cluster, NS, "a0", lease="placer-system/lease-a")
    b.fence = claim(cluster, NS, "b0", lease="placer-system/lease-b")
    assert (a.fence.term, b.fence.term) == (1, 1)
    a.relist()
    assert list(a.run_cycle(force_plan=True).planned.placed) == ["ns1/x"]
    b.relist()
    assert list(b.run_cycle(force_plan=True).planned.placed) == ["ns2/y"]
    assert_exclusive(cluster)
    ledger = read_ledger(cluster.get("configmaps", LEDGER_NAME, namespace=NS), NS)
    assert {lease: f.holder for lease, f in ledger.fences.items()} == {
        "placer-system/lease-a": "a0",
        "placer-system/lease-b": "b0",
    }
    newer = claim(cluster, NS, "a1", lease="placer-system/lease-a")
    assert newer.term == 2
    add_jobset(cluster, "z", jobs=1, namespace="ns1")
    a.relist()
    with pytest.raises(Deposed, match="under lease placer-system/lease-a"):
        a.run_cycle(force_plan=True)
    add_jobset(cluster, "w", jobs=1, namespace="ns2")
    b.relist()
    assert list(b.run_cycle(force_plan=True).planned.placed) == ["ns2/w"]
