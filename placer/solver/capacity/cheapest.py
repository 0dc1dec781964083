"""The cheapest node pools from a catalogue on which every given JobSet fits at once (CP-SAT).

Algorithm overview (`cheapest_pools`):
  kinds       per pool type, expand one pool and look at it as the planner does: how many domains
              of each exclusive key it holds, which replicated jobs each fits, and how many pods of
              each shared replicated job fit on it
  build       x[type, key] = pools bought for the domains of one key (a pool's domains of two keys
              overlap, so each pool serves one key), x[type, shared] for pods without a key; every
              child Job of every JobSet gets a domain (or its pods room), on the existing cluster's
              free domains (the planner's aggregated classes) or on bought ones; at most maxCount
              pools per type; minimize the price per hour, then the number of pools
  verify      expand the chosen pools next to the existing cluster, plan with the real planner and
              check the plan; a purchase the planner cannot fill (required locality, per-node
              packing of shared pods: what the model relaxes) is excluded, and the next tried
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from ortools.sat.python import cp_model

from placer.model.cluster import ClusterSnapshot, Node
from placer.model.errors import InputError
from placer.model.options import SolveOptions
from placer.model.plan import Plan
from placer.model.workload import JobSetRequest
from placer.solver.capacity.catalog import Catalog
from placer.solver.capacity.copies import plan_copies
from placer.solver.capacity.result import CheapestReport, PoolPurchase
from placer.solver.context import JobClass, PlacementContext
from placer.solver.cpsat import BuiltModel, aggregate, build_model, make_solver, placement_of

__all__ = ["cheapest_pools"]

_MAX_ROUNDS = 6
_PRICE_SCALE = 10_000
"""Prices are per hour with up to four decimals: the model counts in 1/10000 of a unit."""
SHARED = ""
"""The `x[type, key]` key of pools bought for pods without an exclusive key."""


@dataclass(frozen=True)
class _Kind:
    """What one pool of a type offers the queue."""

    domains: dict[str, Counter[frozenset[int]]]
    """exclusive key -> {set of JobClass indices a domain fits: domains of the pool like that}."""
    pods: dict[int, int]
    """shared JobClass index -> its pods that fit on the pool's nodes."""
    free: dict[str, Decimal]
    """the pool's free resources, summed over its nodes."""


def _kind(
    catalog: Catalog, index: int, jobsets: Sequence[JobSetRequest], options: SolveOptions
) -> _Kind:
    one = ClusterSnapshot(nodes=tuple(catalog.expand(index, 1)), levels=tuple(catalog.levels))
    ctx = PlacementContext(one, jobsets, options)
    domains: dict[str, Counter[frozenset[int]]] = {}
    for key in ctx.exclusive_keys:
        fit: Counter[frozenset[int]] = Counter()
        for d in ctx.domains(key):
            fits = frozenset(
                jc.index for jc in ctx.job_classes if jc.exclusive_key == key and ctx.fits(jc, d)
            )
            if fits:
                fit[fits] += 1
        if fit:
            _check_per_pool(catalog, index, key, len(ctx.domains(key)), options, jobsets)
            domains[key] = fit
    pods = {
        jc.index: sum(ctx.node_capacity(jc, n) for n in one.nodes)
        for jc in ctx.job_classes
        if not jc.exclusive_key
    }
    free: dict[str, Decimal] = defaultdict(Decimal)
    for n in one.nodes:
        if n.usable:
            for r, q in n.free.items():
                free[r] += q
    return _Kind(domains=domains, pods=pods, free=dict(free))


def _check_per_pool(
    catalog: Catalog,
    index: int,
    key: str,
    per_pool: int,
    options: SolveOptions,
    jobsets: Sequence[JobSetRequest],
) -> None:
    """Pools can be counted as separate domains of `key` only if no domain spans two pools."""
    two = ClusterSnapshot(nodes=tuple(catalog.expand(index, 2)), levels=tuple(catalog.levels))
    if len(PlacementContext(two, jobsets, options).domains(key)) != 2 * per_pool:
        raise InputError(
            f"label {key} takes the same value in every pool of this type, so its pools do not "
            "form separate domains of it; give the label a per-pool value ({pool} or {i})",
            source=catalog.source,
            field=f"poolTypes[{index}].pool.labels",
            code="catalog",
        )


@dataclass
class _PurchaseModel:
    model: cp_model.CpModel
    bought: dict[tuple[int, str], cp_model.IntVar]
    """(pool type, exclusive key or SHARED) -> pools of that type bought to serve it."""
    totals: dict[int, cp_model.LinearExpr]


def _scale(values: list[Decimal]) -> Decimal:
    return Decimal(2**20) if max(values, default=Decimal(0)) > Decimal(10**9) else Decimal("0.001")


