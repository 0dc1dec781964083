"""Counts by reason, per replicated job: the detailed, structured form of the planners' reasons.

`placer.solver.reasons` writes the one line every planner attaches to an unschedulable JobSet; this
module says the same things as data (`ReasonCount`) and with more detail, for `placer explain` and
for the limiting factor of `placer capacity`. It reuses that module's wording helpers and the
context's node rules (`node_exclusion`, `node_pod_capacity`), so the two never disagree on what
fits.

Each domain of a replicated job's exclusive key is counted once, by the first rule that rules it
out: held by a running JobSet; not matching the pod's nodeSelector, node affinity or taints (no
node of it does); too small (with why: hosts NotReady or cordoned, resources or host ports in use);
taken by another JobSet of the plan (named, with its priority relation). A replicated job without an
exclusive key is counted per node, Kueue's way.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal

from placer.model.cluster import Node
from placer.model.plan import Plan
from placer.model.resources import PODS, ResourceMap, pods_that_fit, subtract_resources
from placer.model.topology import Domain, DomainPath
from placer.model.workload import JobSetRequest, PodShape
from placer.solver.context import JobClass, PlacementContext, node_exclusion, node_pod_capacity
from placer.solver.explain.result import ReasonCount, ReplicatedJobDiagnosis
from placer.solver.reason_facts import limiting as _limiting
from placer.solver.reason_facts import owner_list as _owner_list
from placer.solver.reason_facts import plural as _plural
from placer.solver.reasons import format_shape

__all__ = ["Occupancy", "diagnose", "diagnosis_line", "domain_verdict", "occupancy_from_plan"]

_RANK = {
    k: i
    for i, k in enumerate(
        [
            "held",
            "node-selector",
            "affinity",
            "taint",
            "not-ready",
            "cordoned",
            "too-small",
            "reserved",
            "no-room",
            "taken",
            "own",
        ]
    )
}


@dataclass
class Occupancy:
    """What the rest of a plan uses: nodes reserved by exclusive child Jobs, pods sharing nodes."""

    reserved: dict[str, set[str]] = field(default_factory=dict)
    """node -> JobSets whose exclusive child Job's domain contains it."""
    shared: dict[str, set[str]] = field(default_factory=dict)
    """node -> JobSets with planned non-exclusive pods on it."""
    requests: dict[str, ResourceMap] = field(default_factory=dict)
    """node -> summed requests of every planned pod on it (one `pods` slot each)."""


def occupancy_from_plan(ctx: PlacementContext, plan: Plan) -> Occupancy:
    """Occupancy of every JobSet the plan placed (fully or partly), resolved against `ctx`."""
    occ = Occupancy()
    requests = {js.key: js for js in ctx.jobsets_given}
    paths: dict[str, dict[DomainPath, Domain]] = {}
    for o in plan.jobsets:
        js = requests.get(o.key)
        if js is None or not o.jobs:
            continue
        rjobs = {r.name: r for r in js.replicated_jobs}
        for job in o.jobs:
            if job.domain is not None:
                if job.domain.key not in paths:
                    paths[job.domain.key] = {d.path: d for d in ctx.domains(job.domain.key)}
                path = tuple((str(k), str(v)) for k, v in job.domain.path)
                domain = paths[job.domain.key].get(path)
                for n in domain.nodes if domain else ():
                    occ.reserved.setdefault(n, set()).add(o.key)
            rjob = rjobs.get(job.replicated_job)
            for p in job.pods:
                if job.domain is None:
                    occ.shared.setdefault(p.node, set()).add(o.key)
                if rjob is not None:
                    used = dict(occ.requests.get(p.node, {}))
                    for name, value in {**rjob.pod.requests, PODS: Decimal(1)}.items():
                        used[name] = used.get(name, Decimal(0)) + value
                    occ.requests[p.node] = used
    return occ


def diagnose(
    ctx: PlacementContext, jobset: JobSetRequest, occ: Occupancy | None = None
) -> list[ReplicatedJobDiagnosis]:
    """One diagnosis per replicated job of `jobset` (with replicas), beside the plan in `occ`."""
    occ = occ or Occupancy()
    out: list[ReplicatedJobDiagnosis] = []
    for jc in ctx.classes_of(jobset):
        d = _exclusive(ctx, jc, occ) if jc.exclusive_key else _shared(ctx, jc, occ)
        out.append(d.model_copy(update={"line": diagnosis_line(d)}))
    return out


def diagnosis_line(d: ReplicatedJobDiagnosis) -> str:
    """The diagnosis as one Kueue-style line (what `line` holds; callers that reword reasons
    rebuild it with this)."""
    reasons = ", ".join(f"{r.count} {r.text}" for r in d.reasons)
    if d.unit == "domain":
        line = (
            f"{d.name}: needs {_plural(d.needed, 'domain')} of {d.exclusive_key} for "
            f"{_plural(d.pods_per_job, 'pod')} of {d.shape}; {d.available} available of {d.total}"
        )
        line += f": {reasons}" if reasons else ""
    else:
        line = (
            f"{d.name}: needs {_plural(d.needed, 'pod')} of {d.shape}; fits {d.available} "
            f"on {d.nodes_with_room or 0} of {_plural(d.total, 'node')}"
        )
        line += f"; excluded: {reasons}" if reasons else ""
    return line + (f"; {d.locality}" if d.locality else "")


