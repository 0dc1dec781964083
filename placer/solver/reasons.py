"""Why a JobSet was left out of a plan, in counts, Kueue-style, sorted so the text is stable.

Every solver explains each JobSet it could not place, with the domains the rest of the plan took.
Per replicated job it counts the domains (exclusive) or nodes (shared) by the FIRST rule that
rules each one out, in this order: held by a running JobSet, a node excluded (NotReady, cordoned,
nodeSelector, node affinity, taint), too small for the child Job's pods, taken by the plan. It
names the replicated jobs that cannot get what they need; when each of them could, alone, it says
that they do not fit together.

A plan leaves hundreds of JobSets out on a large fleet, and most of the counting is the same for
every JobSet of one pod shape; `ReasonBuilder` counts once per context and shape
(reason_facts.py), follows the plan (reason_counts.py) and explains each JobSet from those counts.
`unschedulable_reason` is the one-call form; it keeps a builder per context, so calling it for
many JobSets of one plan costs what the builder does.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Mapping
from decimal import Decimal

from placer.model.topology import DomainPath
from placer.model.workload import JobSetRequest, PodShape
from placer.solver.context import JobClass, PlacementContext
from placer.solver.memo import context_memo
from placer.solver.reason_counts import PlanState
from placer.solver.reason_facts import RESERVED, TAKEN_HIGHER, Baseline, Bucket, DomainKey, listing
from placer.solver.reason_facts import owner_list as _owner_list
from placer.solver.reason_facts import plural as _plural

__all__ = ["ReasonBuilder", "format_shape", "unschedulable_reason"]

_TOGETHER = "each replicated job fits alone, but not all together beside the rest of the plan: "


class ReasonBuilder:
    """Reasons for JobSets left out of one plan: counts once per plan and pod shape, then per
    JobSet only the domains it holds or has pods in itself.

    `taken` maps each domain an exclusive child Job took, as (key, path), to its JobSet's key;
    `shared` maps nodes carrying planned non-exclusive pods to their JobSets' keys (it closes the
    domains around them too). `update` moves the builder to another plan: cheaply when the plan
    only grew, as a greedy plan does between the JobSets it fails to place.
    """

    def __init__(
        self,
        ctx: PlacementContext,
        taken: Mapping[DomainKey, str] | None = None,
        shared: Mapping[str, Collection[str]] | None = None,
    ) -> None:
        self.ctx = ctx
        self._plan = PlanState(ctx)
        self.update(taken or {}, shared)

    def update(
        self, taken: Mapping[DomainKey, str], shared: Mapping[str, Collection[str]] | None = None
    ) -> None:
        """Explain against this plan from now on."""
        self._plan.update(taken, shared or {})

    def reason(self, jobset: JobSetRequest) -> str:
        """Why `jobset` does not fit beside the plan."""
        blocking: list[str] = []
        fitting: list[str] = []
        for jc in self.ctx.classes_of(jobset):
            line, ok = self._exclusive_line(jc) if jc.exclusive_key else self._shared_line(jc)
            (fitting if ok else blocking).append(line)
        if blocking:
            return "; ".join(blocking)
        if not fitting:
            return "no child Jobs to place"
        return _TOGETHER + "; ".join(fitting)

    def _exclusive_line(self, jc: JobClass) -> tuple[str, bool]:
        """Domains of the key by first reason, as `jc`'s JobSet sees them."""
        key = jc.exclusive_key
        assert key is not None
        level = jc.rjob.required_topology
        shape = self._plan.exclusive_counts(jc, level)
        counts = shape.counts
        per_enclosing = shape.enclosing.get(level) if level else None
        touching = self._plan.touching(key, jc.jobset.key)
        if touching:
            counts, takers = Counter(counts), Counter(shape.takers)
            per_enclosing = Counter(per_enclosing) if per_enclosing is not None else None
            for i in sorted(touching):
                self._see_as(jc, shape.base, i, counts, takers, per_enclosing)
            names = [o for o, n in takers.items() if n > 0]
            parts = listing(counts, _naming(TAKEN_HIGHER, names))
        else:
            parts = shape.listing()
        available = counts[None]
        replicas = jc.rjob.replicas
        head = (
            f"{jc.rjob.name}: needs {_plural(replicas, 'domain')} of {key} for "
            f"{_plural(jc.rjob.pods_per_job, 'pod')} of {format_shape(jc.rjob.pod)}; "
            f"{available} available of {len(shape.base.index.domains)}"
        )
        line = head + (": " + ", ".join(parts) if parts else "")
        ok = available >= replicas
        if ok and level and per_enclosing is not None:
            most = max((n for p, n in per_enclosing.items() if p is not None), default=0)
            if most < replicas:
                line += f"; at most {most} in one domain of {level} (required)"
                ok = False
        return line, ok

    def _see_as(
        self,
        jc: JobClass,
        base: Baseline,
        i: int,
        counts: Counter[Bucket | None],
        takers: Counter[str],
        per_enclosing: Counter[DomainPath | None] | None,
    ) -> None:
        """Recount domain `i` as `jc`'s JobSet sees it rather than as an outsider does: its own
        running pods do not hold the domain, and its own planned pods are not "higher-priority"."""
        key = jc.exclusive_key
        assert key is not None
        viewer = jc.jobset.key
        planned = self._plan.planned(key, i)
        for who, sign in ((None, -1), (viewer, +1)):
            bucket = base.judge(i, who, planned)
            counts[bucket] += sign
            if bucket == TAKEN_HIGHER:
                for o in planned:
                    if o != who:
                        takers[o] += sign
            if bucket is None and per_enclosing is not None:
                level = jc.rjob.required_topology
                assert level is not None
                per_enclosing[base.index.enclosing(level)[i]] += sign

    def _shared_line(self, jc: JobClass) -> tuple[str, bool]:
        """Kueue's form: how many pods fit, on how many nodes, and why the others are excluded."""
        pod = jc.rjob.pod
        level = jc.rjob.required_topology
        shape = self._plan.shared_counts(pod, level)
        names = [o for o, n in shape.reserved_by.items() if n > 0]
        parts = listing(shape.counts, _naming(RESERVED, names))
        need = jc.rjob.replicas * jc.rjob.pods_per_job
        line = (
            f"{jc.rjob.name}: needs {_plural(need, 'pod')} of {format_shape(pod)}; "
            f"fits {shape.fits} on {shape.with_room} of {_plural(len(self.ctx.nodes), 'node')}"
        )
        if parts:
            line += "; excluded: " + ", ".join(parts)
        ok = shape.fits >= need
        if ok and level:
            per = shape.enclosing[level]
            most = max((n for p, n in per.items() if p is not None), default=0)
            if most < need:
                line += f"; at most {most} in one domain of {level} (required)"
                ok = False
        return line, ok


