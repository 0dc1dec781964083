"""The batch reason API: a `ReasonBuilder` followed through a changing plan words every JobSet's
reason exactly as a count of every domain and node from scratch does, and as the one-call form."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Collection, Mapping

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from placer.model.cluster import ClusterSnapshot
from placer.model.options import SolveOptions
from placer.model.topology import DomainPath
from placer.model.workload import JobSetRequest
from placer.solver.context import JobClass, PlacementContext
from placer.solver.reason_facts import (
    RESERVED,
    TAKEN_HIGHER,
    Baseline,
    Bucket,
    DomainKey,
    SharedBaseline,
    listing,
    node_bucket,
    owner_list,
    plural,
)
from placer.solver.reasons import ReasonBuilder, format_shape, unschedulable_reason
from tests.strategies import BLOCK, NODEPOOL, cluster, jobset, node, pool, rjob, scenarios

Taken = dict[DomainKey, str]
Shared = dict[str, tuple[str, ...]]


# -- the reference: every domain and node counted from scratch ---------------------------------


def _reserved(ctx: PlacementContext, taken: Taken) -> dict[str, str]:
    """node -> JobSet of the taken domain holding it; on overlap the first name keeps it."""
    found: dict[str, str] = {}
    for (key, path), owner in taken.items():
        for d in ctx.domains(key):
            if d.path == path:
                for n in d.nodes:
                    found[n] = min(owner, found.get(n, owner))
    return found


def _owners(ctx: PlacementContext, taken: Taken, shared: Shared) -> dict[str, set[str]]:
    """node -> JobSets with planned pods there."""
    owners = {n: set(o) for n, o in shared.items()}
    for n, o in _reserved(ctx, taken).items():
        owners.setdefault(n, set()).add(o)
    return owners


def _required(level: str | None, need: int, per: Counter[DomainPath | None]) -> str:
    per.pop(None, None)
    most = max(per.values(), default=0)
    return f"; at most {most} in one domain of {level} (required)" if most < need else ""


def _exclusive(
    ctx: PlacementContext, jc: JobClass, owners: Mapping[str, set[str]]
) -> tuple[str, bool]:
    base = Baseline.of(ctx, jc)
    domains = ctx.domains(jc.exclusive_key or "")
    counts: Counter[Bucket | None] = Counter()
    takers: set[str] = set()
    per: Counter[DomainPath | None] = Counter()
    level = jc.rjob.required_topology
    for i, d in enumerate(domains):
        planned = frozenset(o for n in d.nodes for o in owners.get(n, ()))
        bucket = base.judge(i, jc.jobset.key, planned)
        counts[bucket] += 1
        if bucket == TAKEN_HIGHER:
            takers.update(planned - {jc.jobset.key})
        if bucket is None and level:
            paths = {ctx.topology.enclosing(ctx.nodes[n], level) for n in d.nodes}
            per[paths.pop() if len(paths) == 1 else None] += 1
    parts = listing(counts, lambda b: f" ({owner_list(takers)})" if b == TAKEN_HIGHER else "")
    line = (
        f"{jc.rjob.name}: needs {plural(jc.rjob.replicas, 'domain')} of {jc.exclusive_key} for "
        f"{plural(jc.rjob.pods_per_job, 'pod')} of {format_shape(jc.rjob.pod)}; "
        f"{counts[None]} available of {len(domains)}"
    ) + (": " + ", ".join(parts) if parts else "")
    if counts[None] < jc.rjob.replicas:
        return line, False
    extra = _required(level, jc.rjob.replicas, per) if level else ""
    return line + extra, not extra


def _shared(ctx: PlacementContext, jc: JobClass, reserved: Mapping[str, str]) -> tuple[str, bool]:
    base = SharedBaseline.of(ctx, jc.rjob.pod)
    counts: Counter[Bucket] = Counter()
    reserved_by: set[str] = set()
    fits = with_room = 0
    per: Counter[DomainPath | None] = Counter()
    level = jc.rjob.required_topology
    for n in sorted(ctx.nodes):
        fact = base.facts[n]
        if fact.exclusion:
            counts[node_bucket(fact.exclusion)] += 1
        elif n in reserved:
            counts[RESERVED] += 1
            reserved_by.add(reserved[n])
        elif fact.raw == 0:
            counts[base.no_room(n)] += 1
        else:
            fits += fact.raw
            with_room += 1
            if level:
                per[ctx.topology.enclosing(ctx.nodes[n], level)] += fact.raw
    parts = listing(counts, lambda b: f" ({owner_list(reserved_by)})" if b == RESERVED else "")
    need = jc.rjob.replicas * jc.rjob.pods_per_job
    line = (
        f"{jc.rjob.name}: needs {plural(need, 'pod')} of {format_shape(jc.rjob.pod)}; "
        f"fits {fits} on {with_room} of {plural(len(ctx.nodes), 'node')}"
    ) + ("; excluded: " + ", ".join(parts) if parts else "")
    if fits < need:
        return line, False
    extra = _required(level, need, per) if level else ""
    return line + extra, not extra


def _reference(ctx: PlacementContext, js: JobSetRequest, taken: Taken, shared: Shared) -> str:
    owners, reserved = _owners(ctx, taken, shared), _reserved(ctx, taken)
    blocking, fitting = [], []
    for jc in ctx.classes_of(js):
        if jc.exclusive_key:
            line, ok = _exclusive(ctx, jc, owners)
        else:
            line, ok = _shared(ctx, jc, reserved)
        (fitting if ok else blocking).append(line)
    if blocking:
        return "; ".join(blocking)
    if not fitting:
        return "no child Jobs to place"
    together = "each replicated job fits alone, but not all together beside the rest of the plan: "
    return together + "; ".join(fitting)


# -- plans that grow, shrink and start over -----------------------------------------------------


def _next_plan(
    ctx: PlacementContext, rnd: random.Random, taken: Taken, shared: Shared
) -> tuple[Taken, Shared]:
    """A random change: domains taken (by queued JobSets, running ones, strangers), some freed,
    shared pods added or removed, sometimes a fresh start."""
    if rnd.random() < 0.2:
        taken, shared = {}, {}
    taken, shared = dict(taken), dict(shared)
    owners = [js.key for js in ctx.jobsets] + ["team-z/running", "team-q/other"]
    for _ in range(rnd.randint(0, 4)):
        domains = ctx.domains(rnd.choice([NODEPOOL, BLOCK]))
        if domains:
            d = rnd.choice(domains)
            taken[(d.key, d.path)] = rnd.choice(owners)
    if taken and rnd.random() < 0.2:
        del taken[rnd.choice(sorted(taken))]
    for _ in range(rnd.randint(0, 2)):
        n = rnd.choice(sorted(ctx.nodes))
        shared[n] = tuple(sorted({*shared.get(n, ()), rnd.choice(owners)}))
    if shared and rnd.random() < 0.2:
        del shared[rnd.choice(sorted(shared))]
    return taken, shared


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(), st.randoms(use_true_random=False))
def test_builder_followed_through_plans_matches_counting_from_scratch(
    scenario: tuple[ClusterSnapshot, list[JobSetRequest]], rnd: random.Random
) -> None:
    snapshot, jobsets = scenario
    ctx = PlacementContext(snapshot, jobsets, SolveOptions())
    builder = ReasonBuilder(ctx)
    taken: Taken = {}
    shared: Shared = {}
    for _ in range(5):
        taken, shared = _next_plan(ctx, rnd, taken, shared)
        builder.update(taken, shared)
        fresh = ReasonBuilder(ctx, taken, shared)
        for js in jobsets:
            want = _reference(ctx, js, taken, shared)
            assert builder.reason(js) == want
            assert fresh.reason(js) == want
            assert unschedulable_reason(ctx, js, taken, shared=shared) == want


def test_a_builder_names_what_each_plan_took() -> None:
    """Moving a builder from one plan to a larger one and back gives each plan's own text."""
    snap = cluster(*(pool(f"p{i}", 2) for i in range(3)))
    x, y = jobset("x", rjob(replicas=3), order=0), jobset("y", rjob(), order=1)
    ctx = PlacementContext(snap, [x, y], SolveOptions())
    one: Taken = {(NODEPOOL, ((NODEPOOL, "p0"),)): "team-a/x"}
    two: Taken = {**one, (NODEPOOL, ((NODEPOOL, "p1"),)): "team-b/z"}
    head = f"workers: needs 3 domains of {NODEPOOL} for 2 pods of {{google.com/tpu: 4}}"
    builder = ReasonBuilder(ctx, one)
    assert builder.reason(x) == (f"{head}; 2 available of 3: 1 taken by its own child Jobs")
    builder.update(two)
    assert builder.reason(x) == (
        f"{head}; 1 available of 3: 1 taken by higher-priority or earlier JobSets (team-b/z), "
        "1 taken by its own child Jobs"
    )
    builder.update(one)
    assert builder.reason(x) == f"{head}; 2 available of 3: 1 taken by its own child Jobs"
    shared: Mapping[str, Collection[str]] = {"p2-host-0": ["team-c/web"]}
    builder.update({}, shared)
    assert builder.reason(x) == (
        f"{head}; 2 available of 3: 1 taken by higher-priority or earlier JobSets (team-c/web)"
    )


