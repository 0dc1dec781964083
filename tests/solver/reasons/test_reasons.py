"""Unschedulable reasons as the planners word them: exact strings on small hand-built clusters,
one per reason kind (`placer.solver.reasons`)."""

from __future__ import annotations

from collections import Counter
from decimal import Decimal

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from placer.model.cluster import ClusterSnapshot
from placer.model.options import SolveOptions
from placer.model.plan import Plan
from placer.model.scheduling import NodeSelectorRequirement, NodeSelectorTerm
from placer.model.workload import JobSetRequest, PodShape
from placer.solver.context import PlacementContext
from placer.solver.reasons import (
    KINDS,
    Classifier,
    Occupancy,
    Reason,
    ReasonTally,
    RjobDiagnosis,
    diagnose,
    format_shape,
    jobset_reason,
    reason_lines,
)
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
    scenarios,
    solve_checked,
)

SEL = {TPU_TOPOLOGY: "2x4"}
POOL_HEAD = f"workers: needs 4 domains of {NODEPOOL} for 2 pods of {{google.com/tpu: 4}}"
FILTERED = (
    f"1 held by running team-b/other, 3 not matching nodeSelector {TPU_TOPOLOGY}=2x4, "
    "1 too small: fits 1 of 2 pods (1 host cordoned), "
    "1 too small: fits 1 of 2 pods (1 host NotReady)"
)


def _issue_cluster() -> ClusterSnapshot:
    """13 node pools: the example of the placer issue."""
    not_ready = pool("notready", 2)
    not_ready[1] = not_ready[1].model_copy(update={"ready": False})
    cordoned = pool("cordoned", 2)
    cordoned[0] = cordoned[0].model_copy(update={"unschedulable": True})
    return cluster(
        pool("held", 2, jobsets=["team-b/other"]),
        not_ready,
        cordoned,
        *(pool(f"big{i}", 2, topology="4x4") for i in range(3)),
        *(pool(f"a{i}", 2) for i in range(7)),
    )


def _issue_queue() -> list[JobSetRequest]:
    x = jobset("x", rjob(replicas=2, node_selector=SEL), order=0)
    y = jobset("y", rjob(replicas=2, node_selector=SEL), order=1)
    ms = jobset("multislice", rjob(replicas=4, node_selector=SEL), order=2)
    return [x, y, ms]


def _reason(plan: Plan, key: str) -> str:
    return plan.outcome(key).reason


def test_the_issue_example_word_for_word() -> None:
    plan = solve_checked("best-fit", _issue_cluster(), _issue_queue())
    assert _reason(plan, "team-a/multislice") == (
        f"{POOL_HEAD}; 3 available of 13: {FILTERED}, "
        "4 taken by same-priority JobSets in this plan (team-a/x, team-a/y)"
    )


def test_a_partial_jobset_counts_its_own_domains_apart() -> None:
    plan = solve_checked("first-fit", _issue_cluster(), _issue_queue())
    assert _reason(plan, "team-a/multislice") == (
        f"1 of 4 child Jobs could not be placed (workers-3): {POOL_HEAD}; 0 available of 13: "
        f"{FILTERED}, 4 taken by same-priority JobSets in this plan (team-a/x, team-a/y), "
        "3 taken by its own child Jobs"
    )


def test_reason_from_an_occupancy_built_by_hand() -> None:
    ctx = PlacementContext(_issue_cluster(), _issue_queue(), SolveOptions())
    ms = ctx.jobsets[2]
    taken = {f"a{i}-host-{h}": frozenset({"team-a/x"}) for i in range(5) for h in range(2)}
    assert jobset_reason(diagnose(ctx, ms, Occupancy(reserved=taken))) == (
        f"{POOL_HEAD}; 2 available of 13: {FILTERED}, "
        "5 taken by same-priority JobSets in this plan (team-a/x)"
    )
    shared = {"a5-host-1": frozenset({"team-c/web"})}
    assert jobset_reason(diagnose(ctx, ms, Occupancy(reserved=taken, shared=shared))) == (
        f"{POOL_HEAD}; 1 available of 13: {FILTERED}, "
        "5 taken by same-priority JobSets in this plan (team-a/x), "
        "1 taken by higher-priority JobSets in this plan (team-c/web)"
    )


