"""Preemption's pure decisions in the controller: the eviction entry, where an eviction stands,
and the commit that makes one (preempting.py, ledgerplan.ledger_change)."""

from __future__ import annotations

from typing import Any

import pytest

from placer.controller.act.memory_adapter import MemoryCluster
from placer.controller.decide.observe.domains import DomainIndex
from placer.controller.decide.observe.snapshot import planning_snapshot
from placer.controller.decide.observe.survey import jobset_pods, survey
from placer.controller.decide.preempting import Victim, evictable_snapshot, eviction_steps
from placer.controller.decide.records.ledger import (
    EVICTION,
    PLACEMENT,
    Ledger,
    LedgerEntry,
    entry_key,
)
from placer.controller.decide.records.writes import SuspendJobSet
from placer.controller.decide.review.ledgerplan import ledger_change, view_ledger
from placer.model.assignment import ASSIGNMENT_ANNOTATION, Assignment
from placer.model.preemption import PREEMPTED_AT, PreemptionFacts, format_stamp
from tests.controller.builders import add_jobset, on_blocks, state_of, tpu_cluster

AT = 1_800_000_000.0


def eviction(victim: str = "default/low", uid: str = "", **update: Any) -> LedgerEntry:
    return LedgerEntry(
        kind=EVICTION,
        owner=victim,
        uid=uid,
        record=Assignment(jobset=victim, jobs={}),
        at=AT,
        beneficiaries=("default/high",),
        note="priority 0, 16 accelerators; 1.3 chip-hours: 0.0 of work lost, 1.3 to restart",
        **update,
    )


def test_an_eviction_entry_reads_back_exactly_and_holds_nothing() -> None:
    entry = eviction(uid="u-1")
    assert LedgerEntry.from_text(entry.to_text()) == entry
    assert entry.record.jobs == {}


def running_low(cluster: MemoryCluster) -> None:
    """`low` (priority 0, one child Job of two pods) running on block b0's first node."""
    add_jobset(cluster, "low", jobs=1, pods=2, priority=0)

    def run(pod: dict[str, Any]) -> None:
        pod["spec"]["nodeName"] = "n-0-0"
        pod["status"]["phase"] = "Running"

    for p in cluster.objects("pods"):
        cluster.mutate("pods", p["metadata"]["name"], run, namespace="default")


@pytest.mark.parametrize(
    ("suspend", "stamped", "pods", "high_on", "phase"),
    [
        pytest.param(False, False, "running", "b0", "suspend", id="committed-not-suspended"),
        pytest.param(True, True, "running", "b0", "drain", id="suspended-pods-left"),
        pytest.param(True, True, "none", "b0", "resume", id="suspended-pods-gone"),
        pytest.param(False, True, "none", "b0", "done", id="resumed"),
        pytest.param(False, True, "running", "b1", "done", id="resumed-pods-elsewhere"),
        pytest.param(False, True, "running", "b0", "drain", id="resumed-old-pods-on-its-block"),
    ],
)
def test_where_an_eviction_stands(
    suspend: bool, stamped: bool, pods: str, high_on: str, phase: str
) -> None:
    """Each step is read from the ledger entry and the cluster alone (module docstring)."""
    cluster = tpu_cluster(blocks=2)
    add_jobset(cluster, "low", jobs=1, pods=2, priority=0)
    low = cluster.get("jobsets", "low", namespace="default")

    def edit(obj: dict[str, Any]) -> None:
        obj["spec"]["suspend"] = suspend
        if stamped:
            obj["metadata"].setdefault("annotations", {})[PREEMPTED_AT] = format_stamp(AT)

    cluster.mutate("jobsets", "low", edit, namespace="default")
    if pods == "none":
        for p in cluster.objects("pods"):
            cluster.delete("pods", p["metadata"]["name"], namespace="default")
    else:

        def run(pod: dict[str, Any]) -> None:
            pod["spec"]["nodeName"] = "n-0-0"  # low runs on block b0
            pod["status"]["phase"] = "Running"

        for p in cluster.objects("pods"):
            cluster.mutate("pods", p["metadata"]["name"], run, namespace="default")
    state = state_of(cluster)
    index = DomainIndex(planning_snapshot(state, binding="gate"))
    records = {"default/high": on_blocks("default/high", {"high-w-0": high_on})}
    entries = {entry_key(EVICTION, "default/low"): eviction(uid=low["metadata"]["uid"])}
    found = eviction_steps(entries, state, records, index, jobset_pods(state))
    [step] = found.steps
    assert step.phase == phase
    waits = phase in ("suspend", "drain") and high_on == "b0"
    assert found.waiting == ({"default/high": ("default/low",)} if waits else {})
    assert bool(found.lent) == waits
    assert found.done == (frozenset(entries) if phase == "done" else frozenset())


def test_an_eviction_of_a_deleted_victim_is_done_once_its_pods_left() -> None:
    cluster = tpu_cluster(blocks=2)
    state = state_of(cluster)
    index = DomainIndex(planning_snapshot(state, binding="gate"))
    entries = {entry_key(EVICTION, "default/low"): eviction(uid="gone")}
    found = eviction_steps(entries, state, {}, index, jobset_pods(state))
    assert [s.phase for s in found.steps] == ["done"]


