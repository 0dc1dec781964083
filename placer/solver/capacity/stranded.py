"""Free and stranded accelerators per kind of domain: capacity that no given shape can use.

For every exclusive key the shapes use, domains are grouped by type (the instance types of their
nodes and how many nodes they have, e.g. `ct5lp-hightpu-4t x2`). Per type: accelerators in total,
free ones (on usable nodes), the free ones in domains at least one shape can take (usable), and the
rest, stranded, by reason (`placer.solver.reasons`): the reason of the shape that gets furthest
through the rule order, so a domain is "not matching nodeSelector" only when it matches no shape's
selector, and "too small" when some shape matches but needs more. Accelerator nodes in no domain
of those keys form one more row, usable when a shape without an exclusive key fits there. With a
largest mix given, `idle_after_mix` says what stays free once the mix runs.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from decimal import Decimal

from placer.model.cluster import ClusterSnapshot, Node
from placer.model.options import SolveOptions
from placer.model.plan import Plan
from placer.model.resources import is_accelerator
from placer.model.topology import Domain
from placer.model.workload import JobSetRequest
from placer.solver.capacity.result import DomainTypeUsage
from placer.solver.context import PlacementContext
from placer.solver.reasons import Classifier, Reason
from placer.solver.reasons.data import RANK

__all__ = ["TYPE_LABELS", "domain_type", "domain_type_usage"]

TYPE_LABELS = (
    "node.kubernetes.io/instance-type",
    "beta.kubernetes.io/instance-type",
    "cloud.google.com/gke-tpu-accelerator",
    "cloud.google.com/gke-accelerator",
    "nvidia.com/gpu.product",
)
"""Node labels that name what kind of machine a node is, most specific first."""

OUTSIDE = "(in no domain)"


def _accelerators(resources: dict[str, Decimal]) -> int:
    return int(sum((v for k, v in resources.items() if is_accelerator(k)), Decimal(0)))


def _free_units(node: Node) -> int:
    """Free accelerator units a node offers (none when NotReady or cordoned)."""
    return _accelerators(node.free) if node.usable else 0


def _node_type(node: Node) -> str:
    for label in TYPE_LABELS:
        if label in node.labels:
            return node.labels[label]
    return "node"


def domain_type(nodes: Sequence[Node]) -> str:
    """`ct5lp-hightpu-4t x2`: the kinds of nodes in a domain and how many there are."""
    kinds = sorted({_node_type(n) for n in nodes})
    return f"{'+'.join(kinds)} x{len(nodes)}"


def _mix_use(plan: Plan | None, jobsets: Sequence[JobSetRequest]) -> dict[str, int]:
    """node -> accelerator units the mix's pods take there."""
    used: dict[str, int] = defaultdict(int)
    if plan is None:
        return used
    shapes = {js.key: {r.name: r for r in js.replicated_jobs} for js in jobsets}
    for o in plan.jobsets:
        if o.status != "placed":
            continue
        for job in o.jobs:
            rjob = shapes[o.key][job.replicated_job]
            per_pod = _accelerators(rjob.pod.requests)
            for p in job.pods:
                used[p.node] += per_pod
    return used


def domain_type_usage(
    snapshot: ClusterSnapshot,
    shapes: Sequence[JobSetRequest],
    options: SolveOptions,
    *,
    mix_plan: Plan | None = None,
    mix_jobsets: Sequence[JobSetRequest] = (),
) -> list[DomainTypeUsage]:
    ctx = PlacementContext(snapshot, shapes, options)
    classifier = Classifier(ctx)
    used = _mix_use(mix_plan, mix_jobsets)
    rows: list[DomainTypeUsage] = []
    in_domain: set[str] = set()
    for key in ctx.exclusive_keys:
        classes = [jc for jc in ctx.job_classes if jc.exclusive_key == key]
        groups: dict[str, list[tuple[int, Domain]]] = defaultdict(list)
        for i, d in enumerate(ctx.domains(key)):
            in_domain.update(d.nodes)
            nodes = [ctx.nodes[n] for n in d.nodes]
            if any(_accelerators(n.allocatable) for n in nodes):
                groups[domain_type(nodes)].append((i, d))
        for kind, domains in sorted(groups.items()):
            total = free = usable = idle = 0
            stranded_by: Counter[str] = Counter()
            stranded_nodes: list[str] = []
            for i, d in domains:
                nodes = [ctx.nodes[n] for n in d.nodes]
                total += sum(_accelerators(n.allocatable) for n in nodes)
                f = ctx.free_accelerators(d)
                free += f
                idle += f - sum(used.get(n, 0) for n in d.nodes)
                reasons = [classifier.static_reason(jc, i) for jc in classes]
                if any(r is None for r in reasons):
                    usable += f
                elif f:
                    stranded_by[_furthest(reasons).kind] += f
                    stranded_nodes.extend(n.name for n in nodes if _free_units(n))
            rows.append(
                DomainTypeUsage(
                    key=key,
                    type=kind,
                    domains=len(domains),
                    accelerators=total,
                    free=free,
                    usable=usable,
                    stranded=free - usable,
                    stranded_by=dict(sorted(stranded_by.items())),
                    idle_after_mix=idle if mix_plan is not None else None,
                    stranded_nodes=tuple(stranded_nodes),
                )
            )
    rows.extend(_outside(ctx, in_domain, used, mix_plan is not None))
    return rows


def _furthest(reasons: Sequence[Reason | None]) -> Reason:
    """The reason of the shape that got furthest through the rule order (all rule it out)."""
    return max((r for r in reasons if r is not None), key=lambda r: RANK[r.kind])


def _outside(
    ctx: PlacementContext, in_domain: set[str], used: dict[str, int], with_mix: bool
) -> list[DomainTypeUsage]:
    """Accelerator nodes in no domain of the shapes' keys: usable only by shared child Jobs."""
    nodes = [
        n
        for name, n in sorted(ctx.nodes.items())
        if name not in in_domain and _accelerators(n.allocatable)
    ]
    if not nodes:
        return []
    shared = [jc for jc in ctx.job_classes if not jc.exclusive_key]
    total = sum(_accelerators(n.allocatable) for n in nodes)
    free = sum(_accelerators(n.free) for n in nodes if n.usable)
    usable = sum(
        _accelerators(n.free)
        for n in nodes
        if n.usable and any(ctx.node_capacity(jc, n) for jc in shared)
    )
    stranded = free - usable
    unused = [
        n.name
        for n in nodes
        if _free_units(n) and not any(ctx.node_capacity(jc, n) for jc in shared)
    ]
    return [
        DomainTypeUsage(
            key="-",
            type=OUTSIDE,
            domains=0,
            accelerators=total,
            free=free,
            usable=usable,
            stranded=stranded,
            stranded_by={"no shape without an exclusive key fits": stranded} if stranded else {},
            idle_after_mix=free - sum(used.get(n.name, 0) for n in nodes) if with_mix else None,
            stranded_nodes=tuple(unused),
        )
    ]
