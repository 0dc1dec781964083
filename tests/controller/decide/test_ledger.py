"""The placement ledger's pure rules: entries read back exactly, clashes compared node by node."""

from __future__ import annotations

import pytest

from placer.controller.decide.observe.domains import DomainIndex
from placer.controller.decide.observe.snapshot import planning_snapshot
from placer.controller.decide.records.ledger import LedgerEntry
from placer.controller.decide.review.ledgerplan import exclusive_clashes
from placer.model.assignment import Assignment, JobAssignment
from placer.model.plan import DomainRef
from tests.controller.builders import BLOCK, on_blocks, state_of, tpu_cluster


def test_exclusive_clashes_compare_nodes_across_levels() -> None:
    cluster = tpu_cluster(blocks=2)
    index = DomainIndex(planning_snapshot(state_of(cluster), binding="gate"))
    block = on_blocks("ns/a", {"a-w-0": "b0"})
    host = Assignment(
        jobset="ns/b",
        jobs={
            "b-w-0": JobAssignment(
                domain=DomainRef(
                    key="kubernetes.io/hostname",
                    value="n-0-1",
                    path=[(BLOCK, "b0"), ("kubernetes.io/hostname", "n-0-1")],
                )
            )
        },
    )
    entries = {
        "placement.ns.a": LedgerEntry(owner="ns/a", record=block),
        "placement.ns.b": LedgerEntry(owner="ns/b", record=host),
    }
    assert exclusive_clashes(entries, index) == [("placement.ns.a", "placement.ns.b", "n-0-1")]
    elsewhere = on_blocks("ns/b", {"b-w-0": "b1"})
    entries["placement.ns.b"] = LedgerEntry(owner="ns/b", record=elsewhere)
    assert exclusive_clashes(entries, index) == []


def test_child_jobs_without_an_exclusive_domain_may_share_a_node() -> None:
    """Pods pinned to nodes without an exclusive domain (`nodes` only) share nodes as the
    scheduler lets any pods share them: two such entries on one node are no clash; an exclusive
    one there is."""
    cluster = tpu_cluster(blocks=2)
    index = DomainIndex(planning_snapshot(state_of(cluster), binding="gate"))
    shared = {
        f"placement.ns.{k}": LedgerEntry(
            owner=f"ns/{k}",
            record=Assignment(
                jobset=f"ns/{k}", jobs={f"{k}-w-0": JobAssignment(nodes={0: "n-0-1"})}
            ),
        )
        for k in ("a", "b")
    }
    assert exclusive_clashes(shared, index) == []
    shared["placement.ns.c"] = LedgerEntry(owner="ns/c", record=on_blocks("ns/c", {"c-w-0": "b0"}))
    assert ("placement.ns.a", "placement.ns.c", "n-0-1") in exclusive_clashes(shared, index)


@pytest.mark.parametrize(
    "job",
    [
        pytest.param(
            JobAssignment(domain=DomainRef(key=BLOCK, value="b0", path=[(BLOCK, "b0")])),
            id="path",
        ),
        pytest.param(JobAssignment(domain=DomainRef(key=BLOCK, value="b0")), id="no-path"),
        pytest.param(JobAssignment(nodes={0: "n-0-0", 1: "n-0-1"}), id="nodes-only"),
        pytest.param(
            JobAssignment(
                domain=DomainRef(key=BLOCK, value="b1", path=[(BLOCK, "b1")]), nodes={0: "n-1-0"}
            ),
            id="pinned",
        ),
    ],
)
def test_ledger_entries_read_back_exactly(job: JobAssignment) -> None:
    """An entry must read back equal, or a record read from the ledger would be rewritten on
    every cycle (and a commit compared wrongly)."""
    record = Assignment(jobset="ns/a", jobs={"a-w-0": job}, pinned=bool(job.nodes), plan_id="p")
    entry = LedgerEntry(owner="ns/a", uid="u", record=record)
    assert LedgerEntry.from_text(entry.to_text()) == entry
    assert len(entry.to_text()) < len(record.to_annotation()) + 60
