"""Minimal conflict sets: requirements satisfiable alone and in any pair, not all together."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from ortools.sat.python import cp_model

from placer.model.cluster import ClusterSnapshot
from placer.model.options import SolveOptions
from placer.model.workload import JobSetRequest
from placer.solver.cpsat import SolverPurpose, make_solver
from placer.solver.explain import ExplainSettings, explain_jobset
from placer.solver.explain.conflicts import ConflictInputs, find_conflict, max_replicas, min_drops
from tests.strategies import BLOCK, HOSTNAME, NODEPOOL, cluster, jobset, pool, rjob, solve_checked

OPTIONS = SolveOptions(workers=1, time_limit_s=5)


def _blocks() -> ClusterSnapshot:
    # block b0: p0, p1; block b1: p2
    return cluster(
        pool("p0", 2, block="b0"),
        pool("p1", 2, block="b0"),
        pool("p2", 2, block="b1"),
        levels=(BLOCK, NODEPOOL, HOSTNAME),
    )


def _queue() -> tuple[JobSetRequest, JobSetRequest]:
    # `high` must sit in block b0; the target wants 2 domains inside one block: only b0 has 2
    high = jobset("high", rjob(node_selector={BLOCK: "b0"}), priority=10)
    target = jobset("t", rjob(replicas=2, required=BLOCK), order=1)
    return high, target


def _placed(snap: ClusterSnapshot, queue: Sequence[JobSetRequest], key: str) -> bool:
    return solve_checked("cpsat", snap, queue, OPTIONS).outcome(key).status == "placed"


def test_every_requirement_matters_and_the_set_conflicts() -> None:
    snap = _blocks()
    high, target = _queue()
    # the whole set fails, and dropping any one requirement lets the rest hold (checked by
    # planning, independently of the conflict model)
    assert not _placed(snap, [high, target], target.key)
    assert _placed(snap, [target], target.key)  # without "high stays admitted"
    relaxed = target.model_copy(update={"replicated_jobs": (rjob(replicas=2, preferred=BLOCK),)})
    assert _placed(snap, [high, relaxed], target.key)  # without the locality
    fewer = target.model_copy(update={"replicated_jobs": (rjob(replicas=1, required=BLOCK),)})
    assert _placed(snap, [high, fewer], target.key)  # without "all 2 child Jobs"

    conflict = find_conflict(ConflictInputs(snap, target, (high,), OPTIONS))
    assert conflict.status == "conflict" and conflict.minimal
    assert [r.id for r in conflict.requirements] == [
        "replicas:workers",
        "locality:workers",
        "admitted:team-a/high",
    ]
    assert conflict.requirements[2].text == ("team-a/high stays admitted (higher priority 10 > 0)")


def test_an_unrelated_placed_jobset_stays_out_of_the_conflict() -> None:
    snap = cluster(_blocks().nodes, pool("p9", 2, block="b9"))
    high, target = _queue()
    # `bystander` sits in its own block b9 and does not take part in the conflict
    bystander = jobset("bystander", rjob(node_selector={BLOCK: "b9"}), priority=5)
    plan = solve_checked("cpsat", snap, [high, bystander, target], OPTIONS)
    assert plan.outcome("team-a/bystander").status == "placed"
    conflict = find_conflict(ConflictInputs(snap, target, (high, bystander), OPTIONS))
    assert "admitted:team-a/bystander" not in [r.id for r in conflict.requirements]


def test_all_or_nothing_across_replicated_jobs() -> None:
    # 2 free domains: workers (1) and driver (1) each fit, and with `high` (1) any two fit
    snap = cluster(pool("p0", 2), pool("p1", 2))
    high = jobset("high", priority=10)
    target = jobset("t", rjob("workers"), rjob("driver"), order=1)
    e = explain_jobset(
        snap, [high, target], target.key, OPTIONS, settings=ExplainSettings(remedies=False)
    )
    assert e.status == "unschedulable"
    assert e.conflict is not None
    assert sorted(r.id for r in e.conflict.requirements) == [
        "admitted:team-a/high",
        "replicas:driver",
        "replicas:workers",
    ]
    assert e.conflict.text.startswith("cannot all hold at once")


def test_a_jobset_too_big_for_the_cluster_conflicts_with_itself_only() -> None:
    snap = cluster(pool("p0", 2))
    target = jobset("t", rjob(replicas=2))
    conflict = find_conflict(ConflictInputs(snap, target, (), OPTIONS))
    assert [r.id for r in conflict.requirements] == ["replicas:workers"]
    assert conflict.text.startswith("cannot hold even on the cluster as it stands")


def test_greedy_left_it_out_although_a_joint_plan_exists() -> None:
    # first-fit gives `high` the first pool, the only one the target can use; a joint plan moves it
    snap = cluster(pool("p0", 2), pool("p1", 2, topology="4x4"))
    high = jobset("high", rjob(node_selector=None), priority=10)
    target = jobset("t", rjob(node_selector={"cloud.google.com/gke-tpu-topology": "2x4"}))
    e = explain_jobset(
        snap,
        [high, target],
        target.key,
        OPTIONS,
        settings=ExplainSettings(solver="first-fit", remedies=False),
    )
    assert e.status == "unschedulable"
    assert e.conflict is not None and e.conflict.status == "no-conflict"
    assert _placed(snap, [high, target], target.key)  # CP-SAT places both


def test_max_replicas_and_min_drops() -> None:
    snap = cluster(pool("p0", 2), pool("p1", 2), pool("p2", 2))
    low = jobset("low", rjob(replicas=1), priority=-5)
    other = jobset("other", rjob(replicas=1), order=0)
    target = jobset("t", rjob(replicas=3), order=1)
    inputs = ConflictInputs(snap, target, (low, other), OPTIONS)
    assert max_replicas(inputs, "workers") == 1
    assert min_drops(inputs, ["team-a/low", "team-a/other"]) == ["team-a/low", "team-a/other"]
    assert min_drops(inputs, ["team-a/low"]) is None


def test_a_model_cp_sat_rejects_is_named_not_called_a_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import placer.solver.explain.conflicts as conflicts

    def invalid(options: SolveOptions, purpose: SolverPurpose) -> cp_model.CpSolver:
        solver = make_solver(options, purpose)
        solver.parameters.num_workers = 100_000  # outside CP-SAT's range: MODEL_INVALID
        return solver

    monkeypatch.setattr(conflicts, "make_solver", invalid)
    high, target = _queue()
    conflict = find_conflict(ConflictInputs(_blocks(), target, (high,), OPTIONS))
    assert conflict.status == "unknown"
    assert conflict.text.startswith("CP-SAT rejected the model (MODEL_INVALID")
    assert "num_workers" in conflict.text


def test_the_conflict_keeps_the_highest_priority_jobsets_it_needs() -> None:
    """Three pools, each taken by a placed JobSet of priority 1, 2 or 3; the target needs two.
    Any two admissions with the target's replicas conflict; the minimal set names the two of
    highest priority (deletion tries the lowest priority's admission first)."""
    snap = cluster(pool("p0", 2), pool("p1", 2), pool("p2", 2))
    others = tuple(jobset(f"o{p}", priority=p, order=p) for p in (1, 2, 3))
    target = jobset("t", rjob(replicas=2), order=9)
    conflict = find_conflict(ConflictInputs(snap, target, others, OPTIONS))
    assert conflict.status == "conflict" and conflict.minimal
    assert sorted(r.id for r in conflict.requirements) == [
        "admitted:team-a/o2",
        "admitted:team-a/o3",
        "replicas:workers",
    ]


def test_min_drops_leaves_out_the_fewest_then_the_fewest_accelerators() -> None:
    """Dropping `wide` (two pools) or both `a` and `b` frees the two pools the target needs:
    one drop beats two. Between `a` (2 hosts) and `c` (4 hosts), each freeing the one pool a
    one-child target needs, the smaller is dropped."""
    snap = cluster(pool("p0", 2), pool("p1", 2), pool("p2", 2), pool("p3", 2))
    wide = jobset("wide", rjob(replicas=2), priority=1)
    a, b = jobset("a", priority=1, order=1), jobset("b", priority=1, order=2)
    target = jobset("t", rjob(replicas=2), order=9)
    inputs = ConflictInputs(snap, target, (wide, a, b), OPTIONS)
    assert min_drops(inputs, ["team-a/wide", "team-a/a", "team-a/b"]) == ["team-a/wide"]

    mixed = cluster(pool("p0", 2), pool("q0", 4, topology="2x4"))
    small = jobset("a", priority=1)
    big = jobset("c", rjob(pods_per_job=4), priority=1, order=1)
    one = jobset("t", order=9)
    inputs = ConflictInputs(mixed, one, (small, big), OPTIONS)
    assert min_drops(inputs, ["team-a/a", "team-a/c"]) == ["team-a/a"]
