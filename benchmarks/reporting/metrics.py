"""What a plan achieved on a snapshot, measured from the plan and the inputs, not solver claims.

Admitted units, partial holdings, stranded capacity and domains spanned are recomputed here from the
plan's pod placements and the JobSet requests, so a solver that misreports its own totals cannot
flatter itself. Every plan also goes through the independent checker (`checked`), and a violation
stops the benchmark: a fast wrong plan is not a result.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from decimal import Decimal

from placer.model.cluster import ClusterSnapshot, Node
from placer.model.options import SolveOptions
from placer.model.plan import Plan
from placer.model.resources import is_accelerator
from placer.model.workload import JobSetRequest
from placer.solver.check.checker import check
from placer.solver.context import JobClass, PlacementContext

__all__ = [
    "CheckFailed",
    "PlanMetrics",
    "apply_plan",
    "checked",
    "free_units",
    "plan_metrics",
    "tier_weights",
]


class CheckFailed(AssertionError):
    """The independent checker found violations in a plan: the benchmark refuses to go on."""


def checked(
    plan: Plan,
    snapshot: ClusterSnapshot,
    jobsets: Sequence[JobSetRequest],
    options: SolveOptions,
    *,
    where: str,
) -> bool:
    """Run the plan checker; raise on any violation; True once checked."""
    violations = check(plan, snapshot, list(jobsets), options)
    if violations:
        shown = "\n  ".join(violations[:20])
        raise CheckFailed(
            f"{where}: {plan.solver.name} produced an invalid plan "
            f"({len(violations)} violations):\n  {shown}"
        )
    return True


def _accel(resources: dict[str, Decimal]) -> int:
    return int(sum((v for k, v in resources.items() if is_accelerator(k)), Decimal(0)))


def free_units(snapshot: ClusterSnapshot, ctx: PlacementContext) -> int:
    """Free accelerators on usable nodes of domains (of the queue's keys) no running JobSet holds.

    This is the denominator of "share of free capacity"."""
    nodes: set[str] = set()
    for d in ctx.exclusive_domains:
        if not ctx.domain_held_by(d):
            nodes.update(d.nodes)
    by_name = ctx.nodes
    return sum(_accel(by_name[n].free) for n in nodes if by_name[n].usable)


def tier_weights(jobsets: Sequence[JobSetRequest]) -> dict[int, int]:
    """Priority value -> weight 1, 2, 4, ... from the lowest tier up (stated in the report)."""
    return {p: 2**i for i, p in enumerate(sorted({j.priority for j in jobsets}))}


def apply_plan(
    snapshot: ClusterSnapshot,
    jobsets: Sequence[JobSetRequest],
    plan: Plan,
) -> ClusterSnapshot:
    """The snapshot after the plan's pods run: requests subtracted, host ports bound, owners
    recorded on nodes."""
    by_key = {j.key: j for j in jobsets}
    used: dict[str, dict[str, Decimal]] = {}
    ports: dict[str, set[tuple[int, str]]] = {}
    owners: dict[str, set[str]] = {}
    for o in plan.jobsets:
        js = by_key[o.key]
        shapes = {r.name: r.pod for r in js.replicated_jobs}
        for job in o.jobs:
            pod = shapes[job.replicated_job]
            for p in job.pods:
                u = used.setdefault(p.node, {})
                for k, v in pod.requests.items():
                    u[k] = u.get(k, Decimal(0)) + v
                u["pods"] = u.get("pods", Decimal(0)) + 1
                ports.setdefault(p.node, set()).update(pod.host_ports)
                owners.setdefault(p.node, set()).add(o.key)
    nodes: list[Node] = []
    for n in snapshot.nodes:
        if n.name not in used:
            nodes.append(n)
            continue
        free = dict(n.free)
        for k, v in used[n.name].items():
            free[k] = free.get(k, Decimal(0)) - v
        update = {
            "free": free,
            "jobsets": tuple(sorted({*n.jobsets, *owners[n.name]})),
            "used_host_ports": tuple(sorted({*n.used_host_ports, *ports[n.name]})),
        }
        nodes.append(n.model_copy(update=update))
    return snapshot.model_copy(update={"nodes": tuple(nodes)})


@dataclass(frozen=True)
class PlanMetrics:
    jobsets: int
    admitted: int
    units_admitted: int
    units_demanded: int
    free_units: int
    share_of_free: float
    weighted_admission: float
    partial: int
    partial_units: int
    stranded_units: int
    free_after: int
    spanned: float | None
    """Mean distinct span-level domains (blocks) per placed JobSet of 2+ child Jobs."""
    units_by_tier: dict[str, int]
    """Priority value (as text, highest first) -> accelerator units admitted in that tier."""

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def _stranded(
    after: ClusterSnapshot, jobsets: Sequence[JobSetRequest], options: SolveOptions
) -> tuple[int, int]:
    """(stranded, free) accelerators after the plan: free units on usable nodes, and those of
    them in no domain that some queued child-Job shape could still take whole."""
    ctx = PlacementContext(after, list(jobsets), options)
    shapes: dict[tuple[str, str, int], JobClass] = {}
    for jc in ctx.job_classes:
        if jc.exclusive_key:
            shapes.setdefault((jc.exclusive_key, jc.rjob.pod.signature(), jc.rjob.pods_per_job), jc)
    reachable: set[str] = set()
    for d in ctx.exclusive_domains:
        if ctx.domain_held_by(d) or reachable.issuperset(d.nodes):
            continue
        for (key, _, pods), jc in shapes.items():
            if key == d.key and ctx.domain_capacity(jc, d) >= pods:
                reachable.update(d.nodes)
                break
    free = stranded = 0
    for n in after.nodes:
        units = _accel(n.free)
        if n.usable and units > 0:
            free += units
            if n.name not in reachable:
                stranded += units
    return stranded, free


def plan_metrics(
    plan: Plan,
    snapshot: ClusterSnapshot,
    jobsets: Sequence[JobSetRequest],
    options: SolveOptions,
    *,
    span_level: str | None,
) -> PlanMetrics:
    by_key = {j.key: j for j in jobsets}
    ctx = PlacementContext(snapshot, list(jobsets), options)
    weights = tier_weights(jobsets)
    units = admitted = partial = partial_units = 0
    weighted = weighted_total = 0.0
    spans: list[int] = []
    by_tier = {str(p): 0 for p in sorted(weights, reverse=True)}
    labels = snapshot.by_name()
    for js in jobsets:
        weighted_total += weights[js.priority] * js.accelerator_units
    for o in plan.jobsets:
        js = by_key[o.key]
        per_job = {r.name: r.accelerator_units_per_job for r in js.replicated_jobs}
        if o.status == "placed":
            admitted += 1
            units += js.accelerator_units
            weighted += weights[js.priority] * js.accelerator_units
            by_tier[str(js.priority)] += js.accelerator_units
            if span_level and len(o.jobs) > 1:
                spans.append(
                    len({labels[p.node].labels.get(span_level, "") for j in o.jobs for p in j.pods})
                )
        elif o.status == "partial":
            partial += 1
            partial_units += sum(per_job[j.replicated_job] for j in o.jobs)
    free = free_units(snapshot, ctx)
    stranded, free_after = _stranded(apply_plan(snapshot, jobsets, plan), jobsets, options)
    return PlanMetrics(
        jobsets=len(jobsets),
        admitted=admitted,
        units_admitted=units,
        units_demanded=sum(j.accelerator_units for j in jobsets),
        free_units=free,
        share_of_free=units / free if free else 0.0,
        weighted_admission=weighted / weighted_total if weighted_total else 0.0,
        partial=partial,
        partial_units=partial_units,
        stranded_units=stranded,
        free_after=free_after,
        spanned=sum(spans) / len(spans) if spans else None,
        units_by_tier=by_tier,
    )