# -- exclusive replicated jobs: count domains --


def _exclusion_kind(reason: str) -> str:
    if reason == "NotReady":
        return "not-ready"
    if reason == "cordoned":
        return "cordoned"
    if reason.startswith("nodeSelector "):
        return "node-selector"
    if reason.startswith("node affinity "):
        return "affinity"
    return "taint"


def _rule_text(kind: str, reason: str) -> str:
    return f"with untolerated {reason}" if kind == "taint" else f"not matching {reason}"


def _rule(ctx: PlacementContext, node: Node, pod: PodShape) -> str | None:
    """The nodeSelector, affinity or taint rule `node` breaks for `pod`, health aside."""
    if not node.usable:
        node = node.model_copy(update={"ready": True, "unschedulable": False})
    return node_exclusion(
        node, pod, extended_resource_toleration=ctx.options.extended_resource_toleration
    )


def _health(node: Node) -> str | None:
    return "NotReady" if not node.ready else "cordoned" if node.unschedulable else None


def _too_small(ctx: PlacementContext, jc: JobClass, domain: Domain) -> str:
    """Why the nodes of the domain fit fewer pods than one child Job has."""
    pod = jc.rjob.pod
    need = jc.rjob.pods_per_job
    nodes = [ctx.nodes[n] for n in domain.nodes]
    fits = ctx.domain_capacity(jc, domain)
    causes: Counter[str] = Counter()
    eligible: list[Node] = []
    for n in nodes:
        rule = _rule(ctx, n, pod)
        health = _health(n)
        if rule:
            causes[_rule_text(_exclusion_kind(rule), rule)] += 1
        elif health:
            causes[health] += 1
        else:
            eligible.append(n)
            if node_pod_capacity(n, pod) < _empty_capacity(n, pod):
                causes[f"with {_limiting(n, pod)} in use"] += 1
    parts = [f"{_hosts(c)} {cause}" for cause, c in sorted(causes.items(), key=_by_count)]
    if not parts:
        limits = Counter(_limiting(n, pod) for n in eligible)
        limit = min(limits, key=lambda s: (-limits[s], s)) if limits else "eligible nodes"
        parts = [f"{_hosts(len(eligible))}, short of {limit}"]
    return f"too small: fits {fits} of {_plural(need, 'pod')} ({', '.join(parts)})"


def _empty_capacity(node: Node, pod: PodShape) -> int:
    """Pods of the shape an idle node of this kind would fit: tells 'in use' from 'too small'."""
    fit = pods_that_fit(node.allocatable, pod.requests)
    return min(fit, 1) if pod.host_ports else fit


def _hosts(n: int) -> str:
    return _plural(n, "host")


def _by_count(item: tuple[str, int]) -> tuple[int, str]:
    return (-item[1], item[0])


def domain_verdict(ctx: PlacementContext, jc: JobClass, domain: Domain) -> tuple[str, str] | None:
    """(kind, text) when the cluster alone (no plan) rules `domain` out for one child Job of
    `jc`: held, not matching, too small; None when the domain can take one."""
    return _static(ctx, jc, domain)


def _static(ctx: PlacementContext, jc: JobClass, domain: Domain) -> tuple[str, str] | None:
    own = jc.jobset.key
    held = [o for o in ctx.domain_held_by(domain) if o != own]
    if held:
        return "held", f"held by running {_owner_list(held)}"
    if ctx.domain_capacity(jc, domain) >= jc.rjob.pods_per_job:
        return None
    rules = [_rule(ctx, ctx.nodes[n], jc.rjob.pod) for n in domain.nodes]
    if rules and all(rules):
        counts = Counter(r for r in rules if r)
        reason = min(counts, key=lambda r: (-counts[r], r))
        kind = _exclusion_kind(reason)
        return kind, _rule_text(kind, reason)
    return "too-small", _too_small(ctx, jc, domain)


@dataclass
class _Priorities:
    ctx: PlacementContext

    def relation(self, me: JobSetRequest, other: str) -> str:
        js = next((j for j in self.ctx.jobsets if j.key == other), None)
        if js is None or js.priority > me.priority:
            return "higher-priority"
        if js.priority < me.priority:
            return "lower-priority"
        return "same-priority"