def test_too_small_names_what_is_in_use_or_short() -> None:
    half = resources(cpu=32, pods=110, tpu=2)
    snap = cluster(
        pool("one", 1),
        pool("used", 2, free=half),
        pool("nocpu", 2, free=resources(cpu=0, pods=110, tpu=4)),
        pool("noslots", 2, free=resources(cpu=32, pods=0, tpu=4)),
    )
    plan = solve_checked("best-fit", snap, [jobset("a", rjob())])
    assert _reason(plan, "team-a/a") == (
        f"workers: needs 1 domain of {NODEPOOL} for 2 pods of {{google.com/tpu: 4}}; "
        "0 available of 4: 1 too small: fits 0 of 2 pods (2 hosts with cpu in use), "
        "1 too small: fits 0 of 2 pods (2 hosts with google.com/tpu in use), "
        "1 too small: fits 0 of 2 pods (2 hosts with pods in use), "
        "1 too small: fits 1 of 2 pods (1 host, short of google.com/tpu)"
    )


def test_single_host_pool_is_too_small_and_a_port_counts_as_a_limit() -> None:
    port = (8471, "TCP")
    snap = cluster(pool("one", 1), pool("busy", 2, used_host_ports=[port]))
    plan = solve_checked("best-fit", snap, [jobset("a", rjob(host_ports=[port]))])
    assert _reason(plan, "team-a/a") == (
        f"workers: needs 1 domain of {NODEPOOL} for 2 pods of {{google.com/tpu: 4}}; "
        "0 available of 2: 1 too small: fits 0 of 2 pods (2 hosts with host port 8471/TCP in use), "
        "1 too small: fits 1 of 2 pods (1 host, short of google.com/tpu)"
    )


def test_affinity_and_taint_exclusions() -> None:
    req = NodeSelectorRequirement(key=NODEPOOL, operator="In", values=("p0",))
    snap = cluster(pool("p0", 2), pool("p1", 2))
    a = jobset("a", rjob(affinity=[NodeSelectorTerm(match_expressions=(req,))]))
    plan = solve_checked("best-fit", snap, [jobset("x", rjob()), a.model_copy(update={"order": 1})])
    assert _reason(plan, "team-a/a") == (
        f"workers: needs 1 domain of {NODEPOOL} for 2 pods of {{google.com/tpu: 4}}; "
        f"0 available of 2: 1 not matching node affinity {NODEPOOL} In [p0], "
        "1 taken by same-priority JobSets in this plan (team-a/x)"
    )
    no_ert = SolveOptions(extended_resource_toleration=False)
    plan = solve_checked("best-fit", snap, [a], no_ert)
    assert _reason(plan, "team-a/a") == (
        f"workers: needs 1 domain of {NODEPOOL} for 2 pods of {{google.com/tpu: 4}}; "
        "0 available of 2: 1 not matching node affinity "
        f"{NODEPOOL} In [p0], 1 with untolerated taint google.com/tpu=present:NoSchedule"
    )


def test_shared_replicated_job_counts_pods_and_nodes() -> None:
    snap = cluster(
        pool("p0", 2),
        node("cpu-0", tpu=0, cpu=8),
        node("cpu-1", tpu=0, cpu=2),
        node("cpu-2", tpu=0, ready=False),
        node("edge", tpu=0, cpu=4, labels={"zone": "x"}),
    )
    a = jobset(
        "a",
        rjob(replicas=1, pods_per_job=2),
        rjob(
            "driver",
            replicas=2,
            pods_per_job=2,
            exclusive=None,
            tpu=0,
            cpu=4,
            node_selector={"zone": "x"},
        ),
    )
    plan = solve_checked("best-fit", snap, [a])
    assert _reason(plan, "team-a/a") == (
        # cpu-2 is NotReady too, but would not match even when ready: the rule comes first
        "driver: needs 4 pods of {cpu: 4}; fits 1 on 1 of 6 nodes; excluded: "
        "5 not matching nodeSelector zone=x"
    )


