"""Phase "materialize": class counts become concrete domains and nodes, through the greedy ledger.

Members of a class are interchangeable, so each class hands out its domains in path order; child
Job indices follow that order, so consecutive child Jobs sit next to each other. Pods go to nodes
through the same `PlacementLedger` the greedy baselines use; the pods of a shared replicated job
with Kueue topology annotations are packed as Kueue TAS would inside the domain the model chose
(fewest domains per level, slices kept whole; `placer.solver.greedy.tas`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from decimal import Decimal

from placer.model.options import NOT_EXPLAINED
from placer.model.plan import JobPlacement, JobSetOutcome, Plan, SolverReport, relative_gap
from placer.model.resources import PODS, ResourceMap, pods_that_fit, subtract_resources
from placer.model.topology import HOSTNAME
from placer.model.workload import JobSetRequest
from placer.solver.context import JobClass, PlacementContext
from placer.solver.cpsat.aggregate import KUEUE_VERDICT
from placer.solver.cpsat.problem import AggregatedProblem
from placer.solver.cpsat.solution import Solution
from placer.solver.greedy.tas import TasTree, place_with_kueue
from placer.solver.ledger import PlacementLedger
from placer.solver.reasons import Classifier, ReasonTally, jobset_reason, occupancy_of

__all__ = ["materialize"]


def _enclosing_nodes(
    ctx: PlacementContext, level: str | None, parent: str | None
) -> tuple[str, ...] | None:
    """Nodes of the `level` domain the solver chose for a shared JobClass that must stay in one."""
    if level is None or parent is None:
        return None
    for d in ctx.domains(level):
        if "/".join(val for _, val in d.path) == parent:
            return d.nodes
    return None


def _exclusive_jobs(
    ledger: PlacementLedger,
    problem: AggregatedProblem,
    solution: Solution,
    jobset: JobSetRequest,
    next_member: dict[str, int],
) -> list[JobPlacement] | None:
    jobs: list[JobPlacement] = []
    for jc in [c for c in problem.ctx.classes_of(jobset) if c.exclusive_key]:
        job_index = 0
        for c in problem.classes_for(jc):
            for _ in range(solution.count.get((jc.index, c.id), 0)):
                placed = None
                while placed is None and next_member.get(c.id, 0) < c.size:
                    domain = c.members[next_member.get(c.id, 0)]
                    next_member[c.id] = next_member.get(c.id, 0) + 1
                    placed = ledger.take_domain(jc, job_index, domain)
                if placed is None:
                    return None
                jobs.append(placed)
                job_index += 1
    return jobs


def _rigidity(ctx: PlacementContext) -> Callable[[JobClass], tuple[bool, int, Decimal, int, int]]:
    """Sort key: required before preferred, finer levels first, larger pods first, queue order."""
    order = {js.key: i for i, js in enumerate(ctx.jobsets)}
    levels = ctx.topology.levels

    def key(jc: JobClass) -> tuple[bool, int, Decimal, int, int]:
        r = jc.rjob
        level = r.required_topology or r.preferred_topology
        depth = levels.index(level) if level in levels else -1
        per_pod = sum(r.pod.accelerators.values(), Decimal(0))
        return (r.required_topology is None, -depth, -per_pod, -r.pod_count, order[jc.jobset.key])

    return key


def _kueue_jobs(
    ctx: PlacementContext,
    ledger: PlacementLedger,
    enclosing: Mapping[int, str],
    classes: list[JobClass],
    placements: dict[str, list[JobPlacement]],
    limits: Mapping[int, Mapping[str, int]],
) -> bool:
    """Pods of shared replicated jobs with Kueue annotations (in `_rigidity` order), packed as
    Kueue would, inside the domain the model chose for them (else wherever Kueue's own choice
    fits; `enclosing` is `Solution.enclosing`); `limits` caps pods per node when following the
    model's counts.

    The model sums room per class of nodes and does not say which nodes of a domain each JobSet
    uses, so the order matters: required topology before preferred (a preferred JobSet can go
    elsewhere), finer levels before coarser, larger pods before smaller (whole-host pods need whole
    hosts). A class whose pods do not pack onto the model's domain waits for a second pass.
    """
    tree = TasTree.of(ctx)
    homeless: list[JobClass] = []
    for jc in classes:
        within = _enclosing_nodes(ctx, jc.rjob.required_topology, enclosing.get(jc.index))
        jobs = place_with_kueue(ledger, tree, jc, within, limits.get(jc.index))
        if jobs is None:
            homeless.append(jc)
        else:
            placements[jc.jobset.key].extend(jobs)
    # second pass, once every class that fits where the model put it is placed: Kueue's own
    # choice of domain among what is left
    for jc in homeless:
        jobs = place_with_kueue(ledger, tree, jc)
        if jobs is None:
            return False
        placements[jc.jobset.key].extend(jobs)
    return True


def materialize(
    ctx: PlacementContext, problem: AggregatedProblem, solution: Solution, report: SolverReport
) -> Plan | None:
    """The plan for a solution; None when the relaxed shared-pod room does not pack onto real
    nodes (the caller then falls back to greedy).

    Kueue-annotated shared pods are packed with Kueue's algorithm, JobSet by JobSet, in three
    ways: inside the model's required domains in queue order (as Kueue would) and in `_rigidity`
    order, and following the model's pod counts per group of nodes for the replicated jobs whose
    domains the model counts (`packing_levels`: the model chose their racks and blocks jointly).
    Of the plans that pack, the one spanning the fewest domains, level by level from the top, is
    kept. If none packs, once more following the model's counts for every replicated job."""
    shared = solution.shared_pods
    if not any(c.rjob.kueue_topology for c in problem.shared):
        return _materialize(ctx, problem, solution, report, follow=frozenset(), by_queue=True)
    counted = frozenset(problem.packing_levels) if shared else frozenset()
    ways = [(frozenset[int](), True), (frozenset[int](), False)]
    if counted:
        ways.append((counted, False))
    plans = [
        p
        for follow, by_queue in ways
        if (p := _materialize(ctx, problem, solution, report, follow=follow, by_queue=by_queue))
    ]
    if not plans and shared:
        every = frozenset(c.index for c in problem.shared)
        found = _materialize(ctx, problem, solution, report, follow=every, by_queue=False)
        plans = [found] if found else []
    return min(plans, key=lambda p: _kueue_spread(ctx, p)) if plans else None


