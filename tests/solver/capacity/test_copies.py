"""Copies per shape and the largest mix, checked against brute force on small random clusters."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from placer.model.cluster import ClusterSnapshot
from placer.model.errors import InputError
from placer.model.options import SolveOptions
from placer.model.workload import JobSetRequest, ReplicatedJobRequest
from placer.solver.capacity.copies import copies_of
from placer.solver.capacity.counting import count_copies, make_copies
from placer.solver.capacity.mix import largest_mix
from placer.solver.check.checker import check
from tests.solver.capacity.brute import fits_together
from tests.strategies import (
    BLOCK,
    HOSTNAME,
    NODEPOOL,
    TPU_TOPOLOGY,
    cluster,
    jobset,
    node,
    pod,
    pool,
    rjob,
)

OPTIONS = SolveOptions(workers=1, time_limit_s=5)


@st.composite
def roomy_clusters(draw: st.DrawFn, max_pools: int = 6) -> ClusterSnapshot:
    """Small TPU clusters where most pools can take something: 1-3 hosts of 4 chips, in 2 blocks,
    now and then a NotReady host, a running JobSet or a host port in use."""
    nodes = []
    for p in range(draw(st.integers(1, max_pools))):
        hosts = draw(st.integers(1, 3))
        labels = {
            NODEPOOL: f"pool{p}",
            BLOCK: f"b{draw(st.integers(0, 1))}",
            TPU_TOPOLOGY: draw(st.sampled_from(["2x4", "2x4", "4x4"])),
        }
        held = draw(st.sampled_from([(), (), (), (), ("team-z/running",)]))
        for i in range(hosts):
            nodes.append(
                node(
                    f"pool{p}-host-{i}",
                    labels=labels,
                    ready=draw(st.sampled_from([True] * 9 + [False])),
                    jobsets=held,
                    used_host_ports=draw(st.sampled_from([(), (), (), ((8471, "TCP"),)])),
                )
            )
    return ClusterSnapshot(nodes=tuple(nodes), levels=(BLOCK, NODEPOOL, HOSTNAME))


@st.composite
def shapes(draw: st.DrawFn, name: str = "s") -> JobSetRequest:
    """A JobSet of 1-2 exclusive replicated jobs, as `tests.strategies` draws them."""
    rjobs = []
    for k in range(draw(st.integers(1, 2))):
        rjobs.append(
            ReplicatedJobRequest(
                name=f"r{k}",
                replicas=draw(st.integers(1, 2)),
                pods_per_job=draw(st.integers(1, 2)),
                pod=pod(
                    tpu=draw(st.sampled_from([2, 4])),
                    node_selector=draw(st.sampled_from([None, None, {TPU_TOPOLOGY: "2x4"}])),
                    host_ports=draw(st.sampled_from([(), ((8471, "TCP"),)])),
                ),
                exclusive_key=NODEPOOL,
                required_topology=draw(st.sampled_from([None, None, BLOCK])),
            )
        )
    return JobSetRequest(namespace="team-a", name=name, replicated_jobs=tuple(rjobs))


def brute_copies(snap: ClusterSnapshot, shape: JobSetRequest) -> int:
    k = 0
    while fits_together(snap, make_copies(shape, k + 1), OPTIONS):
        k += 1
    return k


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(roomy_clusters(), shapes())
def test_copies_match_brute_force(snap: ClusterSnapshot, shape: JobSetRequest) -> None:
    result, plan = copies_of(snap, shape, OPTIONS)
    assert result.copies == brute_copies(snap, shape)
    assert result.verified
    if plan is not None:
        copies = make_copies(shape, result.copies)
        assert check(plan, snap, copies, OPTIONS) == []
        assert all(o.status == "placed" for o in plan.jobsets)
    assert result.limit  # always says why one more does not fit


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(roomy_clusters(max_pools=5), shapes("a"), shapes("b"))
def test_largest_mix_matches_brute_force(
    snap: ClusterSnapshot, a: JobSetRequest, b: JobSetRequest
) -> None:
    mix, plan, copies = largest_mix(snap, [a, b], OPTIONS)
    assert mix.verified
    if plan is not None:
        assert check(plan, snap, copies, OPTIONS) == []
    best = 0
    for i in range(brute_copies(snap, a) + 1):
        for j in range(brute_copies(snap, b) + 1):
            units = i * a.accelerator_units + j * b.accelerator_units
            if units > best and fits_together(
                snap, [*make_copies(a, i), *make_copies(b, j)], OPTIONS
            ):
                best = units
    assert mix.accelerators == best


def test_limit_names_what_the_copies_took() -> None:
    snap = cluster(pool("p0", 2), pool("p1", 2), pool("p2", 2), pool("p3", 2, topology="4x4"))
    shape = jobset("train", rjob(replicas=2, node_selector={TPU_TOPOLOGY: "2x4"}))
    result, plan = copies_of(snap, shape, OPTIONS)
    assert (result.copies, result.accelerators_per_copy, result.verified) == (1, 16, True)
    assert plan is not None and check(plan, snap, make_copies(shape, 1), OPTIONS) == []
    assert result.limit == (
        "workers: needs 2 domains of cloud.google.com/gke-nodepool for 2 pods of "
        "{google.com/tpu: 4}; 1 available of 4: 1 not matching nodeSelector "
        f"{TPU_TOPOLOGY}=2x4, 2 taken by the 1 copy above"
    )


def test_copies_counted_but_not_planned_do_not_claim_one_more_fits() -> None:
    # more copies than re-planned (the 10,000-node case): no plan says which domains they take,
    # so the limit must not diagnose one more copy on the free cluster ("fits alone")
    snap = cluster(*(pool(f"p{i}", 2) for i in range(5)))
    result, plan = copies_of(snap, jobset("train"), OPTIONS, verify_limit=2)
    assert (result.copies, result.verified, plan) == (5, False, None)
    assert result.limit == (
        "copy 6 does not fit by the counting model; the 5 copies were counted, not planned "
        "(more than 2), so what stops one more is not named"
    )
    assert "fits alone" not in result.limit


def test_copies_do_not_reuse_the_domains_of_a_running_jobset_of_the_same_name() -> None:
    snap = cluster(pool("p0", 2, jobsets=["team-a/train"]), pool("p1", 2))
    result, _ = copies_of(snap, jobset("train"), OPTIONS)
    assert result.copies == 1


def test_a_mix_prefers_more_accelerators() -> None:
    # one 4-host pool and two 2-host pools: big (4 pods) only fits the first, small fits all
    snap = cluster(pool("big", 4), pool("s0", 2), pool("s1", 2))
    big = jobset("big", rjob(pods_per_job=4))
    small = jobset("small", rjob(pods_per_job=2))
    mix, plan, copies = largest_mix(snap, [big, small], OPTIONS)
    assert [(e.jobset, e.copies, e.accelerators) for e in mix.entries] == [
        ("team-a/big", 1, 16),
        ("team-a/small", 2, 16),
    ]
    assert mix.accelerators == 32 and mix.verified
    assert plan is not None and check(plan, snap, copies, OPTIONS) == []


def test_counting_names_a_model_cp_sat_rejects() -> None:
    """MODEL_INVALID is not "0 copies fit": it is an error naming what CP-SAT said."""
    snap = ClusterSnapshot(nodes=tuple(pool("p0", 2)), levels=(BLOCK, NODEPOOL, HOSTNAME))
    shape = jobset("s", rjob())
    options = OPTIONS.model_copy(update={"workers": 100_000})
    with pytest.raises(InputError, match=r"MODEL_INVALID.*num_workers"):
        count_copies(snap, [shape], options, {shape.key: 1})
    assert count_copies(snap, [shape], OPTIONS, {shape.key: 1}).copies == {shape.key: 1}


def test_a_count_that_timed_out_is_not_a_checked_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    """CP-SAT answering UNKNOWN at its time limit says nothing about how many fit."""
    from placer.solver.capacity import copies as copies_module
    from placer.solver.capacity import mix as mix_module
    from placer.solver.capacity.counting import CountResult
    from placer.solver.capacity.report import capacity_report

    def timed_out(
        snapshot: ClusterSnapshot,
        shapes: Sequence[JobSetRequest],
        options: SolveOptions,
        weights: Mapping[str, int],
    ) -> CountResult:
        return CountResult({s.key: 0 for s in shapes}, "UNKNOWN")

    monkeypatch.setattr(copies_module, "count_copies", timed_out)
    monkeypatch.setattr(mix_module, "count_copies", timed_out)
    snap = cluster(pool("p0", 2), pool("p1", 2))
    result, plan = copies_of(snap, jobset("train"), OPTIONS)
    assert (result.copies, result.verified, plan) == (0, False, None)
    assert "no answer within the time limit (UNKNOWN)" in result.limit
    report = capacity_report(snap, [jobset("train")], OPTIONS)
    assert report.mix is not None
    assert not report.mix.verified
    assert any("largest mix: the counting model found no answer" in n for n in report.notes)
    assert any("team-a/train: the counting model found no answer" in n for n in report.notes)