def test_shared_pods_see_nodes_reserved_for_exclusive_child_jobs() -> None:
    snap = cluster(
        pool("p0", 1),
        node("cpu-0", tpu=0, cpu=4),
    )
    x = jobset("x", rjob(pods_per_job=1, cpu=1), order=0)
    cpu_only = jobset("c", rjob("cpu", pods_per_job=2, exclusive=None, tpu=0, cpu=4), order=1)
    plan = solve_checked("best-fit", snap, [x, cpu_only], SolveOptions())
    assert _reason(plan, "team-a/c") == (
        "cpu: needs 2 pods of {cpu: 4}; fits 1 on 1 of 2 nodes; excluded: "
        "1 with untolerated taint google.com/tpu=present:NoSchedule"
    )
    untainted = cluster(
        node("t0", tpu=4, taints=[], labels={NODEPOOL: "p0"}), node("cpu-0", tpu=0, cpu=4)
    )
    plan = solve_checked("best-fit", untainted, [x, cpu_only])
    assert _reason(plan, "team-a/c") == (
        "cpu: needs 2 pods of {cpu: 4}; fits 1 on 1 of 2 nodes; excluded: "
        "1 reserved for exclusive child Jobs (team-a/x)"
    )


def test_replicated_jobs_that_fit_alone_but_not_together() -> None:
    snap = cluster(pool("p0", 2))
    a = jobset("a", rjob("left", pods_per_job=2), rjob("right", pods_per_job=2))
    plan = solve_checked("best-fit", snap, [a])
    head = f"needs 1 domain of {NODEPOOL} for 2 pods of {{google.com/tpu: 4}}; 1 available of 1"
    assert _reason(plan, "team-a/a") == (
        "each replicated job fits alone, but not all together beside the rest of the plan: "
        f"left: {head}; right: {head}"
    )


def test_required_locality_that_no_block_holds() -> None:
    snap = cluster(
        pool("p0", 2, block="b0"), pool("p1", 2, block="b1"), levels=(BLOCK, NODEPOOL, HOSTNAME)
    )
    plan = solve_checked("best-fit", snap, [jobset("a", rjob(replicas=2, required=BLOCK))])
    assert _reason(plan, "team-a/a") == (
        f"workers: needs 2 domains of {NODEPOOL} for 2 pods of {{google.com/tpu: 4}}; "
        f"2 available of 2; at most 1 in one domain of {BLOCK} (required)"
    )


def test_shape_formatting() -> None:
    shape = PodShape(requests={"cpu": Decimal("0.5"), "memory": Decimal(16 * 2**30)})
    assert format_shape(shape) == "{cpu: 500m, memory: 16Gi}"
    gpu = PodShape(requests={"cpu": Decimal(8), "nvidia.com/gpu": Decimal(8)})
    assert format_shape(gpu) == "{nvidia.com/gpu: 8}"


# -- against occupancies built by hand -------------------------------------------------------------


def _hosts(*pools: str, hosts: int = 2) -> list[str]:
    return [f"{p}-host-{h}" for p in pools for h in range(hosts)]


def _reserve(**owners: list[str]) -> Occupancy:
    """Occupancy with the nodes of each JobSet (keyword `team_b__z` -> `team-b/z`) reserved."""
    reserved: dict[str, frozenset[str]] = {}
    for owner, nodes in owners.items():
        key = owner.replace("__", "/").replace("_", "-")
        for n in nodes:
            reserved[n] = reserved.get(n, frozenset()) | {key}
    return Occupancy(reserved=reserved)


def test_the_reason_names_what_each_plan_took() -> None:
    snap = cluster(*(pool(f"p{i}", 2) for i in range(3)))
    x, y = jobset("x", rjob(replicas=3), order=0), jobset("y", rjob(), order=1)
    ctx = PlacementContext(snap, [x, y], SolveOptions())
    head = f"workers: needs 3 domains of {NODEPOOL} for 2 pods of {{google.com/tpu: 4}}"
    one = _reserve(team_a__x=_hosts("p0"))
    assert jobset_reason(diagnose(ctx, x, one)) == (
        f"{head}; 2 available of 3: 1 taken by its own child Jobs"
    )
    two = _reserve(team_a__x=_hosts("p0"), team_b__z=_hosts("p1"))
    assert jobset_reason(diagnose(ctx, x, two)) == (
        f"{head}; 1 available of 3: 1 taken by higher-priority JobSets in this plan (team-b/z), "
        "1 taken by its own child Jobs"
    )
    shared = Occupancy(shared={"p2-host-0": frozenset({"team-c/web"})})
    assert jobset_reason(diagnose(ctx, x, shared)) == (
        f"{head}; 2 available of 3: 1 taken by higher-priority JobSets in this plan (team-c/web)"
    )


