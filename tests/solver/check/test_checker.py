"""The independent checker passes a valid plan and catches each kind of violation in a corrupt one.

Each case corrupts one thing (the plan, or the snapshot it is judged against) and names the line
the checker must report: proof that the checker can fail.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from placer.model.cluster import ClusterSnapshot, Node
from placer.model.options import SolveOptions
from placer.model.plan import DomainRef, JobPlacement, JobSetOutcome, Plan, PodPlacement
from placer.model.scheduling import NodeSelectorRequirement, NodeSelectorTerm, Taint
from placer.model.workload import JobSetRequest
from placer.solver.check.checker import check
from tests.strategies import (
    BLOCK,
    HOSTNAME,
    NODEPOOL,
    cluster,
    jobset,
    node,
    pod,
    pool,
    resources,
    rjob,
    solve_checked,
)

PORT = (8080, "TCP")
ROLE = {"role": "cpu"}
Case = tuple[Plan, ClusterSnapshot, list[JobSetRequest], SolveOptions]


def _snapshot() -> ClusterSnapshot:
    cpu = [node(n, tpu=0, cpu=8, labels=ROLE) for n in ("cpu-0", "cpu-1", "cpu-2")]
    return cluster(
        pool("p0", 2),
        pool("p1", 2),
        pool("p2", 2, jobsets=["team-b/other"]),
        *cpu,
        node("down", tpu=0, labels=ROLE, ready=False),
        node("cordoned", tpu=0, labels=ROLE, unschedulable=True),
    )


def _jobsets() -> list[JobSetRequest]:
    names = NodeSelectorRequirement(
        key="metadata.name", operator="In", values=("cpu-0", "cpu-1", "down", "cordoned")
    )
    driver = pod(
        tpu=0,
        cpu=4,
        node_selector=ROLE,
        host_ports=[PORT],
        affinity=[NodeSelectorTerm(match_node_names=(names,))],
    )
    a = jobset(
        "a",
        rjob(replicas=2, pods_per_job=2),
        rjob("driver", pods_per_job=1, exclusive=None, shape=driver),
    )
    b = jobset("b", rjob(pods_per_job=2), order=1)
    return [a, b]


def _valid() -> Case:
    snap, queue = _snapshot(), _jobsets()
    plan = solve_checked("best-fit", snap, queue)
    return plan, snap, queue, SolveOptions()


def test_the_base_plan_is_valid_and_as_expected() -> None:
    plan, snap, queue, options = _valid()
    assert check(plan, snap, queue, options) == []
    a = plan.outcome("team-a/a")
    assert [
        (j.name, j.domain.value if j.domain else None, [p.node for p in j.pods]) for j in a.jobs
    ] == [
        ("a-workers-0", "p0", ["p0-host-0", "p0-host-1"]),
        ("a-workers-1", "p1", ["p1-host-0", "p1-host-1"]),
        ("a-driver-0", None, ["cpu-0"]),
    ]
    assert plan.outcome("team-a/b").status == "unschedulable"


# -- corruption helpers --


def _outcome(plan: Plan, key: str, **update: Any) -> Plan:
    return plan.model_copy(
        update={
            "jobsets": [o.model_copy(update=update) if o.key == key else o for o in plan.jobsets]
        }
    )


def _job(plan: Plan, job_name: str, **update: Any) -> Plan:
    a = plan.outcome("team-a/a")
    jobs = [j.model_copy(update=update) if j.name == job_name else j for j in a.jobs]
    return _outcome(plan, "team-a/a", jobs=jobs)


def _pods(*nodes: str) -> list[PodPlacement]:
    return [PodPlacement(index=i, node=n) for i, n in enumerate(nodes)]


def _ref(value: str) -> DomainRef:
    return DomainRef(key=NODEPOOL, value=value, path=[(NODEPOOL, value)])


def _node(snap: ClusterSnapshot, name: str, **update: Any) -> ClusterSnapshot:
    return snap.model_copy(
        update={
            "nodes": tuple(n.model_copy(update=update) if n.name == name else n for n in snap.nodes)
        }
    )


def _plan(fn: Callable[[Plan], Plan]) -> Callable[[Case], Case]:
    return lambda c: (fn(c[0]), c[1], c[2], c[3])


def _snap(fn: Callable[[ClusterSnapshot], ClusterSnapshot]) -> Callable[[Case], Case]:
    return lambda c: (c[0], fn(c[1]), c[2], c[3])


def _extra_outcome(plan: Plan, outcome: JobSetOutcome) -> Plan:
    return plan.model_copy(update={"jobsets": [*plan.jobsets, outcome]})


CASES = [
    pytest.param(
        _plan(lambda p: p.model_copy(update={"jobsets": p.jobsets[:1]})),
        "team-a/b: missing from the plan",
        id="missing-jobset",
    ),
    pytest.param(
        _plan(lambda p: _extra_outcome(p, p.jobsets[1])),
        "team-a/b: appears more than once in the plan",
        id="duplicate-jobset",
    ),
    pytest.param(
        _plan(
            lambda p: _extra_outcome(
                p, JobSetOutcome(name="ghost", status="unschedulable", reason="x")
            )
        ),
        "default/ghost: in the plan but not given",
        id="unknown-jobset",
    ),
    pytest.param(
        _plan(lambda p: _job(p, "a-workers-1", name="a-workers-7")),
        "team-a/a: child Job a-workers-7 is not a child Job of this JobSet",
        id="wrong-child-job-name",
    ),
    pytest.param(
        _plan(lambda p: _job(p, "a-workers-1", index=0)),
        "team-a/a: a-workers-1: labeled workers[0], expected workers[1]",
        id="wrong-job-index",
    ),
    pytest.param(
        _plan(
            lambda p: _job(
                p,
                "a-workers-1",
                pods=[
                    PodPlacement(index=0, node="p1-host-0"),
                    PodPlacement(index=2, node="p1-host-1"),
                ],
            )
        ),
        "team-a/a: a-workers-1: pod indices [0, 2], expected 0..1",
        id="pod-indices",
    ),
    pytest.param(
        _plan(lambda p: _job(p, "a-workers-1", pods=_pods("p1-host-0"))),
        "team-a/a: a-workers-1: pod indices [0], expected 0..1",
        id="missing-pod",
    ),
    pytest.param(
        _plan(lambda p: _outcome(p, "team-a/a", jobs=p.outcome("team-a/a").jobs[:2])),
        "team-a/a: placed but child Jobs not placed: a-driver-0",
        id="all-or-nothing",
    ),
    pytest.param(
        _plan(
            lambda p: _outcome(
                p, "team-a/a", jobs=[*p.outcome("team-a/a").jobs, p.outcome("team-a/a").jobs[0]]
            )
        ),
        "team-a/a: child Job a-workers-0 placed more than once",
        id="job-twice",
    ),
    pytest.param(
        _plan(
            lambda p: _outcome(
                p,
                "team-a/b",
                jobs=[
                    JobPlacement(
                        name="b-workers-0",
                        replicated_job="workers",
                        index=0,
                        domain=_ref("p1"),
                        pods=_pods("p1-host-0", "p1-host-1"),
                    )
                ],
            )
        ),
        "team-a/b: unschedulable but holds 1 child Jobs",
        id="unschedulable-holds",
    ),
    pytest.param(
        _plan(lambda p: _outcome(p, "team-a/b", reason="")),
        "team-a/b: unschedulable without a reason",
        id="no-reason",
    ),
    pytest.param(
        _plan(lambda p: _outcome(p, "team-a/a", status="partial")),
        "team-a/a: partial but holds every child Job",
        id="partial-with-all",
    ),
    pytest.param(
        _plan(lambda p: _outcome(p, "team-a/b", status="partial")),
        "team-a/b: partial but holds no child Job",
        id="partial-with-none",
    ),
    pytest.param(
        _plan(lambda p: _outcome(p, "team-a/a", accelerators=999)),
        "team-a/a: claims 999 accelerator units, holds 17",
        id="accelerators",
    ),
    pytest.param(
        _plan(lambda p: _outcome(p, "team-a/a", priority=5)),
        "team-a/a: priority 5 in the plan, 0 in the JobSet",
        id="priority",
    ),
    pytest.param(
        _plan(lambda p: _job(p, "a-workers-0", domain=None)),
        "team-a/a: a-workers-0: exclusive on cloud.google.com/gke-nodepool but has no domain",
        id="exclusive-without-domain",
    ),
    pytest.param(
        _plan(lambda p: _job(p, "a-driver-0", domain=_ref("p1"))),
        "team-a/a: a-driver-0: has a domain but its replicated job is not exclusive",
        id="shared-with-domain",
    ),
    pytest.param(
        _plan(
            lambda p: _job(
                p, "a-workers-0", domain=DomainRef(key=BLOCK, value="b0", path=[(BLOCK, "b0")])
            )
        ),
        f"team-a/a: a-workers-0: domain of key {BLOCK}, expected {NODEPOOL}",
        id="domain-key",
    ),
    pytest.param(
        _plan(
            lambda p: _job(
                p,
                "a-workers-0",
                domain=DomainRef(key=NODEPOOL, value="p0", path=[(NODEPOOL, "p1")]),
            )
        ),
        "does not end at cloud.google.com/gke-nodepool=p0",
        id="domain-path",
    ),
    pytest.param(
        _plan(
            lambda p: _job(
                p, "a-workers-1", domain=_ref("p0"), pods=_pods("p0-host-0", "p0-host-1")
            )
        ),
        "team-a/a: a-workers-0: exclusive domain cloud.google.com/gke-nodepool=p0 shares "
        "node p0-host-0 with team-a/a a-workers-1",
        id="exclusivity-planned",
    ),
    pytest.param(
        _plan(lambda p: _job(p, "a-driver-0", pods=_pods("p1-host-0"))),
        "shares node p1-host-0 with team-a/a a-driver-0",
        id="shared-pod-in-domain",
    ),
    pytest.param(
        _plan(
            lambda p: _job(
                p, "a-workers-1", domain=_ref("p2"), pods=_pods("p2-host-0", "p2-host-1")
            )
        ),
        "team-a/a: a-workers-1: exclusive domain cloud.google.com/gke-nodepool=p2 has "
        "running pods of team-b/other on p2-host-0",
        id="exclusivity-running",
    ),
    pytest.param(
        _plan(lambda p: _job(p, "a-workers-1", pods=_pods("p1-host-0", "cpu-1"))),
        "team-a/a: a-workers-1: pod 1 on cpu-1, outside its domain "
        "cloud.google.com/gke-nodepool=p1",
        id="outside-domain",
    ),
    pytest.param(
        _plan(lambda p: _job(p, "a-workers-1", domain=_ref("p9"))),
        "team-a/a: a-workers-1: domain cloud.google.com/gke-nodepool=p9 has no node",
        id="empty-domain",
    ),
    pytest.param(
        _plan(lambda p: _job(p, "a-driver-0", pods=_pods("nowhere"))),
        "team-a/a: a-driver-0 pod 0 on unknown node nowhere",
        id="unknown-node",
    ),
    pytest.param(
        _snap(lambda s: _node(s, "cpu-0", free=resources(cpu=2, pods=110))),
        "node cpu-0: cpu overcommitted: planned 4, free 2",
        id="cpu-overcommit",
    ),
    pytest.param(
        _snap(lambda s: _node(s, "p0-host-0", free=resources(cpu=32, pods=110, tpu=2))),
        "node p0-host-0: google.com/tpu overcommitted: planned 4, free 2",
        id="tpu-overcommit",
    ),
    pytest.param(
        _snap(lambda s: _node(s, "cpu-0", free=resources(cpu=8, pods=0))),
        "node cpu-0: pods overcommitted: planned 1, free 0",
        id="pod-slots",
    ),
    pytest.param(
        _snap(lambda s: _node(s, "cpu-0", used_host_ports=(PORT,))),
        "node cpu-0: host port 8080/TCP bound 2 times",
        id="host-port",
    ),
    pytest.param(
        _plan(lambda p: _job(p, "a-driver-0", pods=_pods("down"))),
        "node down: NotReady but given pods",
        id="not-ready",
    ),
    pytest.param(
        _plan(lambda p: _job(p, "a-driver-0", pods=_pods("cordoned"))),
        "node cordoned: cordoned but given pods",
        id="cordoned",
    ),
    pytest.param(
        _snap(lambda s: _node(s, "cpu-0", labels={HOSTNAME: "cpu-0"})),
        "node cpu-0: pod of team-a/a a-driver-0 breaks nodeSelector role=cpu",
        id="node-selector",
    ),
    pytest.param(
        _plan(lambda p: _job(p, "a-driver-0", pods=_pods("cpu-2"))),
        "node cpu-2: pod of team-a/a a-driver-0 breaks required node affinity",
        id="node-affinity",
    ),
    pytest.param(
        _snap(
            lambda s: _node(
                s, "cpu-0", taints=(Taint(key="dedicated", value="infra", effect="NoExecute"),)
            )
        ),
        "node cpu-0: pod of team-a/a a-driver-0 does not tolerate taint dedicated:NoExecute",
        id="taint",
    ),
    pytest.param(
        lambda c: (c[0], c[1], c[2], SolveOptions(extended_resource_toleration=False)),
        "node p0-host-0: pod of team-a/a a-workers-0 does not tolerate taint "
        "google.com/tpu:NoSchedule",
        id="no-extended-resource-toleration",
    ),
    pytest.param(
        lambda c: (
            c[0],
            c[1],
            [c[2][0], c[2][1].model_copy(update={"order": -1})],
            SolveOptions(queue="strict-fifo"),
        ),
        "team-a/a: placed under strict-fifo although the earlier team-a/b is not",
        id="strict-fifo",
    ),
]


@pytest.mark.parametrize(("corrupt", "expected"), CASES)
def test_checker_catches(corrupt: Callable[[Case], Case], expected: str) -> None:
    plan, snap, queue, options = corrupt(_valid())
    violations = check(plan, snap, queue, options)
    assert any(expected in v for v in violations), violations
    assert violations == sorted(violations)


def test_checker_catches_a_broken_required_topology() -> None:
    snap = cluster(
        pool("p0", 1, block="b0"), pool("p1", 1, block="b1"), levels=(BLOCK, NODEPOOL, HOSTNAME)
    )
    free = [jobset("a", rjob(replicas=2, pods_per_job=1))]
    plan = solve_checked("best-fit", snap, free)
    assert plan.outcome("team-a/a").status == "placed"
    required = [jobset("a", rjob(replicas=2, pods_per_job=1, required=BLOCK))]
    assert check(plan, snap, required, SolveOptions()) == [
        f"team-a/a: workers requires one domain of {BLOCK}, spans b0, b1"
    ]


def test_extended_resource_toleration_does_not_cover_other_taints() -> None:
    taint = Taint(key="nvidia.com/gpu", value="present", effect="NoSchedule")
    gpu_node = Node(
        name="g0",
        labels={NODEPOOL: "g"},
        taints=(taint,),
        allocatable=resources(cpu=8, pods=10),
        free=resources(cpu=8, pods=10),
    )
    snap = cluster(gpu_node)
    js = [jobset("a", rjob(pods_per_job=1, tpu=0, cpu=1))]
    plan = Plan.model_validate(
        {
            "solver": {"name": "hand", "status": "HEURISTIC"},
            "jobsets": [
                {
                    "namespace": "team-a",
                    "name": "a",
                    "status": "placed",
                    "accelerators": 1,
                    "jobs": [
                        {
                            "name": "a-workers-0",
                            "replicated_job": "workers",
                            "index": 0,
                            "domain": _ref("g").model_dump(),
                            "pods": [{"index": 0, "node": "g0"}],
                        }
                    ],
                }
            ],
        }
    )
    assert check(plan, snap, js, SolveOptions()) == [
        "node g0: pod of team-a/a a-workers-0 does not tolerate taint nvidia.com/gpu:NoSchedule"
    ]