def _naming(which: Bucket, names: list[str]) -> Callable[[Bucket], str]:
    """A listing suffix naming the JobSets behind the `which` bucket."""
    return lambda b: f" ({_owner_list(names)})" if b == which else ""


def unschedulable_reason(
    ctx: PlacementContext,
    jobset: JobSetRequest,
    taken: Mapping[DomainKey, str],
    *,
    shared: Mapping[str, Collection[str]] | None = None,
) -> str:
    """Why `jobset` does not fit beside the domains `taken` ((key, path) -> JobSet key).

    `shared` (node -> JobSet keys with planned non-exclusive pods there) also closes domains.
    The context keeps the builder of the last plan asked about, so explaining every JobSet left
    out of one plan counts that plan once.
    """
    memo = context_memo(ctx)
    builder = memo.get("reasons.builder")
    if not isinstance(builder, ReasonBuilder):
        builder = memo["reasons.builder"] = ReasonBuilder(ctx)
    builder.update(taken, shared)
    return builder.reason(jobset)


def format_shape(pod: PodShape) -> str:
    """`{google.com/tpu: 4}`: the accelerators a pod asks for, else all its requests."""
    shown = pod.accelerators or pod.requests
    return "{" + ", ".join(f"{k}: {_fmt(v, k)}" for k, v in sorted(shown.items())) + "}"


def _fmt(value: Decimal, name: str = "") -> str:
    if name == "memory" or name.endswith("storage"):
        for suffix, unit in (("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
            if value >= unit and value % unit == 0:
                return f"{int(value // unit)}{suffix}"
    if value == value.to_integral_value():
        return str(int(value))
    if name == "cpu" and (value * 1000) == (value * 1000).to_integral_value():
        return f"{int(value * 1000)}m"
    return str(value.normalize())