def test_taken_by_a_lower_priority_jobset_says_so() -> None:
    snap = cluster(pool("p0", 2), pool("p1", 2))
    high = jobset("high", rjob(replicas=2), priority=5, order=0)
    low = jobset("low", rjob(), order=1)
    ctx = PlacementContext(snap, [high, low], SolveOptions())
    assert jobset_reason(diagnose(ctx, high, _reserve(team_a__low=_hosts("p1")))) == (
        f"workers: needs 2 domains of {NODEPOOL} for 2 pods of {{google.com/tpu: 4}}; "
        "1 available of 2: 1 taken by lower-priority JobSets in this plan (team-a/low)"
    )


def test_required_locality_follows_the_plan() -> None:
    snap = cluster(*(pool(f"p{i}", 2, block=f"b{i // 2}") for i in range(4)))
    x = jobset("x", rjob(replicas=2, required=BLOCK))
    ctx = PlacementContext(snap, [x], SolveOptions())
    head = f"workers: needs 2 domains of {NODEPOOL} for 2 pods of {{google.com/tpu: 4}}"
    assert diagnose(ctx, x)[0].fits
    assert jobset_reason(diagnose(ctx, x, _reserve(team_b__z=_hosts("p0")))).startswith(
        "each replicated job fits alone"
    )
    assert jobset_reason(diagnose(ctx, x, _reserve(team_b__z=_hosts("p0", "p3")))) == (
        f"{head}; 2 available of 4: 2 taken by higher-priority JobSets in this plan (team-b/z); "
        f"at most 1 in one domain of {BLOCK} (required)"
    )


def test_shared_required_locality_follows_reservations() -> None:
    snap = cluster(
        *(
            node(f"{b}-{i}", tpu=0, cpu=8, labels={BLOCK: b, NODEPOOL: f"{b}-{i}"})
            for b in ("b0", "b1")
            for i in range(2)
        )
    )
    web = jobset("web", rjob(pods_per_job=3, exclusive=None, tpu=0, cpu=4, required=BLOCK))
    ctx = PlacementContext(snap, [web], SolveOptions())
    assert diagnose(ctx, web)[0].fits
    occupancy = _reserve(team_b__z=["b0-0"], team_b__y=["b1-1"])
    assert jobset_reason(diagnose(ctx, web, occupancy)) == (
        "workers: needs 3 pods of {cpu: 4}; fits 4 on 2 of 4 nodes; excluded: "
        "2 reserved for exclusive child Jobs (team-b/y, team-b/z); "
        f"at most 2 pods in one domain of {BLOCK} (required)"
    )


def test_shared_pods_count_cordoned_nodes_and_nodes_the_plan_filled() -> None:
    snap = cluster(
        node("cpu-0", tpu=0, cpu=8),
        node("cpu-1", tpu=0, cpu=8, unschedulable=True),
        node("cpu-2", tpu=0, cpu=8),
    )
    web = jobset("web", rjob(pods_per_job=3, exclusive=None, tpu=0, cpu=4))
    ctx = PlacementContext(snap, [web], SolveOptions())
    planned = Occupancy(
        shared={"cpu-2": frozenset({"team-b/z"})},
        pods={"cpu-2": ({"cpu": Decimal(6), "pods": Decimal(1)},)},
    )
    assert jobset_reason(diagnose(ctx, web, planned)) == (
        "workers: needs 3 pods of {cpu: 4}; fits 2 on 1 of 3 nodes; excluded: 1 cordoned, "
        "1 no room for one pod (cpu)"
    )