def _kueue_spread(ctx: PlacementContext, plan: Plan) -> tuple[int, ...]:
    """Domains used per level (top level first, hosts last), summed over the placed replicated
    jobs with Kueue annotations: lower is tighter packing."""
    rjobs = {(js.key, r.name) for js in ctx.jobsets for r in js.replicated_jobs if r.kueue_topology}
    levels = [lv for lv in ctx.topology.levels if lv != HOSTNAME]
    spread = [0] * (len(levels) + 1)
    for o in plan.jobsets:
        by_rjob: dict[str, list[str]] = {}
        for j in o.jobs:
            if (o.key, j.replicated_job) in rjobs:
                by_rjob.setdefault(j.replicated_job, []).extend(p.node for p in j.pods)
        for names in by_rjob.values():
            labels = [ctx.nodes[n].labels for n in names]
            for depth in range(len(levels)):
                spread[depth] += len(
                    {tuple(lb.get(k) for k in levels[: depth + 1]) for lb in labels}
                )
            spread[-1] += len(set(names))
    return tuple(spread)


def _model_limits(
    problem: AggregatedProblem, shared: Mapping[tuple[int, str], int], classes: list[JobClass]
) -> dict[int, dict[str, int]]:
    """JobClass -> node -> pods it may take there: each group's pods as the model counts them,
    handed out to the group's nodes in name order (classes in `classes` order, larger pods
    first), each node's free resources shared between the classes (a domain class's nodes are
    all open)."""
    ctx = problem.ctx
    groups = {g.id: g for g in problem.node_groups}
    domain_classes = {c.id: c for c in problem.domain_classes}
    free: dict[str, ResourceMap] = {}
    limits: dict[int, dict[str, int]] = {}
    for jc in classes:
        limit = limits.setdefault(jc.index, {})
        pod = jc.rjob.pod
        for (i, where), count in sorted(shared.items()):
            if i != jc.index:
                continue
            if where in domain_classes:
                for d in domain_classes[where].members:
                    for n in d.nodes:
                        limit[n] = ctx.node_capacity(jc, ctx.nodes[n])
                continue
            left = count
            for n in groups[where].nodes if where in groups else ():
                node = ctx.nodes[n]
                if left <= 0 or ctx.class_facts(jc).exclusion(n):
                    continue
                have = free.get(n, node.free)
                k = min(left, pods_that_fit(have, pod.requests), 1 if pod.host_ports else left)
                if k > 0:
                    limit[n] = limit.get(n, 0) + k
                    left -= k
                    used = {r: q * k for r, q in pod.requests.items()}
                    used[PODS] = used.get(PODS, Decimal(0)) + k
                    free[n] = subtract_resources(have, used)
    return limits