def _committed_low(cluster: Any) -> tuple[Ledger, Any, Any]:
    add_jobset(cluster, "low", jobs=2, pods=2, priority=0)
    add_jobset(cluster, "high", jobs=1, pods=2, priority=100)
    state = state_of(cluster)
    index = DomainIndex(planning_snapshot(state, binding="gate"))
    low = on_blocks("default/low", {"low-w-0": "b0", "low-w-1": "b1"})
    ledger = Ledger(
        namespace="placer-system",
        resource_version="1",
        entries={entry_key(PLACEMENT, "default/low"): LedgerEntry(owner="default/low", record=low)},
    )
    managed = survey(state, binding="gate", ledger=ledger)
    return ledger, (state, managed), index


def test_one_commit_releases_the_victim_records_its_eviction_and_places_the_beneficiary() -> None:
    cluster = tpu_cluster(blocks=2)
    ledger, (state, managed), index = _committed_low(cluster)
    view = view_ledger(ledger, state, managed)
    high = on_blocks("default/high", {"high-w-0": "b0"})
    change, refused = ledger_change(
        ledger,
        view,
        managed,
        {"default/high": high},
        index,
        evictions={"default/low": eviction()},
    )
    assert refused == {}
    assert change.remove == {entry_key(PLACEMENT, "default/low")}
    assert sorted(change.put) == [
        entry_key(EVICTION, "default/low"),
        entry_key(PLACEMENT, "default/high"),
    ]


def test_an_eviction_whose_beneficiary_is_refused_is_not_made() -> None:
    """The beneficiary's placement clashes with another entry: the victim keeps its placement."""
    cluster = tpu_cluster(blocks=2)
    ledger, (state, managed), index = _committed_low(cluster)
    other = LedgerEntry(owner="other/x", record=on_blocks("other/x", {"x-w-0": "b0"}))
    ledger = Ledger(
        namespace=ledger.namespace,
        resource_version="2",
        entries={**ledger.entries, entry_key(PLACEMENT, "other/x"): other},
    )
    view = view_ledger(ledger, state, managed)
    high = on_blocks("default/high", {"high-w-0": "b0"})
    change, refused = ledger_change(
        ledger, view, managed, {"default/high": high}, index, evictions={"default/low": eviction()}
    )
    assert list(refused) == ["default/high"]
    assert change.put == {} and entry_key(PLACEMENT, "default/low") not in change.remove


def test_a_jobset_being_evicted_holds_nothing_and_is_not_planned() -> None:
    """Its record annotation may still be there (the suspend not written yet): ignored."""
    cluster = tpu_cluster(blocks=2)
    add_jobset(cluster, "low", jobs=1, pods=2, priority=0)
    ledger = Ledger(
        namespace="placer-system",
        resource_version="1",
        entries={entry_key(EVICTION, "default/low"): eviction()},
    )
    state = state_of(cluster)
    [ms] = survey(state, binding="gate", ledger=ledger)
    assert ms.evicting and ms.assignment is None
    view = view_ledger(ledger, state, [ms])
    assert view.foreign == {} and list(view.evictions) == [entry_key(EVICTION, "default/low")]


def test_suspending_is_one_patch_and_a_rerun_writes_nothing() -> None:
    cluster = tpu_cluster(blocks=1)
    obj = add_jobset(cluster, "low", jobs=1, pods=2, priority=0)
    obj["metadata"]["annotations"][ASSIGNMENT_ANNOTATION] = "{}"
    write = SuspendJobSet.evict("default/low", obj, AT)
    patch = write.patch()
    assert patch["spec"] == {"suspend": True}
    assert patch["metadata"]["annotations"] == {
        PREEMPTED_AT: format_stamp(AT),
        ASSIGNMENT_ANNOTATION: None,
    }
    done = {**obj, "metadata": {**obj["metadata"], "annotations": {PREEMPTED_AT: format_stamp(AT)}}}
    assert write.rebase(done) is None


def test_the_solver_sees_a_victim_on_its_whole_domain_and_everyone_else_protected() -> None:
    """A victim whose pods use one node of its two-node block frees the whole block when
    evicted; a running JobSet that is not eligible (another's, or protected) is never a victim."""
    cluster = tpu_cluster(blocks=2)
    add_jobset(cluster, "low", jobs=1, pods=1, priority=0)
    add_jobset(cluster, "other", jobs=1, pods=1, priority=0)

    def bind(name: str, node: str) -> None:
        for p in cluster.objects("pods"):
            if p["metadata"]["labels"]["jobset.sigs.k8s.io/jobset-name"] == name:

                def run(pod: dict[str, Any]) -> None:
                    pod["spec"]["nodeName"] = node
                    pod["spec"].pop("schedulingGates", None)
                    pod["status"]["phase"] = "Running"

                cluster.mutate("pods", p["metadata"]["name"], run, namespace="default")

    bind("low", "n-0-0")
    bind("other", "n-1-0")
    state = state_of(cluster)
    snapshot = planning_snapshot(state, binding="gate")
    index = DomainIndex(snapshot)
    victims = {"default/low": Victim(uid="u", facts=PreemptionFacts(checkpoint_interval_s=600))}
    records = {"default/low": on_blocks("default/low", {"low-w-0": "b0"}).jobs}
    seen = evictable_snapshot(snapshot, index, victims, records)
    nodes = seen.by_name()
    assert "default/low" in nodes["n-0-1"].jobsets  # the node its pod does not use
    assert nodes["n-0-1"].jobset_usage["default/low"].priority == 0
    assert seen.running["default/low"].preemption.checkpoint_interval_s == 600
    assert seen.running["default/other"].preemption.preemptible is False