def test_a_too_small_domain_names_hosts_that_do_not_match() -> None:
    mixed = [
        node("m-0", labels={NODEPOOL: "m", TPU_TOPOLOGY: "2x4"}),
        node("m-1", labels={NODEPOOL: "m", TPU_TOPOLOGY: "4x4"}),
    ]
    a = jobset("a", rjob(node_selector=SEL))
    ctx = PlacementContext(cluster(mixed), [a], SolveOptions())
    assert jobset_reason(diagnose(ctx, a)) == (
        f"workers: needs 1 domain of {NODEPOOL} for 2 pods of {{google.com/tpu: 4}}; "
        "0 available of 1: 1 too small: fits 1 of 2 pods "
        f"(1 host not matching nodeSelector {TPU_TOPOLOGY}=2x4)"
    )


# -- every domain and node counted once ------------------------------------------------------------


@st.composite
def _occupancies(draw: st.DrawFn, snapshot: ClusterSnapshot, keys: list[str]) -> Occupancy:
    names = sorted(n.name for n in snapshot.nodes)
    owners = st.sampled_from([*keys, "team-z/running", "team-q/other"])
    reserved = draw(st.dictionaries(st.sampled_from(names), owners.map(lambda o: frozenset({o}))))
    shared = draw(st.dictionaries(st.sampled_from(names), owners.map(lambda o: frozenset({o}))))
    return Occupancy(reserved=reserved, shared=shared)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), scenarios())
def test_every_domain_or_node_is_counted_once(
    data: st.DataObject, scenario: tuple[ClusterSnapshot, list[JobSetRequest]]
) -> None:
    snapshot, jobsets = scenario
    if data.draw(st.booleans()) and all(js.key != "team-z/running" for js in jobsets):
        # a queued JobSet that also runs: its own running pods hold nothing for it
        jobsets = [jobsets[0].model_copy(update={"namespace": "team-z", "name": "running"})]
        jobsets += scenario[1][1:]
    ctx = PlacementContext(snapshot, jobsets, SolveOptions())
    occupancy = data.draw(_occupancies(snapshot, [js.key for js in jobsets]))
    classifier = Classifier(ctx, occupancy)
    for js in jobsets:
        for d, jc in zip(classifier.diagnose(js), ctx.classes_of(js), strict=True):
            assert [t.kind for t in d.tallies] == sorted(
                (t.kind for t in d.tallies), key=KINDS.index
            )
            assert all(t.count > 0 for t in d.tallies)
            if d.unit == "domain":
                assert d.available + sum(t.count for t in d.tallies) == d.total
                assert d.total == len(ctx.domains(jc.exclusive_key or ""))
                assert d.fits == (d.available >= d.needed and d.locality is None)
            else:
                assert (d.nodes_with_room or 0) + sum(t.count for t in d.tallies) == d.total
                assert d.total == len(ctx.nodes)
                assert d.fits == (d.available >= d.needed and d.locality is None)
            # the shape's shared view, corrected where this JobSet holds or has planned pods,
            # counts what judging every domain (node) one by one as this JobSet finds
            counts: Counter[Reason] = Counter()
            named: dict[Reason, set[str]] = {}
            for v in classifier.verdicts(jc):
                if v is not None:
                    counts[v[0]] += 1
                    named.setdefault(v[0], set()).update(v[1])
            assert {t.reason: (t.count, set(t.jobsets)) for t in d.tallies} == {
                r: (n, named[r]) for r, n in counts.items()
            }
            if d.unit == "domain":
                assert d.available == sum(1 for v in classifier.verdicts(jc) if v is None)
            held = [t for t in d.tallies if t.kind == "held"]
            assert all(js.key not in t.jobsets for t in held), "its own running pods hold nothing"
            assert all(t.jobsets for t in d.tallies if t.kind in ("held", "taken", "reserved"))


def test_its_own_reservations_do_not_close_nodes_to_a_jobset() -> None:
    snap = cluster(node("cpu-0", tpu=0, cpu=8), node("cpu-1", tpu=0, cpu=8))
    web = jobset("web", rjob(pods_per_job=3, exclusive=None, tpu=0, cpu=4))
    ctx = PlacementContext(snap, [web], SolveOptions())
    reserved = _reserve(team_a__web=["cpu-0"], team_b__z=["cpu-1"])
    assert jobset_reason(diagnose(ctx, web, reserved)) == (
        "workers: needs 3 pods of {cpu: 4}; fits 2 on 1 of 2 nodes; excluded: "
        "1 reserved for exclusive child Jobs (team-b/z)"
    )


