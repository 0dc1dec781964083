"""Kueue podset groups (`kueue.x-k8s.io/podset-group-name`): a leader and its workers placed as one.

Kueue's webhook rules are input errors; every solver keeps the group in one domain of its
required level (best-fit and largest-first as Kueue does, first-fit with the first child Job
choosing, cpsat with the members' domains tied in the model); the checker refuses a split group;
and a group whose members each fit alone but not together says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings

from placer.cli import main
from placer.model.cluster import ClusterSnapshot, Node
from placer.model.errors import InputError
from placer.model.jobset.parse import parse_jobset
from placer.model.kueue.annotations import podset_groups
from placer.model.options import SolveOptions
from placer.model.plan import Plan, PodPlacement
from placer.model.workload import JobSetRequest
from placer.solver.check.checker import check
from placer.solver.context import PlacementContext
from placer.solver.reasons import Classifier
from placer.solver.registry import get_solver
from tests.kueue_tas.cases import HOST, RACK, res_node
from tests.kueue_tas.test_topology_object import kube_node
from tests.strategies import group_scenarios, solve_checked

KUEUE = "kueue.x-k8s.io/"
GROUP = KUEUE + "podset-group-name"
REQ = KUEUE + "podset-required-topology"
PREF = KUEUE + "podset-preferred-topology"
LEVELS = (RACK, HOST)
OPTIONS = SolveOptions(levels=LEVELS, workers=1, time_limit_s=5)
SOLVERS = ("first-fit", "best-fit", "largest-first", "cpsat")


def member(
    name: str,
    pods: int,
    annotations: dict[str, str],
    *,
    cpu: str = "1",
    replicas: int = 1,
    selector: dict[str, str] | None = None,
    job_annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
    if selector:
        spec["nodeSelector"] = selector
    template: dict[str, Any] = {
        "spec": {
            "parallelism": pods,
            "completions": pods,
            "template": {"metadata": {"annotations": annotations}, "spec": spec},
        }
    }
    if job_annotations:
        template["metadata"] = {"annotations": job_annotations}
    return {"name": name, "replicas": replicas, "template": template}


def manifest(*members: dict[str, Any], name: str = "lws") -> dict[str, Any]:
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": name, "namespace": "team"},
        "spec": {"replicatedJobs": list(members)},
    }


def grouped(level: str = RACK, kind: str = REQ, group: str = "g") -> dict[str, str]:
    return {kind: level, GROUP: group}


def leader_and_workers(
    workers: int = 4, *, worker_cpu: str = "2", selector: dict[str, str] | None = None
) -> JobSetRequest:
    return parse_jobset(
        manifest(
            member("leader", 1, grouped(), selector=selector),
            member("workers", workers, grouped(), cpu=worker_cpu),
        ),
        source="lws.yaml",
    )


# -- input --


@pytest.mark.parametrize(
    ("members", "index", "words"),
    [
        pytest.param(
            [member("w", 4, grouped())], 0, "needs exactly 2 replicated jobs", id="group-of-one"
        ),
        pytest.param(
            [member("a", 1, grouped()), member("b", 1, grouped()), member("c", 1, grouped())],
            2,
            "found 3",
            id="three",
        ),
        pytest.param(
            [member("a", 2, grouped()), member("b", 3, grouped())],
            1,
            "one member of exactly 1 pod",
            id="no-single-pod",
        ),
        pytest.param(
            [member("a", 1, grouped()), member("b", 4, grouped("block"))],
            1,
            "same required or preferred topology",
            id="other-level",
        ),
        pytest.param(
            [member("a", 1, grouped()), member("b", 4, grouped(kind=PREF))],
            1,
            "same required or preferred topology",
            id="required-and-preferred",
        ),
        pytest.param(
            [
                member("a", 1, grouped()),
                member(
                    "b",
                    4,
                    grouped(),
                    job_annotations={"alpha.jobset.sigs.k8s.io/exclusive-topology": RACK},
                ),
            ],
            1,
            "cannot have an exclusive member",
            id="exclusive",
        ),
    ],
)
def test_kueues_group_rules_are_input_errors(
    members: list[dict[str, Any]], index: int, words: str
) -> None:
    with pytest.raises(InputError) as e:
        parse_jobset(manifest(*members), source="lws.yaml")
    assert (e.value.source, e.value.obj) == ("lws.yaml", "team/lws")
    assert e.value.field == (
        f"spec.replicatedJobs[{index}].template.spec.template.metadata.annotations[{GROUP}]"
    )
    assert words in str(e.value)


def test_a_bad_group_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    jobsets = tmp_path / "lws.yaml"
    jobsets.write_text(yaml.safe_dump(manifest(member("w", 4, grouped()))))
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(yaml.safe_dump(kube_node("n1", {RACK: "r1"})))
    code = main(["plan", "--cluster", str(nodes), str(jobsets)])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    line = err.strip()
    assert "\n" not in line and "Traceback" not in line
    for part in (str(jobsets), "team/lws", GROUP, "needs exactly 2 replicated jobs"):
        assert part in line


@pytest.mark.parametrize(
    ("counts", "leader"),
    [
        pytest.param((1, 4), 0, id="leader-first"),
        pytest.param((4, 1), 1, id="leader-second"),
        pytest.param((1, 1), 1, id="one-pod-each-the-second-leads"),
    ],
)
def test_the_leader_is_chosen_as_kueue_chooses_it(counts: tuple[int, int], leader: int) -> None:
    js = parse_jobset(
        manifest(member("a", counts[0], grouped()), member("b", counts[1], grouped()))
    )
    (group,) = podset_groups(js)
    assert (group.name, group.leader, group.workers) == ("g", leader, 1 - leader)


# -- placement --


def two_racks() -> tuple[Node, ...]:
    """Rack r1: h1, h2 (4 cpus each), exactly the room of 4 workers of 2 cpus; rack r2: h3, h4,
    h5 (4 cpus each)."""
    return tuple(
        res_node(h, {RACK: r, HOST: h}, cpu="4", pods="10")
        for r, h in (("r1", "h1"), ("r1", "h2"), ("r2", "h3"), ("r2", "h4"), ("r2", "h5"))
    )


def racks_of(plan: Plan, nodes: tuple[Node, ...]) -> dict[str, set[str]]:
    rack = {n.name: n.labels[RACK] for n in nodes}
    found: dict[str, set[str]] = {}
    for job in plan.jobsets[0].jobs:
        found.setdefault(job.replicated_job, set()).update(rack[p.node] for p in job.pods)
    return found


@pytest.mark.parametrize("solver", SOLVERS)
def test_every_solver_keeps_leader_and_workers_in_one_rack(solver: str) -> None:
    """Alone the workers fit r1 exactly (Kueue's tightest rack); beside the leader only r2."""
    nodes = two_racks()
    snapshot = ClusterSnapshot(nodes=nodes)
    js = leader_and_workers()
    plan = get_solver(solver).solve(snapshot, [js], OPTIONS)
    assert check(plan, snapshot, [js], OPTIONS) == []
    outcome = plan.jobsets[0]
    racks = racks_of(plan, nodes)
    if solver == "first-fit":
        # upstream's way: the first child Job (the leader) picks the first rack that takes it and
        # the others follow, so the workers do not all fit; the group is still never split
        assert outcome.status == "partial"
        assert set().union(*racks.values()) == {"r1"}
        return
    assert outcome.status == "placed"
    assert racks == {"leader": {"r2"}, "workers": {"r2"}}


def test_without_the_group_leader_and_workers_part() -> None:
    """Without the group name Kueue places each PodSet alone, in order: the workers fill r1, the
    tightest rack, and the leader, finding no room left there, goes to r2."""
    nodes = two_racks()
    snapshot = ClusterSnapshot(nodes=nodes)
    js = parse_jobset(
        manifest(member("workers", 4, {REQ: RACK}, cpu="2"), member("leader", 1, {REQ: RACK}))
    )
    plan = get_solver("best-fit").solve(snapshot, [js], OPTIONS)
    assert check(plan, snapshot, [js], OPTIONS) == []
    assert racks_of(plan, nodes) == {"workers": {"r1"}, "leader": {"r2"}}


def test_the_model_ties_the_members_required_domains() -> None:
    """CP-SAT's model alone (family `add_podset_groups`): leader and workers in different racks is
    infeasible, in one rack feasible."""
    from ortools.sat.python import cp_model

    from placer.solver.cpsat import aggregate, build_model

    ctx = PlacementContext(ClusterSnapshot(nodes=two_racks()), [leader_and_workers()], OPTIONS)
    leader, workers = ctx.job_classes
    for leader_rack, workers_rack, status in (
        ("r1", "r2", cp_model.INFEASIBLE),
        ("r2", "r2", cp_model.OPTIMAL),
    ):
        built = build_model(aggregate(ctx))
        local = built.variables.local
        built.model.add(local[(leader.index, RACK, leader_rack)] == 1)
        built.model.add(local[(workers.index, RACK, workers_rack)] == 1)
        solver = cp_model.CpSolver()
        solver.parameters.num_workers = 1
        assert solver.solve(built.model) == status, (leader_rack, workers_rack)


def test_the_checker_refuses_a_split_group() -> None:
    nodes = two_racks()
    snapshot = ClusterSnapshot(nodes=nodes)
    js = leader_and_workers()
    plan = get_solver("best-fit").solve(snapshot, [js], OPTIONS)
    assert check(plan, snapshot, [js], OPTIONS) == []
    doc = plan.model_dump()
    (leader_job,) = [j for j in doc["jobsets"][0]["jobs"] if j["replicated_job"] == "leader"]
    leader_job["pods"][0] = PodPlacement(index=0, node="h1").model_dump()
    problems = check(Plan.model_validate(doc), snapshot, [js], OPTIONS)
    assert problems == [
        f"team/lws: podset group g (leader, workers) requires one domain of {RACK}, spans r1, r2"
    ]


def test_a_preferred_group_may_spread_but_keeps_its_leader() -> None:
    """Preferred rack: 6 workers of 2 cpus fit no rack beside the leader, so Kueue spreads them;
    both members are placed, the leader's pod on a node with room beside the workers there."""
    nodes = two_racks()
    snapshot = ClusterSnapshot(nodes=nodes)
    js = parse_jobset(
        manifest(
            member("leader", 1, grouped(kind=PREF)),
            member("workers", 8, grouped(kind=PREF), cpu="2"),
        )
    )
    for solver in ("best-fit", "cpsat"):
        plan = get_solver(solver).solve(snapshot, [js], OPTIONS)
        assert check(plan, snapshot, [js], OPTIONS) == []
        assert plan.jobsets[0].status == "placed", solver
        assert racks_of(plan, nodes)["workers"] == {"r1", "r2"}


# -- reasons --


def apart() -> tuple[ClusterSnapshot, JobSetRequest]:
    """The leader may only run on the head node h9 (rack r2, 1 cpu); the workers fit only r1."""
    nodes = (
        res_node("h1", {RACK: "r1", HOST: "h1"}, cpu="2", pods="10"),
        res_node("h2", {RACK: "r1", HOST: "h2"}, cpu="2", pods="10"),
        res_node("h9", {RACK: "r2", HOST: "h9", "role": "head"}, cpu="1", pods="10"),
    )
    js = leader_and_workers(2, selector={"role": "head"})
    return ClusterSnapshot(nodes=nodes), js


GROUP_REASON = (
    "workers: needs 2 pods of {cpu: 2}; fits 2 on 2 of 3 nodes; excluded: 1 no room for one pod "
    f"(cpu); podset group g: at most 0 of the 2 pods fit beside the leader (leader) in one domain "
    f"of {RACK} (required)"
)


@pytest.mark.parametrize("solver", ["best-fit", "largest-first", "cpsat"])
def test_a_group_that_fits_only_apart_says_so(solver: str) -> None:
    snapshot, js = apart()
    plan = get_solver(solver).solve(snapshot, [js], OPTIONS)
    assert check(plan, snapshot, [js], OPTIONS) == []
    outcome = plan.jobsets[0]
    assert outcome.status == "unschedulable"
    assert outcome.reason == GROUP_REASON


def test_explain_says_the_group_fits_only_apart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snapshot, js = apart()
    jobsets = tmp_path / "lws.yaml"
    jobsets.write_text(yaml.safe_dump(js.manifest))
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(
        yaml.safe_dump_all(
            kube_node(n.name, dict(n.labels), cpu=str(n.free["cpu"])) for n in snapshot.nodes
        )
    )
    argv = ["--cluster", str(nodes), "--levels", ",".join(LEVELS), "--workers", "1"]
    code = main(["explain", *argv, str(jobsets), "team/lws"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "podset group g: at most 0 of the 2 pods fit beside the leader (leader)" in out


# -- properties --


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(group_scenarios())
def test_every_plan_keeps_the_group_and_best_fit_agrees_with_the_diagnosis(
    scenario: tuple[ClusterSnapshot, JobSetRequest],
) -> None:
    """Every solver's plan passes the checker (so no group is split); best-fit places the group
    exactly when the diagnosis finds room for it (Kueue's search and the classifier agree); cpsat
    places it whenever best-fit does."""
    snapshot, js = scenario
    options = SolveOptions(workers=1, time_limit_s=5)
    plans = {s: solve_checked(s, snapshot, [js], options) for s in SOLVERS}
    placed = {s: p.jobsets[0].status == "placed" for s, p in plans.items()}
    diagnosis = Classifier(PlacementContext(snapshot, [js], options)).diagnose(js)
    assert placed["best-fit"] == all(d.fits for d in diagnosis)
    assert placed["cpsat"] >= placed["best-fit"]
    if not placed["best-fit"]:
        assert plans["best-fit"].jobsets[0].reason
