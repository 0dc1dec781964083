"""What the rest of a plan uses, as the classifier reads it: reserved nodes, shared pods, requests.

Built from the plan's outcomes (placed and partial JobSets), so the planners, `placer explain` and
`placer capacity` all judge a JobSet against the same thing: the plan as it ends.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal

from placer.model.plan import JobSetOutcome, Plan
from placer.model.resources import PODS, ResourceMap, add_resources
from placer.solver.context import PlacementContext

__all__ = ["Occupancy", "occupancy_from_plan", "occupancy_of"]


@dataclass(frozen=True)
class Occupancy:
    """What the rest of a plan uses: nodes reserved by exclusive child Jobs, pods sharing nodes."""

    reserved: dict[str, frozenset[str]] = field(default_factory=dict)
    """node -> JobSets whose exclusive child Job's domain contains it."""
    shared: dict[str, frozenset[str]] = field(default_factory=dict)
    """node -> JobSets with planned non-exclusive pods on it."""
    pods: dict[str, tuple[ResourceMap, ...]] = field(default_factory=dict)
    """node -> the requests of each planned pod on it (one `pods` slot each)."""

    def owners(self, node: str) -> frozenset[str]:
        """JobSets with planned pods on `node` or a domain around it taken."""
        return self.reserved.get(node, frozenset()) | self.shared.get(node, frozenset())

    def requests_on(self, node: str) -> ResourceMap | None:
        """What the planned pods on `node` request together; None when it has none. Summed
        when asked: only nodes that could take a shared pod are."""
        pods = self.pods.get(node)
        return add_resources(*pods) if pods else None


def occupancy_from_plan(ctx: PlacementContext, plan: Plan) -> Occupancy:
    """Occupancy of every JobSet the plan placed (fully or partly), resolved against `ctx`."""
    return occupancy_of(ctx, plan.jobsets)


def occupancy_of(ctx: PlacementContext, outcomes: Iterable[JobSetOutcome]) -> Occupancy:
    """Occupancy of the child Jobs in `outcomes`, resolved against `ctx` (unknown ones skipped)."""
    reserved: dict[str, set[str]] = {}
    shared: dict[str, set[str]] = {}
    pods: dict[str, list[ResourceMap]] = {}
    per_pod: dict[tuple[str, str], ResourceMap] = {}
    rjobs = {js.key: {r.name: r for r in js.replicated_jobs} for js in ctx.jobsets_given}
    for o in outcomes:
        known = rjobs.get(o.key)
        if known is None or not o.jobs:
            continue
        for job in o.jobs:
            if job.domain is not None:
                # the plan may name it under other levels than `ctx` does (`Topology.find`)
                ref = job.domain
                domain = ctx.topology.find(ref.key, ref.path or [(ref.key, ref.value)])
                for n in domain.nodes if domain else ():
                    reserved.setdefault(n, set()).add(o.key)
            rjob = known.get(job.replicated_job)
            if rjob is None:
                requests = None
            else:
                requests = per_pod.get((o.key, rjob.name))
                if requests is None:
                    requests = {**rjob.pod.requests, PODS: Decimal(1)}
                    per_pod[(o.key, rjob.name)] = requests
            for p in job.pods:
                if job.domain is None:
                    shared.setdefault(p.node, set()).add(o.key)
                if requests is not None:
                    pods.setdefault(p.node, []).append(requests)
    return Occupancy(
        reserved={n: frozenset(s) for n, s in reserved.items()},
        shared={n: frozenset(s) for n, s in shared.items()},
        pods={n: tuple(r) for n, r in pods.items()},
    )
