"""Remedies: each kind found on a small case, and each re-checked here by planning with it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Unpack

import pytest

from placer.model.cluster import ClusterSnapshot, JobSetUsage, Node
from placer.model.options import SolveOptions
from placer.model.whatif import remove_jobset
from placer.model.workload import JobSetRequest
from placer.solver.context import PlacementContext
from placer.solver.explain import ExplainSettings, Explanation, Remedy, explain_jobset
from placer.solver.explain.remedies import (
    _fits_alone,
    _is_hardware_key,
    _same_shape,
    _selector_alternatives,
)
from tests.strategies import (
    BLOCK,
    HOSTNAME,
    NODEPOOL,
    TPU_TOPOLOGY,
    NodeOptions,
    cluster,
    jobset,
    node,
    pool,
    resources,
    rjob,
    solve_checked,
)

OPTIONS = SolveOptions(workers=1, time_limit_s=5)


def _explain(snap: ClusterSnapshot, queue: Sequence[JobSetRequest]) -> Explanation:
    e = explain_jobset(snap, queue, "team-a/t", OPTIONS)
    assert e.status == "unschedulable"
    return e


def _kinds(e: Explanation) -> list[str]:
    return [r.kind for r in e.remedies]


def _placed(snap: ClusterSnapshot, queue: Sequence[JobSetRequest]) -> bool:
    return solve_checked("cpsat", snap, queue, OPTIONS).outcome("team-a/t").status == "placed"


def _remedy(e: Explanation, kind: str) -> Remedy:
    return next(r for r in e.remedies if r.kind == kind)


def test_fewer_replicas_gives_the_largest_count_that_fits() -> None:
    snap = cluster(pool("p0", 2), pool("p1", 2), pool("p2", 2, ready=False))
    target = jobset("t", rjob(replicas=3))
    e = _explain(snap, [target])
    r = _remedy(e, "fewer-replicas")
    assert r.change == {"replicated_job": "workers", "replicas": 2}
    assert r.text == "run workers with 2 replicas instead of 3"
    assert r.verified and len(r.jobs) == 2
    assert _placed(snap, [jobset("t", rjob(replicas=2))])


def test_another_topology_value_with_room() -> None:
    snap = cluster(pool("small-0", 2, jobsets=["team-z/run"]), pool("big-0", 2, topology="4x4"))
    target = jobset("t", rjob(node_selector={TPU_TOPOLOGY: "2x4"}))
    e = _explain(snap, [target])
    r = _remedy(e, "other-topology")
    assert r.change == {"replicated_jobs": ["workers"], "node_selector": {TPU_TOPOLOGY: "4x4"}}
    assert r.jobs[0].domain is not None and r.jobs[0].domain.value == "big-0"
    assert _placed(snap, [jobset("t", rjob(node_selector={TPU_TOPOLOGY: "4x4"}))])


def test_another_topology_value_keeps_the_domain_size() -> None:
    # a 2-host child Job is not offered the 8-host slices of another topology value (it would
    # strand six hosts), though they are free and it would fit there
    snap = cluster(pool("small-0", 2, jobsets=["team-z/run"]), pool("big-0", 8, topology="4x8"))
    e = _explain(snap, [jobset("t", rjob(node_selector={TPU_TOPOLOGY: "2x4"}))])
    assert "other-topology" not in _kinds(e)
    assert _placed(snap, [jobset("t", rjob(node_selector={TPU_TOPOLOGY: "4x8"}))])


def test_another_topology_value_keeps_the_accelerator() -> None:
    accelerator = "cloud.google.com/gke-tpu-accelerator"
    v6e = [node(f"a-{i}", labels={NODEPOOL: "a", accelerator: "v6e"}) for i in range(2)]
    v5p = [node(f"b-{i}", labels={NODEPOOL: "b", accelerator: "v5p"}) for i in range(2)]
    snap = cluster(v6e, v5p)
    busy = jobset("busy", rjob(node_selector={accelerator: "v6e"}), priority=10)
    target = jobset("t", rjob(node_selector={accelerator: "v6e"}))
    e = _explain(snap, [busy, target])
    assert "other-topology" not in _kinds(e)


def test_relaxing_required_locality() -> None:
    snap = cluster(
        pool("p0", 2, block="b0"), pool("p1", 2, block="b1"), levels=(BLOCK, NODEPOOL, HOSTNAME)
    )
    e = _explain(snap, [jobset("t", rjob(replicas=2, required=BLOCK))])
    assert "relax-locality" in _kinds(e)
    assert _placed(snap, [jobset("t", rjob(replicas=2, preferred=BLOCK))])


def _held_by(priority: int | None) -> ClusterSnapshot:
    usage = JobSetUsage(requests=resources(tpu=4, pods=1), priority=priority)
    nodes = [
        n.model_copy(
            update={
                "free": resources(cpu=32, pods=109, tpu=0),
                "jobset_usage": {"team-z/run": usage},
            }
        )
        for n in pool("p0", 2, jobsets=["team-z/run"])
    ]
    return cluster(nodes)


def test_preempting_a_lower_priority_running_jobset() -> None:
    snap = _held_by(priority=1)
    target = jobset("t", priority=100)
    e = _explain(snap, [target])
    r = _remedy(e, "preempt")
    assert r.text == (
        "evicting team-z/run (priority 1, 8 accelerators; 0.7 chip-hours: 0.0 of work lost, "
        "0.7 to restart) "
        "starts it now"
    )
    assert r.change == {"remove_running": ["team-z/run"]}
    assert "wait" not in _kinds(e), "the same removal is not offered twice"
    freed, _ = remove_jobset(snap, "team-z/run")
    assert _placed(freed, [target])


def test_waiting_for_a_running_jobset_of_unknown_or_higher_priority() -> None:
    for priority in (None, 1000):
        snap = _held_by(priority=priority)
        e = _explain(snap, [jobset("t", priority=100)])
        assert _kinds(e) == ["wait"], priority
        assert e.remedies[0].text == "wait for running team-z/run to finish"


def test_yielding_to_a_same_priority_jobset_the_plan_preferred() -> None:
    snap = cluster(pool("p0", 2), pool("p1", 2))
    target = jobset("t", order=0)
    bigger = jobset("bigger", rjob(replicas=2), order=1)  # more accelerators, same priority
    e = _explain(snap, [target, bigger])
    r = _remedy(e, "yield")
    assert r.change == {"leave_out": ["team-a/bigger"]}
    assert "preempt" not in _kinds(e), "a same-priority JobSet is not offered as lower-priority"
    assert _placed(snap, [target])


def test_waiting_for_the_fewest_running_jobsets_that_together_suffice() -> None:
    # three pools each held by a running JobSet of unknown priority; two child Jobs need two of
    # them: no single one suffices, and of the three the first that can be spared is
    snap = cluster(*(pool(f"p{i}", 2, jobsets=[f"team-z/run-{i}"]) for i in range(3)))
    target = jobset("t", rjob(replicas=2))
    e = _explain(snap, [target])
    r = _remedy(e, "wait")
    assert r.change == {"remove_running": ["team-z/run-1", "team-z/run-2"]}
    assert r.text == "wait for running team-z/run-1, team-z/run-2 to finish"
    freed = snap
    for key in ("team-z/run-1", "team-z/run-2"):
        freed, _ = remove_jobset(freed, key)
    assert _placed(freed, [target])


def test_no_remedy_is_said_so() -> None:
    snap = cluster(pool("p0", 1))
    e = _explain(snap, [jobset("t", rjob(pods_per_job=2))])
    assert e.remedies == []
    assert any(n.startswith("no remedy found") for n in e.notes)


def test_replan_budget_is_respected() -> None:
    snap = cluster(pool("p0", 2), pool("p1", 2), pool("p2", 2, ready=False))
    e = explain_jobset(
        snap,
        [jobset("t", rjob(replicas=3))],
        "team-a/t",
        OPTIONS,
        settings=ExplainSettings(replan_budget=0),
    )
    assert e.remedies == []
    assert "remedy search stopped after 0 re-plans" in e.notes


# -- the cheap questions that choose which candidates are re-planned --


@pytest.mark.parametrize(
    ("key", "hardware"),
    [
        ("cloud.google.com/gke-tpu-accelerator", True),
        ("nvidia.com/gpu.product", True),
        ("node.kubernetes.io/instance-type", True),
        ("cloud.google.com/machine-family", True),
        (TPU_TOPOLOGY, False),
        (NODEPOOL, False),
    ],
)
def test_labels_naming_the_hardware_keep_their_value(key: str, hardware: bool) -> None:
    assert _is_hardware_key(key) is hardware


def test_other_selector_values_come_from_usable_nodes_most_common_first() -> None:
    snap = cluster(
        pool("a", 1, topology="2x4"),
        pool("b", 2, topology="4x4"),
        pool("c", 3, topology="4x8"),
        pool("d", 4, topology="8x8", ready=False),
    )
    workers = rjob(node_selector={TPU_TOPOLOGY: "2x4"})
    assert _selector_alternatives(snap, workers) == [
        {TPU_TOPOLOGY: "4x8"},
        {TPU_TOPOLOGY: "4x4"},
    ]


def test_a_selector_matching_no_domain_is_offered_domains_of_its_child_jobs_size() -> None:
    # no pool carries 2x2: the child Job's 2 pods stand for the domain size it wants
    snap = cluster(pool("b", 2, topology="4x4"), pool("c", 4, topology="4x8"))
    workers = rjob(node_selector={TPU_TOPOLOGY: "2x2"})
    ctx = PlacementContext(snap, [jobset("t", workers)], OPTIONS)
    assert _same_shape(ctx, workers, {TPU_TOPOLOGY: "4x4"})
    assert not _same_shape(ctx, workers, {TPU_TOPOLOGY: "4x8"})


def test_fits_alone_counts_every_child_job_and_every_pod() -> None:
    two_pools = cluster(pool("p0", 2), pool("p1", 2))
    assert _fits_alone(two_pools, jobset("t", rjob(replicas=2)), OPTIONS)
    assert not _fits_alone(two_pools, jobset("t", rjob(replicas=3)), OPTIONS)
    cpu = cluster(node("cpu-0", tpu=0, cpu=8))
    assert _fits_alone(
        cpu, jobset("t", rjob(pods_per_job=2, exclusive=None, tpu=0, cpu=4)), OPTIONS
    )
    three = rjob(replicas=3, pods_per_job=1, exclusive=None, tpu=0, cpu=4)
    assert not _fits_alone(cpu, jobset("t", three), OPTIONS)


def test_a_shared_jobset_short_of_node_room_may_wait_for_the_running_pods_on_the_nodes() -> None:
    # no exclusive key: the target counts pods per node, and the running JobSet fills the node
    usage = JobSetUsage(requests=resources(cpu=8, pods=1), priority=None)
    full = node("cpu-0", tpu=0, cpu=8, free=resources(cpu=0, pods=109), jobsets=["team-z/run"])
    snap = cluster(full.model_copy(update={"jobset_usage": {"team-z/run": usage}}))
    target = jobset("t", rjob(pods_per_job=1, exclusive=None, tpu=0, cpu=4))
    e = _explain(snap, [target])
    assert _remedy(e, "wait").change == {"remove_running": ["team-z/run"]}


def test_another_topology_value_names_only_the_labels_that_change() -> None:
    accelerator = "cloud.google.com/gke-tpu-accelerator"

    def v6e(name: str, topology: str, **kw: Unpack[NodeOptions]) -> list[Node]:
        labels = {NODEPOOL: name, TPU_TOPOLOGY: topology, accelerator: "v6e"}
        return [node(f"{name}-{i}", labels=labels, **kw) for i in range(2)]

    snap = cluster(v6e("small-0", "2x4", jobsets=["team-z/run"]), v6e("big-0", "4x4"))
    selector = {accelerator: "v6e", TPU_TOPOLOGY: "2x4"}
    e = _explain(snap, [jobset("t", rjob(node_selector=selector))])
    r = _remedy(e, "other-topology")
    assert (
        r.text == f"use nodeSelector {TPU_TOPOLOGY}=4x4 instead of {TPU_TOPOLOGY}=2x4 for workers"
    )
    assert r.change == {
        "replicated_jobs": ["workers"],
        "node_selector": {accelerator: "v6e", TPU_TOPOLOGY: "4x4"},
    }


def _held_pool(name: str, run: str, priority: int) -> list[Node]:
    """A two-host pool whose chips a running JobSet of `priority` holds (its usage given back
    when it is evicted or finishes)."""
    usage = JobSetUsage(requests=resources(tpu=4, pods=1), priority=priority)
    return [
        n.model_copy(
            update={"free": resources(cpu=32, pods=109, tpu=0), "jobset_usage": {run: usage}}
        )
        for n in pool(name, 2, jobsets=[run])
    ]


def test_the_eviction_remedy_names_only_the_victims_of_the_jobset_explained() -> None:
    # two pools held by low-priority runs and two high-priority JobSets pending: the re-plan
    # with preemption evicts both runs, one for each; the remedy for `t` names its own victim
    snap = cluster(_held_pool("p0", "team-z/run-0", 1), _held_pool("p1", "team-z/run-1", 1))
    target = jobset("t", priority=100)
    other = jobset("u", priority=100, order=1)
    r = _remedy(_explain(snap, [target, other]), "preempt")
    victims = r.change["remove_running"]
    assert isinstance(victims, list) and len(victims) == 1
    assert r.text.startswith(f"evicting {victims[0]} (priority 1") and " and " not in r.text


def test_no_eviction_is_offered_when_the_replan_places_it_without_evicting() -> None:
    # first-fit gives `high` the only 2x4 pool; a joint plan moves `high` to the 4x4 pool, so
    # the re-plan with preemption places the target without evicting the low-priority run
    snap = cluster(pool("p0", 2), pool("p1", 2, topology="4x4"), _held_pool("p2", "team-z/run", -5))
    high = jobset("high", rjob(node_selector=None), priority=10)
    target = jobset("t", rjob(node_selector={TPU_TOPOLOGY: "2x4"}), order=1)
    e = explain_jobset(
        snap, [high, target], target.key, OPTIONS, settings=ExplainSettings(solver="first-fit")
    )
    assert e.status == "unschedulable"
    assert "preempt" not in _kinds(e)