def _exclusive(ctx: PlacementContext, jc: JobClass, occ: Occupancy) -> ReplicatedJobDiagnosis:
    key = jc.exclusive_key
    assert key is not None
    me = jc.jobset
    prio = _Priorities(ctx)
    domains = ctx.domains(key)
    counts: Counter[tuple[str, str]] = Counter()
    named: dict[tuple[str, str], set[str]] = {}
    available: list[Domain] = []
    for d in domains:
        bucket = _static(ctx, jc, d)
        owners: set[str] = set()
        if bucket is None:
            owners = {
                o for n in d.nodes for o in (*occ.reserved.get(n, ()), *occ.shared.get(n, ()))
            }
            others = owners - {me.key}
            if others:
                relations = sorted({prio.relation(me, o) for o in others})
                bucket = ("taken", f"taken by {' or '.join(relations)} JobSets in this plan")
                owners = others
            elif owners:
                bucket = ("own", "taken by its own child Jobs")
        if bucket is None:
            available.append(d)
            continue
        counts[bucket] += 1
        if bucket[0] == "held":
            owners = {o for o in ctx.domain_held_by(d) if o != me.key}
        named.setdefault(bucket, set()).update(owners if bucket[0] in ("held", "taken") else ())
    reasons = [
        ReasonCount(
            kind=b[0],  # type: ignore[arg-type]
            count=counts[b],
            text=b[1] + (f" ({_owner_list(named[b])})" if b[0] == "taken" else ""),
            jobsets=sorted(named.get(b, ())),
        )
        for b in sorted(counts, key=lambda b: (_RANK[b[0]], -counts[b], b[1]))
    ]
    replicas = jc.rjob.replicas
    fits = len(available) >= replicas
    locality = ""
    level = jc.rjob.required_topology
    if fits and level and level != key:
        per: Counter[DomainPath | None] = Counter(_enclosing(ctx, d, level) for d in available)
        per.pop(None, None)
        most = max(per.values(), default=0)
        if most < replicas:
            locality = f"at most {most} in one domain of {level} (required)"
            fits = False
    return ReplicatedJobDiagnosis(
        name=jc.rjob.name,
        exclusive_key=key,
        replicas=replicas,
        pods_per_job=jc.rjob.pods_per_job,
        shape=format_shape(jc.rjob.pod),
        unit="domain",
        needed=replicas,
        available=len(available),
        total=len(domains),
        reasons=reasons,
        locality=locality,
        fits=fits,
    )


def _enclosing(ctx: PlacementContext, domain: Domain, level: str) -> DomainPath | None:
    paths = {ctx.topology.enclosing(ctx.nodes[n], level) for n in domain.nodes}
    return paths.pop() if len(paths) == 1 else None


# -- replicated jobs without an exclusive key: count nodes --


def _shared(ctx: PlacementContext, jc: JobClass, occ: Occupancy) -> ReplicatedJobDiagnosis:
    pod = jc.rjob.pod
    ert = ctx.options.extended_resource_toleration
    me = jc.jobset.key
    counts: Counter[tuple[str, str]] = Counter()
    named: dict[tuple[str, str], set[str]] = {}
    per_node: dict[str, int] = {}
    for name in sorted(ctx.nodes):
        node = ctx.nodes[name]
        reason = node_exclusion(node, pod, extended_resource_toleration=ert)
        if reason:
            kind = _exclusion_kind(reason)
            text = reason if kind in ("not-ready", "cordoned") else _rule_text(kind, reason)
            counts[(kind, text)] += 1
            continue
        reserved = occ.reserved.get(name, set()) - {me}
        if reserved:
            bucket = ("reserved", "reserved for exclusive child Jobs")
            counts[bucket] += 1
            named.setdefault(bucket, set()).update(reserved)
            continue
        planned = occ.requests.get(name)
        if planned:
            node = node.model_copy(update={"free": subtract_resources(node.free, planned)})
        cap = node_pod_capacity(node, pod)
        if cap == 0:
            counts[("no-room", f"no room for one pod ({_limiting(node, pod)})")] += 1
            continue
        per_node[name] = cap
    fits_pods = sum(per_node.values())
    need = jc.rjob.replicas * jc.rjob.pods_per_job
    reasons = [
        ReasonCount(
            kind=b[0],  # type: ignore[arg-type]
            count=counts[b],
            text=b[1] + (f" ({_owner_list(named[b])})" if b in named else ""),
            jobsets=sorted(named.get(b, ())),
        )
        for b in sorted(counts, key=lambda b: (_RANK[b[0]], -counts[b], b[1]))
    ]
    fits = fits_pods >= need
    locality = ""
    level = jc.rjob.required_topology
    if fits and level:
        per: Counter[DomainPath | None] = Counter()
        for name, cap in per_node.items():
            per[ctx.topology.enclosing(ctx.nodes[name], level)] += cap
        per.pop(None, None)
        most = max(per.values(), default=0)
        if most < need:
            locality = f"at most {most} pods in one domain of {level} (required)"
            fits = False
    return ReplicatedJobDiagnosis(
        name=jc.rjob.name,
        exclusive_key=None,
        replicas=jc.rjob.replicas,
        pods_per_job=jc.rjob.pods_per_job,
        shape=format_shape(pod),
        unit="pod",
        needed=need,
        available=fits_pods,
        total=len(ctx.nodes),
        reasons=reasons,
        locality=locality,
        fits=fits,
        nodes_with_room=len(per_node),
    )
