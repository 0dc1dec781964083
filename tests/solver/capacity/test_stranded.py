"""Free and stranded accelerators per domain type, and the whole capacity report."""

from __future__ import annotations

from pathlib import Path
from typing import Unpack

from placer.model.cluster import Node
from placer.model.jobset.parse import load_jobsets
from placer.model.options import SolveOptions
from placer.model.snapshots.load import load_snapshot
from placer.solver.capacity import capacity_report
from placer.solver.capacity.stranded import domain_type_usage
from tests.strategies import (
    NODEPOOL,
    TPU_TOPOLOGY,
    PoolOptions,
    cluster,
    jobset,
    node,
    pool,
    resources,
    rjob,
)

OPTIONS = SolveOptions(workers=1, time_limit_s=5)
EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
HALF = {NODEPOOL: "half", TPU_TOPOLOGY: "2x4", "node.kubernetes.io/instance-type": "ct5lp"}


def _typed(name: str, hosts: int, kind: str, **kw: Unpack[PoolOptions]) -> list[Node]:
    return [
        n.model_copy(update={"labels": {**n.labels, "node.kubernetes.io/instance-type": kind}})
        for n in pool(name, hosts, **kw)
    ]


def test_stranded_by_reason_per_domain_type() -> None:
    snap = cluster(
        _typed("free", 2, "ct5lp"),
        _typed("held", 2, "ct5lp", jobsets=["team-z/run"], free=resources(cpu=32, pods=110, tpu=2)),
        [
            node("half-0", labels=HALF),
            node("half-1", labels=HALF, ready=False),
        ],
        _typed("other", 4, "ct6e", topology="4x4"),
        node("cpu-0", tpu=0),
    )
    shape = jobset("t", rjob(node_selector={TPU_TOPOLOGY: "2x4"}))
    rows = domain_type_usage(snap, [shape], OPTIONS)
    by_type = {r.type: r for r in rows}
    small = by_type["ct5lp x2"]
    assert (small.domains, small.accelerators, small.free, small.usable) == (3, 24, 16, 8)
    assert small.stranded == 8
    assert small.stranded_by == {"held": 4, "too-small": 4}
    big = by_type["ct6e x4"]
    assert (big.free, big.usable, big.stranded, big.stranded_by) == (
        16,
        0,
        16,
        {"node-selector": 16},
    )
    assert "cpu" not in " ".join(by_type), "domains without accelerators are left out"


def test_accelerators_outside_every_domain() -> None:
    loose = node("loose-0", labels={})  # no node-pool label: in no domain
    snap = cluster(pool("p0", 2), loose)
    rows = domain_type_usage(snap, [jobset("t")], OPTIONS)
    outside = rows[-1]
    assert (outside.type, outside.free, outside.usable, outside.stranded) == (
        "(in no domain)",
        4,
        0,
        4,
    )


def test_report_puts_copies_mix_and_idle_capacity_together() -> None:
    snap = cluster(pool("p0", 2), pool("p1", 2), pool("p2", 4, topology="4x4"))
    small = jobset("small")
    big = jobset("big", rjob(pods_per_job=4, node_selector={TPU_TOPOLOGY: "4x4"}))
    report = capacity_report(snap, [small, big], OPTIONS)
    assert [(s.jobset, s.copies) for s in report.shapes] == [("team-a/small", 3), ("team-a/big", 1)]
    assert report.mix is not None
    assert [(e.jobset, e.copies) for e in report.mix.entries] == [
        ("team-a/small", 2),
        ("team-a/big", 1),
    ]
    assert report.mix.accelerators == 32
    assert [(r.type, r.free, r.idle_after_mix) for r in report.domain_types] == [
        ("node x2", 16, 0),
        ("node x4", 16, 0),
    ]


def test_a_domain_one_shape_matches_but_is_too_small_for_is_too_small() -> None:
    """Stranded reasons weigh every shape: "not matching" only when no shape's selector matches."""
    snap = cluster(_typed("v5e", 2, "ct5lp"), _typed("v6e", 2, "ct6e", topology="4x4"))
    v5e = jobset("v5e", rjob(node_selector={TPU_TOPOLOGY: "2x4"}))
    v6e = jobset("v6e", rjob(pods_per_job=4, node_selector={TPU_TOPOLOGY: "4x4"}))
    alone = {r.type: r.stranded_by for r in domain_type_usage(snap, [v6e], OPTIONS)}
    assert alone == {"ct5lp x2": {"node-selector": 8}, "ct6e x2": {"too-small": 8}}
    both = {r.type: r.stranded_by for r in domain_type_usage(snap, [v5e, v6e], OPTIONS)}
    assert both == {"ct5lp x2": {}, "ct6e x2": {"too-small": 8}}
    first_v6e = {r.type: r.stranded_by for r in domain_type_usage(snap, [v6e, v5e], OPTIONS)}
    assert first_v6e == both, "the order the shapes are given in does not change the reason"