def _unplaced_reason(
    problem: AggregatedProblem,
    classifier: Classifier,
    js: JobSetRequest,
    listings: dict[tuple[ReasonTally, ...], str],
) -> str:
    """The model's own verdict, else the one diagnosis every planner and `placer explain` word.

    A Kueue TAS verdict (`kueue_impossible`) gives way to the diagnosis when that finds the
    shortfall too (a taint, too little room, the required domain), so cpsat and best-fit say the
    same; it stays for what the classifier does not model (slices that fit no domain)."""
    verdict = problem.impossible.get(js.key)
    if verdict is not None and f": {KUEUE_VERDICT}: " not in verdict:
        return verdict
    diagnosis = classifier.diagnose(js)
    if verdict is not None and all(d.fits for d in diagnosis):
        return verdict
    return jobset_reason(diagnosis, listings=listings)


def _shared_order(ctx: PlacementContext) -> list[JobSetRequest]:
    """The JobSets whose pods without an exclusive key are placed, in queue order; with victims
    evicted, those that may not use a victim's freed nodes (`PlacementContext.node_open_to`)
    first. The model counted their room elsewhere, and those pods go first-fit: placed first,
    a JobSet that may evict took that room, the others found none, and the plan fell back to
    greedy, evicting nobody."""
    victims = ctx.victims
    if victims is None or not victims.on_node:
        return list(ctx.jobsets)

    def may_use_all(js: JobSetRequest) -> bool:
        return all(victims.can_evict(js.key, v) for v in victims.candidates)

    return sorted(ctx.jobsets, key=may_use_all)


def _materialize(
    ctx: PlacementContext,
    problem: AggregatedProblem,
    solution: Solution,
    report: SolverReport,
    *,
    follow: frozenset[int],
    by_queue: bool,
) -> Plan | None:
    ledger = PlacementLedger(ctx)
    admitted = solution.admitted
    enclosing = solution.enclosing(problem)
    next_member: dict[str, int] = {}
    placements: dict[str, list[JobPlacement]] = {}
    for js in ctx.jobsets:
        if js.key in admitted:
            jobs = _exclusive_jobs(ledger, problem, solution, js, next_member)
            if jobs is None:
                return None
            placements[js.key] = jobs
    kueue: list[JobClass] = []
    for js in _shared_order(ctx):
        if js.key not in placements:
            continue
        for jc in [c for c in ctx.classes_of(js) if not c.exclusive_key]:
            if jc.rjob.kueue_topology:
                kueue.append(jc)
                continue
            # without a Kueue annotation there is no required topology, so no enclosing domain
            for job_index in range(jc.rjob.replicas):
                placed = ledger.place_shared(jc, job_index)
                if placed is None:
                    return None
                placements[js.key].append(placed)
    if not by_queue:
        # the model's counts first: they hold room the model gave them, the rest take what is left
        rigidity = _rigidity(ctx)
        kueue.sort(key=lambda jc: (jc.index not in follow, rigidity(jc)))
    limits = _model_limits(
        problem, solution.shared_pods, [jc for jc in kueue if jc.index in follow]
    )
    if kueue and not _kueue_jobs(ctx, ledger, enclosing, kueue, placements, limits):
        return None
    outcomes: dict[str, JobSetOutcome] = {}
    for js in ctx.jobsets:
        if js.key in placements:
            order = {name: i for i, (_, _, name) in enumerate(js.child_jobs())}
            outcomes[js.key] = JobSetOutcome(
                namespace=js.namespace,
                name=js.name,
                status="placed",
                priority=js.priority,
                accelerators=js.accelerator_units,
                jobs=sorted(placements[js.key], key=lambda j: order[j.name]),
            )
    explain = ctx.options.reasons
    classifier = Classifier(ctx, occupancy_of(ctx, outcomes.values())) if explain else None
    listings: dict[tuple[ReasonTally, ...], str] = {}
    for js in ctx.jobsets:
        if js.key not in placements:
            reason = (
                _unplaced_reason(problem, classifier, js, listings) if classifier else NOT_EXPLAINED
            )
            outcomes[js.key] = JobSetOutcome(
                namespace=js.namespace,
                name=js.name,
                status="unschedulable",
                reason=reason,
                priority=js.priority,
            )
    objective = sum(o.accelerators for o in outcomes.values() if o.status == "placed")
    final = report.model_copy(
        update={"objective": objective, "gap": relative_gap(objective, report.bound)}
    )
    return Plan(solver=final, jobsets=[outcomes[j.key] for j in ctx.jobsets_given])
