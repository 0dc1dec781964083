"""What would make a JobSet fit: candidate changes, each checked by planning the whole queue again.

A remedy is only reported as verified when the re-plan (same solver, same options) places the
JobSet and the independent checker accepts that plan. Candidates come from cheap questions first:

- fewer replicas: the most child Jobs the replicated job can get (CP-SAT, `max_replicas`);
- another topology value: other values of the pod's nodeSelector keys that nodes carry, tried when
  enough domains would fit the changed pod on an otherwise empty plan;
- relaxed locality: required topology turned into preferred;
- preempting lower-priority pending JobSets or yielding to same-priority ones the plan preferred
  (the fewest to leave out, CP-SAT `min_drops`);
- evicting the cheapest whole lower-priority running JobSets, as the planner with
  `--preemption lower-priority` chooses them (`evict.py`: protection rules and eviction cost), or
  waiting for running JobSets to finish (`placer.model.whatif.remove_jobset`): one at a time,
  then the fewest that together suffice.

The number of re-plans is bounded (`replanner.Replanner.budget`); what was not tried is noted.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Literal, cast

from placer.model.cluster import ClusterSnapshot
from placer.model.options import SolveOptions
from placer.model.plan import JobPlacement
from placer.model.whatif import remove_jobset, running_priority
from placer.model.workload import JobSetRequest, ReplicatedJobRequest
from placer.solver.context import PlacementContext
from placer.solver.explain.conflicts import ConflictInputs, max_replicas, min_drops
from placer.solver.explain.evict import eviction_remedy, move_remedy
from placer.solver.explain.replanner import Replanner
from placer.solver.explain.result import Remedy, ReplicatedJobDiagnosis

__all__ = ["find_remedies"]

_MAX_RUNNING_CANDIDATES = 6
_MAX_TOPOLOGY_TRIES = 3


def _replace(
    queue: Sequence[JobSetRequest], target: JobSetRequest, new: JobSetRequest
) -> list[JobSetRequest]:
    return [new if js.key == target.key else js for js in queue]


def _with_rjobs(target: JobSetRequest, change: dict[str, dict[str, object]]) -> JobSetRequest:
    rjobs = tuple(
        r.model_copy(update=change[r.name]) if r.name in change else r
        for r in target.replicated_jobs
    )
    return target.model_copy(update={"replicated_jobs": rjobs})


def find_remedies(
    replanner: Replanner,
    inputs: ConflictInputs,
    diagnosis: Sequence[ReplicatedJobDiagnosis],
) -> list[Remedy]:
    """Every verified remedy found for `inputs.target`, cheapest kinds first."""
    found: list[Remedy] = []
    found += _fewer_replicas(replanner, inputs)
    found += _other_topology(replanner, inputs)
    found += _relax_locality(replanner, inputs)
    found += _drop_pending(replanner, inputs)
    found += _running(replanner, inputs, diagnosis)
    return found


def _fewer_replicas(rp: Replanner, inputs: ConflictInputs) -> list[Remedy]:
    target = inputs.target
    out: list[Remedy] = []
    for r in target.replicated_jobs:
        if r.replicas < 2:
            continue
        best = max_replicas(inputs, r.name)
        if best is None or best <= 0 or best >= r.replicas:
            continue
        for k in (best, best - 1):
            if k <= 0:
                break
            new = _with_rjobs(target, {r.name: {"replicas": k}})
            jobs = rp.try_plan(target.key, jobsets=_replace(rp.jobsets, target, new))
            if jobs is not None:
                out.append(
                    Remedy(
                        kind="fewer-replicas",
                        text=f"run {r.name} with {k} replicas instead of {r.replicas}",
                        change={"replicated_job": r.name, "replicas": k},
                        verified=True,
                        jobs=jobs,
                    )
                )
                break
    return out


def _is_hardware_key(key: str) -> bool:
    """Labels naming the hardware (accelerator type, machine type): another value is another
    program, never a placement remedy."""
    name = key.rsplit("/", 1)[-1].lower()
    return "accelerator" in name or name in ("gpu.product", "instance-type", "machine-family")


def _selector_alternatives(
    snapshot: ClusterSnapshot, rjob: ReplicatedJobRequest
) -> list[dict[str, str]]:
    """Other values of the pod's nodeSelector that usable nodes carry, most common first; the
    hardware labels (`_is_hardware_key`) keep their values."""
    keys = sorted(rjob.pod.node_selector)
    current = tuple(rjob.pod.node_selector[k] for k in keys)
    fixed = [i for i, k in enumerate(keys) if _is_hardware_key(k)]
    seen: Counter[tuple[str, ...]] = Counter()
    for n in snapshot.nodes:
        if n.usable and all(k in n.labels for k in keys):
            values = tuple(n.labels[k] for k in keys)
            if values != current and all(values[i] == current[i] for i in fixed):
                seen[values] += 1
    ordered = sorted(seen, key=lambda v: (-seen[v], v))
    return [dict(zip(keys, v, strict=True)) for v in ordered]


def _domain_sizes(ctx: PlacementContext, key: str, selector: dict[str, str]) -> set[int]:
    """Host counts of the domains of `key` whose nodes all carry `selector`."""
    sizes: set[int] = set()
    for d in ctx.domains(key):
        nodes = [ctx.nodes[name] for name in d.nodes if name in ctx.nodes]
        if nodes and all(all(n.labels.get(k) == v for k, v in selector.items()) for n in nodes):
            sizes.add(len(nodes))
    return sizes


def _same_shape(
    ctx: PlacementContext, rjob: ReplicatedJobRequest, selector: dict[str, str]
) -> bool:
    """The new selector leads to domains of the size the current one does (the child Job's pod
    count when the current selector matches no domain): a 2-host slice's child Job is never
    offered 8-host slices, where it would strand six hosts."""
    key = rjob.exclusive_key
    if not key:
        return True
    wanted = _domain_sizes(ctx, key, dict(rjob.pod.node_selector)) or {rjob.pods_per_job}
    offered = _domain_sizes(ctx, key, selector)
    return bool(offered) and offered <= wanted


def _fits_alone(snapshot: ClusterSnapshot, js: JobSetRequest, options: SolveOptions) -> bool:
    """Enough fitting, open domains (or pod room) for every replicated job, ignoring the plan."""
    ctx = PlacementContext(snapshot, [js], options)
    for jc in ctx.job_classes:
        if jc.exclusive_key:
            fitting = sum(1 for d in ctx.domains(jc.exclusive_key) if ctx.fits(jc, d))
            if fitting < jc.rjob.replicas:
                return False
        else:
            room = sum(ctx.node_capacity(jc, n) for n in ctx.nodes.values())
            if room < jc.rjob.replicas * jc.rjob.pods_per_job:
                return False
    return True


def _other_topology(rp: Replanner, inputs: ConflictInputs) -> list[Remedy]:
    target = inputs.target
    out: list[Remedy] = []
    done: set[str] = set()
    for r in target.replicated_jobs:
        if not r.pod.node_selector or r.name in done:
            continue
        same = [
            o.name
            for o in target.replicated_jobs
            if o.pod.node_selector and o.pod.node_selector == r.pod.node_selector
        ]
        done.update(same)
        shapes = PlacementContext(inputs.snapshot, [target], inputs.options)
        tries = 0
        for alt in _selector_alternatives(inputs.snapshot, r):
            if tries >= _MAX_TOPOLOGY_TRIES:
                break
            selector = {**r.pod.node_selector, **alt}
            change: dict[str, dict[str, object]] = {
                name: {
                    "pod": next(o for o in target.replicated_jobs if o.name == name).pod.model_copy(
                        update={"node_selector": selector}
                    )
                }
                for name in same
            }
            if not _same_shape(shapes, r, selector):
                continue
            new = _with_rjobs(target, change)
            if not _fits_alone(inputs.snapshot, new, inputs.options):
                continue
            tries += 1
            jobs = rp.try_plan(target.key, jobsets=_replace(rp.jobsets, target, new))
            if jobs is None:
                continue
            # the text names the labels whose value changes; the change carries the whole selector
            moved = sorted(k for k, v in alt.items() if r.pod.node_selector.get(k) != v)
            was = ",".join(f"{k}={r.pod.node_selector[k]}" for k in moved)
            now = ",".join(f"{k}={alt[k]}" for k in moved)
            out.append(
                Remedy(
                    kind="other-topology",
                    text=f"use nodeSelector {now} instead of {was} for {', '.join(same)}",
                    change={"replicated_jobs": same, "node_selector": dict(sorted(alt.items()))},
                    verified=True,
                    jobs=jobs,
                )
            )
            break
    return out


def _relax_locality(rp: Replanner, inputs: ConflictInputs) -> list[Remedy]:
    target = inputs.target
    out: list[Remedy] = []
    done: set[str] = set()
    for r in target.replicated_jobs:
        level = r.required_topology
        if not level or r.name in done:
            continue
        # a podset group shares one topology request: relax it for every member at once
        names = [
            o.name
            for o in target.replicated_jobs
            if o.name == r.name or (r.podset_group and o.podset_group == r.podset_group)
        ]
        done.update(names)
        relaxed: dict[str, object] = {"required_topology": None, "preferred_topology": level}
        new = _with_rjobs(target, dict.fromkeys(names, relaxed))
        jobs = rp.try_plan(target.key, jobsets=_replace(rp.jobsets, target, new))
        if jobs is not None:
            out.append(
                Remedy(
                    kind="relax-locality",
                    text=f"let {' and '.join(names)} span domains of {level} (preferred instead "
                    "of required topology)",
                    change=(
                        {"replicated_job": r.name, "preferred_topology": level}
                        if len(names) == 1
                        else {"replicated_jobs": names, "preferred_topology": level}
                    ),
                    verified=True,
                    jobs=jobs,
                )
            )
    return out


def _drop_pending(rp: Replanner, inputs: ConflictInputs) -> list[Remedy]:
    target = inputs.target
    out: list[Remedy] = []
    lower = [o.key for o in inputs.others if o.priority < target.priority]
    same = [o.key for o in inputs.others if o.priority == target.priority]
    choices: tuple[tuple[Literal["preempt", "yield"], list[str]], ...] = (
        ("preempt", lower),
        ("yield", same),
    )
    for kind, candidates in choices:
        if not candidates:
            continue
        drops = min_drops(inputs, candidates)
        if not drops:
            continue
        queue = [js for js in rp.jobsets if js.key not in drops]
        jobs = rp.try_plan(target.key, jobsets=queue)
        if jobs is None:
            continue
        names = ", ".join(drops)
        text = (
            f"preempt lower-priority {names} (pending, admitted in this plan)"
            if kind == "preempt"
            else f"leave out same-priority {names}, which the plan admitted instead"
        )
        out.append(
            Remedy(
                kind=kind,
                text=text,
                change={"leave_out": drops},
                verified=True,
                jobs=jobs,
            )
        )
    return out


def _running_candidates(
    inputs: ConflictInputs, diagnosis: Sequence[ReplicatedJobDiagnosis]
) -> list[str]:
    """Running JobSets holding domains (or filling nodes) the target is short of, most first."""
    held: Counter[str] = Counter()
    for d in diagnosis:
        if d.fits:
            continue
        for r in d.reasons:
            if r.kind == "held":
                for j in r.jobsets:
                    held[j] += r.count
    if any(not d.fits and d.unit == "pod" for d in diagnosis):
        for n in inputs.snapshot.nodes:
            for j in n.jobsets:
                held[j] += 1
    held.pop(inputs.target.key, None)
    return sorted(held, key=lambda j: (-held[j], j))[:_MAX_RUNNING_CANDIDATES]


def _remove_all(snapshot: ClusterSnapshot, keys: Sequence[str]) -> ClusterSnapshot:
    for k in keys:
        snapshot, _ = remove_jobset(snapshot, k)
    return snapshot


Found = list[tuple[list[str], list[JobPlacement]]]


def _without(rp: Replanner, key: str, running: list[str]) -> list[JobPlacement] | None:
    memo = ("remove", *sorted(running))
    return rp.try_plan(key, snapshot=_remove_all(rp.snapshot, running), memo=memo)


def _smallest_set(rp: Replanner, key: str, candidates: list[str]) -> Found:
    """Single candidates that suffice (each), else one minimal set that suffices together."""
    singles: Found = []
    for c in candidates:
        jobs = _without(rp, key, [c])
        if jobs is not None:
            singles.append(([c], jobs))
    if singles or len(candidates) < 2:
        return singles
    chosen = list(candidates)
    jobs = _without(rp, key, chosen)
    if jobs is None:
        return []
    for c in list(chosen):
        trial = [x for x in chosen if x != c]
        smaller = _without(rp, key, trial) if trial else None
        if smaller is not None:
            chosen, jobs = trial, smaller
    return [(chosen, jobs)]


def _running(
    rp: Replanner, inputs: ConflictInputs, diagnosis: Sequence[ReplicatedJobDiagnosis]
) -> list[Remedy]:
    target = inputs.target
    candidates = _running_candidates(inputs, diagnosis)
    if not candidates:
        return []
    out: list[Remedy] = []
    seen: set[tuple[str, ...]] = set()
    known = (running_priority(inputs.snapshot, c) for c in candidates)
    if any(p is not None and p < target.reported_priority for p in known):
        evict = eviction_remedy(rp, target.key)
        if evict is not None:
            out.append(evict)
            # eviction_remedy states the running JobSets it removes as a list of keys
            seen.add(tuple(cast(list[str], evict.change["remove_running"])))
    move = move_remedy(rp, target.key)
    if move is not None:
        out.append(move)
    for keys, jobs in _smallest_set(rp, target.key, candidates):
        if tuple(keys) in seen:
            continue
        seen.add(tuple(keys))
        out.append(
            Remedy(
                kind="wait",
                text=f"wait for running {', '.join(keys)} to finish",
                change={"remove_running": keys},
                verified=True,
                jobs=jobs,
            )
        )
    return out