def _build(
    catalog: Catalog,
    kinds: list[_Kind],
    base: PlacementContext | None,
    jobsets: Sequence[JobSetRequest],
    options: SolveOptions,
) -> _PurchaseModel:
    ctx = base or PlacementContext(ClusterSnapshot(nodes=()), jobsets, options)
    classes = ctx.job_classes
    # the existing cluster as the planner sees it (its fit, exclusivity, overlap and shared-room
    # rules), taking any part of each JobSet; bought pools take the rest
    existing = build_model(aggregate(base), "partial") if base is not None else None
    model = existing.model if existing is not None else cp_model.CpModel()
    bought: dict[tuple[int, str], cp_model.IntVar] = {}
    totals: dict[int, cp_model.LinearExpr] = {}
    supply: dict[int, list[cp_model.LinearExpr]] = defaultdict(list)
    shared = [jc for jc in classes if not jc.exclusive_key]
    for t, (ptype, kind) in enumerate(zip(catalog.poolTypes, kinds, strict=True)):
        keys = [*sorted(kind.domains), *([SHARED] if shared and any(kind.pods.values()) else [])]
        for key in keys:
            bought[(t, key)] = model.new_int_var(0, ptype.maxCount, f"bought[{ptype.name},{key}]")
        totals[t] = cp_model.LinearExpr.sum([bought[(t, k)] for k in keys])
        model.add(totals[t] <= ptype.maxCount)
        for key, fits in sorted(kind.domains.items()):
            for f, per_pool in sorted(fits.items(), key=lambda kv: sorted(kv[0])):
                taken = []
                for i in sorted(f):
                    n = model.new_int_var(0, per_pool * ptype.maxCount, f"new[{t},{i},{key}]")
                    supply[i].append(n)
                    taken.append(n)
                model.add(cp_model.LinearExpr.sum(taken) <= per_pool * bought[(t, key)])
        if (t, SHARED) in bought:
            _shared_pools(model, t, kind, shared, bought[(t, SHARED)], supply)
    for jc in classes:
        here = _existing(existing, jc)
        per_job = 1 if jc.exclusive_key else jc.rjob.pods_per_job
        supplied = cp_model.LinearExpr.sum(supply[jc.index])
        model.add(here + supplied == jc.rjob.replicas * per_job)
    price = cp_model.LinearExpr.weighted_sum(
        [totals[t] for t in range(len(catalog.poolTypes))],
        [round(ptype.pricePerHour * _PRICE_SCALE) for ptype in catalog.poolTypes],
    )
    pools = cp_model.LinearExpr.sum(list(totals.values()))
    most = sum(p.maxCount for p in catalog.poolTypes) + 1
    model.minimize(price * most + pools)
    return _PurchaseModel(model, bought, totals)


def _shared_pools(
    model: cp_model.CpModel,
    t: int,
    kind: _Kind,
    shared: list[JobClass],
    x: cp_model.IntVar,
    supply: dict[int, list[cp_model.LinearExpr]],
) -> None:
    """Shared pods on bought pools: per shape within its room, all shapes within the resources.

    Replicated jobs of one pod shape share that shape's room: counted apart, two JobSets of
    4-CPU pods each had the room of 6-CPU hosts that take one such pod, the resources summed over
    the hosts let both in, and the planner, packing per node, refused purchase after purchase
    until the search gave up (found by a property test)."""
    pods = []
    by_shape: dict[str, tuple[int, list[cp_model.IntVar]]] = {}
    for jc in shared:
        room = kind.pods.get(jc.index, 0)
        if room:
            p = model.new_int_var(0, room * 10_000, f"pods[{t},{jc.index}]")
            supply[jc.index].append(p)
            pods.append((jc, p))
            by_shape.setdefault(jc.rjob.pod.signature(), (room, []))[1].append(p)
    for room, same in by_shape.values():
        model.add(sum(same) <= room * x)
    if len(pods) < 2:
        return
    for r, have in sorted(kind.free.items()):
        scale = _scale([have, *(jc.rjob.pod.requests.get(r, Decimal(0)) for jc, _ in pods)])
        terms = [math.ceil(jc.rjob.pod.requests.get(r, Decimal(0)) / scale) * p for jc, p in pods]
        model.add(sum(terms) <= int(have / scale) * x)


def _existing(existing: BuiltModel | None, jc: JobClass) -> cp_model.LinearExpr:
    """Child Jobs (or shared pods) of `jc` placed on the existing cluster."""
    if existing is None:
        return cp_model.LinearExpr.constant(0)
    return placement_of(existing.variables, existing.problem, jc)


