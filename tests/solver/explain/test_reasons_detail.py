"""Each reason class of `placer explain`'s counts, on a hand-built snapshot, with exact text."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from placer.model.cluster import ClusterSnapshot, Node
from placer.model.options import SolveOptions
from placer.model.scheduling import NodeSelectorRequirement, NodeSelectorTerm, Taint
from placer.model.workload import JobSetRequest
from placer.solver.explain import ExplainSettings, Explanation, ReasonCount, explain_jobset
from tests.strategies import (
    BLOCK,
    HOSTNAME,
    NODEPOOL,
    TPU_TOPOLOGY,
    cluster,
    jobset,
    node,
    pool,
    resources,
    rjob,
)

OPTIONS = SolveOptions(workers=1, time_limit_s=5)


def _explain(
    snap: ClusterSnapshot, queue: Sequence[JobSetRequest], key: str = "team-a/t"
) -> Explanation:
    e = explain_jobset(snap, queue, key, OPTIONS, settings=ExplainSettings(remedies=False))
    assert not [n for n in e.notes if n.startswith("plan check")], e.notes
    return e


def _reasons(e: Explanation, rjob_name: str = "workers") -> list[ReasonCount]:
    return next(d for d in e.replicated_jobs if d.name == rjob_name).reasons


def test_held_by_a_running_jobset_names_it() -> None:
    snap = cluster(pool("p0", 2, jobsets=["team-z/run"]))
    e = _explain(snap, [jobset("t")])
    assert e.status == "unschedulable"
    assert _reasons(e) == [
        ReasonCount(kind="held", count=1, text="held by running team-z/run", jobsets=["team-z/run"])
    ]
    d = e.replicated_jobs[0]
    assert (d.available, d.total, d.needed, d.fits) == (0, 1, 1, False)


def test_node_selector_names_the_term() -> None:
    snap = cluster(pool("p0", 2, topology="4x4"))
    e = _explain(snap, [jobset("t", rjob(node_selector={TPU_TOPOLOGY: "2x4"}))])
    assert _reasons(e) == [
        ReasonCount(
            kind="node-selector", count=1, text=f"not matching nodeSelector {TPU_TOPOLOGY}=2x4"
        )
    ]


def test_node_affinity_names_the_term() -> None:
    term = NodeSelectorTerm(
        match_expressions=(NodeSelectorRequirement(key="zone", operator="In", values=("a",)),)
    )
    snap = cluster(pool("p0", 2))
    e = _explain(snap, [jobset("t", rjob(affinity=[term]))])
    assert _reasons(e) == [
        ReasonCount(kind="affinity", count=1, text="not matching node affinity zone In [a]")
    ]


def test_untolerated_taint_names_it() -> None:
    taints = [Taint(key="dedicated", value="infer", effect="NoSchedule")]
    snap = cluster(pool("p0", 2, taints=taints))
    e = _explain(snap, [jobset("t")])
    assert _reasons(e) == [
        ReasonCount(kind="taint", count=1, text="with untolerated taint dedicated=infer:NoSchedule")
    ]


@pytest.mark.parametrize(
    ("hosts", "text"),
    [
        pytest.param(
            [
                node("p0-0", labels={NODEPOOL: "p0"}),
                node("p0-1", labels={NODEPOOL: "p0"}, ready=False),
            ],
            "too small: fits 1 of 2 pods (1 host NotReady)",
            id="not-ready",
        ),
        pytest.param(
            [
                node("p0-0", labels={NODEPOOL: "p0"}),
                node("p0-1", labels={NODEPOOL: "p0"}, unschedulable=True),
            ],
            "too small: fits 1 of 2 pods (1 host cordoned)",
            id="cordoned",
        ),
        pytest.param(
            [
                node("p0-0", labels={NODEPOOL: "p0"}),
                node("p0-1", labels={NODEPOOL: "p0"}, free=resources(cpu=32, pods=110, tpu=0)),
            ],
            "too small: fits 1 of 2 pods (1 host with google.com/tpu in use)",
            id="resource-in-use",
        ),
        pytest.param(
            [
                node("p0-0", labels={NODEPOOL: "p0"}),
                node("p0-1", labels={NODEPOOL: "p0"}, used_host_ports=[(8471, "TCP")]),
            ],
            "too small: fits 1 of 2 pods (1 host with host port 8471/TCP in use)",
            id="host-port",
        ),
        pytest.param(
            [node("p0-0", labels={NODEPOOL: "p0"})],
            "too small: fits 1 of 2 pods (1 host, short of google.com/tpu)",
            id="too-few-hosts",
        ),
    ],
)
def test_too_small_says_why(hosts: list[Node], text: str) -> None:
    shape = rjob(host_ports=[(8471, "TCP")])
    e = _explain(cluster(hosts), [jobset("t", shape)])
    assert _reasons(e) == [ReasonCount(kind="too-small", count=1, text=text)]
    assert "needs 1 domain of cloud.google.com/gke-nodepool for 2 pods of {google.com/tpu: 4}" in (
        e.replicated_jobs[0].line
    )


def test_taken_by_higher_priority_and_same_priority_jobsets_names_them() -> None:
    snap = cluster(pool("p0", 2), pool("p1", 2))
    high = jobset("high", priority=10, order=0)
    same = jobset("same", rjob(replicas=1), order=1)
    target = jobset("t", rjob(replicas=2), order=2)
    e = _explain(snap, [high, same, target])
    assert _reasons(e) == [
        ReasonCount(
            kind="taken",
            count=1,
            text="taken by higher-priority JobSets in this plan (team-a/high)",
            jobsets=["team-a/high"],
        ),
        ReasonCount(
            kind="taken",
            count=1,
            text="taken by same-priority JobSets in this plan (team-a/same)",
            jobsets=["team-a/same"],
        ),
    ]


def test_counts_add_up_and_reasons_are_ordered() -> None:
    snap = cluster(
        pool("held", 2, jobsets=["team-z/run"]),
        pool("other", 2, topology="4x4"),
        [node("small-0", labels={NODEPOOL: "small", TPU_TOPOLOGY: "2x4"})],
        pool("free", 2),
    )
    e = _explain(snap, [jobset("t", rjob(replicas=2, node_selector={TPU_TOPOLOGY: "2x4"}))])
    d = e.replicated_jobs[0]
    assert [r.kind for r in d.reasons] == ["held", "node-selector", "too-small"]
    assert d.available + sum(r.count for r in d.reasons) == d.total == 4
    assert d.line.startswith(
        "workers: needs 2 domains of cloud.google.com/gke-nodepool for 2 pods of "
        "{google.com/tpu: 4}; 1 available of 4: 1 held by running team-z/run, "
    )


def test_shared_replicated_job_counts_nodes() -> None:
    snap = cluster(node("cpu-0", tpu=0, cpu=2), node("cpu-1", tpu=0, cpu=2, ready=False))
    target = jobset("t", rjob("driver", replicas=1, pods_per_job=3, exclusive=None, tpu=0, cpu=1))
    e = _explain(snap, [target])
    d = e.replicated_jobs[0]
    assert (d.unit, d.needed, d.available, d.nodes_with_room) == ("pod", 3, 2, 1)
    assert [(r.kind, r.count, r.text) for r in d.reasons] == [("not-ready", 1, "NotReady")]
    assert (
        d.line == "driver: needs 3 pods of {cpu: 1}; fits 2 on 1 of 2 nodes; excluded: 1 NotReady"
    )


def test_a_node_missing_a_kueue_topology_label_is_named_per_node() -> None:
    """Levels from a Kueue Topology: a node without the rack label is in no domain (Kueue TAS)."""
    snap = cluster(
        node("cpu-0", tpu=0, cpu=2, labels={"rack": "r1"}),
        node("cpu-1", tpu=0, cpu=2),
        levels=("rack", HOSTNAME),
    ).model_copy(update={"kueue_topology": "Topology/default"})
    target = jobset("t", rjob("driver", replicas=1, pods_per_job=3, exclusive=None, tpu=0, cpu=1))
    e = _explain(snap, [target])
    d = e.replicated_jobs[0]
    assert [(r.kind, r.count, r.text) for r in d.reasons] == [
        ("unlabeled", 1, "missing topology label rack")
    ]
    assert d.line == (
        "driver: needs 3 pods of {cpu: 1}; fits 2 on 1 of 2 nodes; "
        "excluded: 1 missing topology label rack"
    )
    # the same levels without a Kueue Topology keep placer's rule: the node is usable
    e = _explain(snap.model_copy(update={"kueue_topology": ""}), [target])
    assert e.status == "placed"


def test_a_domain_missing_a_kueue_topology_label_comes_before_the_rules() -> None:
    taints = [Taint(key="dedicated", value="infer", effect="NoSchedule")]
    snap = cluster(
        pool("p0", 2, block="b1"),
        pool("p1", 2),
        pool("p2", 2, taints=taints),
        levels=(BLOCK, NODEPOOL, HOSTNAME),
    ).model_copy(update={"kueue_topology": "Topology/default"})
    e = _explain(snap, [jobset("t", rjob(replicas=3))])
    d = e.replicated_jobs[0]
    assert [(r.kind, r.count, r.text) for r in d.reasons] == [
        ("unlabeled", 2, f"missing topology label {BLOCK}")
    ]
    assert d.line == (
        f"workers: needs 3 domains of {NODEPOOL} for 2 pods of {{google.com/tpu: 4}}; "
        f"1 available of 3: 2 missing topology label {BLOCK}"
    )


def test_placed_jobset_says_where() -> None:
    snap = cluster(pool("p0", 2))
    e = _explain(snap, [jobset("t")])
    assert e.status == "placed"
    assert [j.domain.value for j in e.jobs if j.domain] == ["p0"]
    assert e.replicated_jobs == [] and e.conflict is None


def test_running_jobset_says_where_it_runs() -> None:
    snap = cluster(pool("p0", 2, jobsets=["team-z/run"]), levels=(NODEPOOL,))
    e = explain_jobset(snap, [], "team-z/run", OPTIONS)
    assert e.status == "running"
    assert e.notes[1] == f"it holds 1 domain ({NODEPOOL}=p0)"