def test_required_locality_follows_the_plan() -> None:
    """The domains left per enclosing block are recounted as the plan takes more."""
    snap = cluster(*(pool(f"p{i}", 2, block=f"b{i // 2}") for i in range(4)))
    x = jobset("x", rjob(replicas=2, required=BLOCK))
    ctx = PlacementContext(snap, [x], SolveOptions())
    builder = ReasonBuilder(ctx)
    head = f"workers: needs 2 domains of {NODEPOOL} for 2 pods of {{google.com/tpu: 4}}"
    plans: list[Taken] = [{}, {(NODEPOOL, ((BLOCK, "b0"), (NODEPOOL, "p0"))): "team-b/z"}]
    plans.append({**plans[1], (NODEPOOL, ((BLOCK, "b1"), (NODEPOOL, "p3"))): "team-b/z"})
    for taken in plans:
        builder.update(taken)
        assert builder.reason(x) == _reference(ctx, x, taken, {})
    assert builder.reason(x) == (
        f"{head}; 2 available of 4: 2 taken by higher-priority or earlier JobSets (team-b/z); "
        f"at most 1 in one domain of {BLOCK} (required)"
    )


def test_shared_required_locality_follows_reservations() -> None:
    """Room per enclosing block for shared pods shrinks as exclusive child Jobs reserve nodes."""
    snap = cluster(
        *(
            node(f"{b}-{i}", tpu=0, cpu=8, labels={BLOCK: b, NODEPOOL: f"{b}-{i}"})
            for b in ("b0", "b1")
            for i in range(2)
        )
    )
    web = jobset("web", rjob(pods_per_job=3, exclusive=None, tpu=0, cpu=4, required=BLOCK))
    ctx = PlacementContext(snap, [web], SolveOptions())
    builder = ReasonBuilder(ctx)
    plans: list[Taken] = [{}, {(NODEPOOL, ((NODEPOOL, "b0-0"),)): "team-b/z"}]
    plans.append({**plans[1], (NODEPOOL, ((NODEPOOL, "b1-1"),)): "team-b/y"})
    for taken in plans:
        builder.update(taken)
        assert builder.reason(web) == _reference(ctx, web, taken, {})
    assert builder.reason(web) == (
        "workers: needs 3 pods of {cpu: 4}; fits 4 on 2 of 4 nodes; excluded: "
        "2 reserved for exclusive child Jobs (team-b/y, team-b/z); "
        f"at most 2 in one domain of {BLOCK} (required)"
    )