def _snapshot(
    catalog: Catalog, base: ClusterSnapshot | None, counts: dict[int, int]
) -> ClusterSnapshot:
    """The existing cluster (or none) plus the pools bought, named clear of existing nodes."""
    taken = {n.name for n in base.nodes} if base else set()
    nodes: list[Node] = list(base.nodes) if base else []
    for t, count in sorted(counts.items()):
        if not count:
            continue
        start = 0
        while True:
            added = catalog.expand(t, count, start)
            if not any(n.name in taken for n in added):
                break
            start += count
        taken.update(n.name for n in added)
        nodes.extend(added)
    classes = {**catalog.priorityClasses, **(base.priority_classes if base else {})}
    levels = base.levels if base and base.levels else tuple(catalog.levels)
    return ClusterSnapshot(
        nodes=tuple(nodes), priority_classes=classes, levels=levels, source="catalog"
    )


def cheapest_pools(
    catalog: Catalog,
    jobsets: Sequence[JobSetRequest],
    options: SolveOptions,
    *,
    base: ClusterSnapshot | None = None,
    solver: str = "cpsat",
    whatif: Sequence[str] = (),
) -> CheapestReport:
    """Cheapest purchase from `catalog` on which `jobsets` (all of them) fit, with its plan."""
    if not jobsets:
        raise InputError("give at least one JobSet", field="JOBSETS", code="usage")
    kinds = [_kind(catalog, t, jobsets, options) for t in range(len(catalog.poolTypes))]
    ctx = PlacementContext(base, jobsets, options) if base and base.nodes else None
    m = _build(catalog, kinds, ctx, jobsets, options)
    notes: list[str] = []
    for rounds in range(1, _MAX_ROUNDS + 1):
        solver_ = make_solver(options, "purchase")
        status = solver_.solve(m.model)
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            why = "no purchase within the catalogue's maxCount fits every JobSet"
            if status == cp_model.MODEL_INVALID:
                info = solver_.solution_info()
                why = f"CP-SAT rejected the purchase model (MODEL_INVALID: {info})"
            elif status != cp_model.INFEASIBLE:
                why = f"CP-SAT found no purchase in time ({solver_.status_name(status)})"
            return CheapestReport(
                whatif=list(whatif), status="INFEASIBLE", iterations=rounds, notes=[*notes, why]
            )
        counts = {t: int(solver_.value(x)) for t, x in m.totals.items()}
        snapshot = _snapshot(catalog, base, counts)
        plan = plan_copies(snapshot, jobsets, options, solver)
        if all(o.status == "placed" for o in plan.jobsets):
            report = _report(catalog, counts, plan, status, rounds, notes, whatif)
            return report.model_copy(update={"on_existing_cluster": base is not None})
        left = sorted(o.key for o in plan.jobsets if o.status != "placed")
        notes.append(
            f"purchase {_describe(catalog, counts)} left {', '.join(left)} out when planned; "
            "trying a larger one"
        )
        _exclude(m, counts)
    return CheapestReport(
        whatif=list(whatif),
        status="INFEASIBLE",
        iterations=_MAX_ROUNDS,
        notes=[*notes, f"gave up after {_MAX_ROUNDS} purchases the planner could not fill"],
    )


def _exclude(m: _PurchaseModel, counts: dict[int, int]) -> None:
    """No purchase with at most these pools of every type: buy more of at least one."""
    more = []
    for t, total in m.totals.items():
        b = m.model.new_bool_var(f"more[{t},{counts[t]}]")
        m.model.add(total >= counts[t] + 1).only_enforce_if(b)
        more.append(b)
    m.model.add_bool_or(more)


def _describe(catalog: Catalog, counts: dict[int, int]) -> str:
    parts = [f"{c} x {catalog.poolTypes[t].name}" for t, c in sorted(counts.items()) if c]
    return ", ".join(parts) or "nothing"


def _report(
    catalog: Catalog,
    counts: dict[int, int],
    plan: Plan,
    status: cp_model.CpSolverStatus,
    rounds: int,
    notes: list[str],
    whatif: Sequence[str],
) -> CheapestReport:
    pools = [
        PoolPurchase(
            type=catalog.poolTypes[t].name,
            count=c,
            hosts=catalog.poolTypes[t].hosts,
            price_per_hour=catalog.poolTypes[t].pricePerHour,
            subtotal=round(c * catalog.poolTypes[t].pricePerHour, 4),
        )
        for t, c in sorted(counts.items())
        if c
    ]
    return CheapestReport(
        whatif=list(whatif),
        status="OPTIMAL" if status == cp_model.OPTIMAL else "FEASIBLE",
        pools=pools,
        price_per_hour=round(sum(p.subtotal for p in pools), 4),
        plan=plan,
        iterations=rounds,
        notes=notes,
    )