def test_capacity_words_taken_domains_as_the_copies_above() -> None:
    snap = cluster(pool("p0", 2), pool("p1", 2), pool("p2", 2))
    shape = jobset("c", rjob(replicas=2))
    ctx = PlacementContext(snap, [shape], SolveOptions())
    head = f"workers: needs 2 domains of {NODEPOOL} for 2 pods of {{google.com/tpu: 4}}"
    two = diagnose(ctx, shape, _reserve(team_a__c_0=_hosts("p0", "p1")))
    assert reason_lines(two, taken_by_copies=1) == [
        f"{head}; 1 available of 3: 2 taken by the 1 copy above"
    ]
    one = diagnose(ctx, shape, _reserve(team_a__c_0=_hosts("p0")))
    assert reason_lines(one, taken_by_copies=1) == [
        f"{head}; 2 available of 3: 1 taken by the 1 copy above, "
        "yet the planner placed no further copy beside the 1 above"
    ]


def test_a_key_no_node_carries_says_so() -> None:
    """No node has the rack label: there is no domain of it, which the reason says rather than
    "0 available of 0"."""
    snap = cluster(pool("p0", 2), pool("p1", 2))
    js = jobset("racked", rjob(replicas=2, exclusive="example.com/rack"))
    plan = solve_checked("best-fit", snap, [js])
    assert plan.outcome("team-a/racked").reason == (
        "workers: needs 2 domains of example.com/rack for 2 pods of {google.com/tpu: 4}; "
        "no node has that label"
    )


def test_many_running_jobsets_are_counted_once_and_named_five_at_a_time() -> None:
    """Each running JobSet was a count of its own: on a fleet of a thousand runs a reason ran to
    38,000 characters (RESULTS-reasons, round 38). Past `MAX_NAMED` JobSets, one count names the
    ones holding the most first."""
    held = [pool(f"p{i}", 2, jobsets=[f"team-b/run-{i}"]) for i in range(7)]
    twice = pool("q", 2, jobsets=["team-b/run-6"])  # run-6 holds two pools
    plan = solve_checked("best-fit", cluster(*held, twice), [jobset("x", rjob(replicas=1))])
    assert _reason(plan, "team-a/x") == (
        f"workers: needs 1 domain of {NODEPOOL} for 2 pods of {{google.com/tpu: 4}}; "
        "0 available of 8: 8 held by running team-b/run-6, team-b/run-0, team-b/run-1, "
        "team-b/run-2, team-b/run-3, +2 more"
    )
    # up to five, each is its own count as before
    few = [pool(f"p{i}", 2, jobsets=[f"team-b/run-{i}"]) for i in range(5)]
    plan = solve_checked("best-fit", cluster(*few), [jobset("x", rjob(replicas=1))])
    assert _reason(plan, "team-a/x").endswith(
        "0 available of 5: 1 held by running team-b/run-0, 1 held by running team-b/run-1, "
        "1 held by running team-b/run-2, 1 held by running team-b/run-3, "
        "1 held by running team-b/run-4"
    )


def test_many_reservations_for_later_starts_are_counted_once() -> None:
    tallies = tuple(
        ReasonTally(Reason("reserved-later", holders=(f"team-c/wide-{i}",)), 2 if i == 3 else 1)
        for i in range(6)
    )
    d = RjobDiagnosis(
        name="workers",
        exclusive_key=None,
        replicas=1,
        pods_per_job=2,
        pod=PodShape(requests=resources(tpu=4)),
        unit="pod",
        needed=2,
        available=0,
        total=7,
        tallies=(*tallies, ReasonTally(Reason("cordoned"), 1)),
        locality=None,
        fits=False,
        nodes_with_room=0,
    )
    assert jobset_reason([d]).endswith(
        "excluded: 7 reserved for the later start of team-c/wide-3, team-c/wide-0, "
        "team-c/wide-1, team-c/wide-2, team-c/wide-4, +1 more, 1 cordoned"
    )