def test_the_queue_example_strands_v6e_hosts_as_too_small() -> None:
    """The regression of issue 9: the two queue shapes on the bundled TPU cluster."""
    snapshot = load_snapshot([EXAMPLES / "clusters" / "tpu-v5e-v6e.yaml"])
    shapes = load_jobsets(
        [
            EXAMPLES / "jobsets" / "queue" / "01-prod-sft-v5e.yaml",
            EXAMPLES / "jobsets" / "queue" / "02-research-pretrain-v6e.yaml",
        ]
    )
    rows = {r.type: r for r in domain_type_usage(snapshot, shapes, OPTIONS)}
    v6e = rows["ct6e-standard-4t x4"]
    assert v6e.stranded == 12
    assert v6e.stranded_by == {"too-small": 12}
    alone = {r.type: r for r in domain_type_usage(snapshot, shapes[1:], OPTIONS)}
    assert alone["ct6e-standard-4t x4"].stranded_by == {"too-small": 12}


def _loose() -> list[Node]:
    """Accelerator nodes in no node pool (so in no domain), one cordoned, and a CPU node."""
    return [
        node("loose-0", labels={}),
        node("loose-1", labels={}, unschedulable=True),
        node("cpu-0", tpu=0),
    ]


def test_outside_every_domain_a_shared_shape_uses_the_free_chips_of_usable_nodes() -> None:
    """One-chip pods without an exclusive key fit on the loose nodes: the cordoned node's chips
    are neither free nor usable, the CPU node is no part of the row, and once the largest mix
    runs (four pods on loose-0) nothing stays idle."""
    shared = jobset("s", rjob(pods_per_job=1, exclusive=None, tpu=1))
    report = capacity_report(cluster(_loose()), [shared], OPTIONS)
    [row] = report.domain_types
    assert (row.type, row.accelerators, row.free, row.usable, row.stranded) == (
        "(in no domain)",
        8,
        4,
        4,
        0,
    )
    assert (row.stranded_by, row.stranded_nodes, row.idle_after_mix) == ({}, (), 0)


def test_outside_every_domain_chips_no_shape_fits_are_stranded_on_usable_nodes_only() -> None:
    wide = jobset("w", rjob(pods_per_job=1, exclusive=None, tpu=8))
    [row] = domain_type_usage(cluster(_loose()), [wide], OPTIONS)
    assert (row.free, row.usable, row.stranded) == (4, 0, 4)
    assert row.stranded_by == {"no shape without an exclusive key fits": 4}
    assert row.stranded_nodes == ("loose-0",)
    assert domain_type_usage(cluster(node("cpu-0", tpu=0)), [wide], OPTIONS) == []


def test_a_domain_of_mixed_machines_is_typed_by_all_of_them_and_cpu_pools_are_left_out() -> None:
    mixed = [*_typed("m", 1, "ct5lp"), *_typed("m", 1, "ct6e")]
    mixed[1] = mixed[1].model_copy(update={"name": "m-host-1"})
    cpu = [
        node(f"c-{i}", tpu=0, labels={NODEPOOL: "c", "node.kubernetes.io/instance-type": "n2"})
        for i in range(2)
    ]
    rows = domain_type_usage(cluster(mixed, cpu), [jobset("t")], OPTIONS)
    assert [r.type for r in rows] == ["ct5lp+ct6e x2"]


def test_a_domain_with_a_cordoned_host_lists_only_hosts_with_free_chips_as_stranded() -> None:
    hosts = _typed("p", 2, "ct5lp")
    hosts[1] = hosts[1].model_copy(update={"unschedulable": True})
    [row] = domain_type_usage(cluster(hosts), [jobset("t")], OPTIONS)
    assert (row.free, row.usable, row.stranded) == (4, 0, 4)
    assert row.stranded_nodes == ("p-host-0",)
