"""The independent plan checker: does a plan obey every placement rule, judged from the snapshot?

Every solver's plan goes through `check` (the CP-SAT planner refuses a plan that fails it; every
test runs it), so a bug in shared placement code cannot hide behind agreeing solvers. So this
module shares no placement code with them: it does not import the placement context, the
ledger or the greedy solvers, nor the model's matching and fit helpers; it re-derives selectors,
node affinity, taints and tolerations (with the ExtendedResourceToleration plugin), host ports and
resource arithmetic from the snapshot's data (the node filters in node_filters.py). It uses only
the model's data classes and plain quantity arithmetic.

A domain is judged as the writers pin it: the nodes carrying every (label, value) of its path.
The rules on time (reservations), preemption and Kueue's topology (required levels, podset
groups, slices) are checker_time.py's, checker_preempt.py's and checker_topology.py's.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal

from placer.model.cluster import ClusterSnapshot, Node
from placer.model.options import SolveOptions
from placer.model.plan import DomainRef, JobPlacement, JobSetOutcome, Plan
from placer.model.resources import PODS, add_resources, is_accelerator
from placer.model.workload import JobSetRequest, PodShape, ReplicatedJobRequest
from placer.solver.check.checker_preempt import check_preemptions, without_victims
from placer.solver.check.checker_time import NodesOf, check_reservations
from placer.solver.check.checker_topology import check_topology
from placer.solver.check.node_filters import ShapeTolerations, scheduling_violations

__all__ = ["check"]


@dataclass(frozen=True)
class _PlannedPod:
    jobset: str
    job: str
    shape: PodShape
    shape_key: str
    """The shape as JSON: a node judges each distinct shape on it once."""


def check(
    plan: Plan, snapshot: ClusterSnapshot, jobsets: Sequence[JobSetRequest], options: SolveOptions
) -> list[str]:
    """Every rule the plan breaks, one human-readable line each, sorted; empty means valid."""
    problems: set[str] = set()
    given = {js.key: js for js in jobsets}
    check_preemptions(plan, snapshot, given, options, problems)
    snapshot = without_victims(plan, snapshot)  # victims are judged gone, whole
    nodes = {n.name: n for n in snapshot.nodes}
    outcomes = _check_coverage(plan, given, problems)
    on_node: dict[str, list[_PlannedPod]] = defaultdict(list)
    for key, outcome in outcomes.items():
        js = given[key]
        _check_outcome(js, outcome, problems)
        rjobs = {r.name: (r, r.pod.model_dump_json()) for r in js.replicated_jobs}
        for job in outcome.jobs:
            if job.replicated_job not in rjobs:
                continue
            rjob, shape_key = rjobs[job.replicated_job]
            planned = _PlannedPod(key, job.name, rjob.pod, shape_key)
            for p in job.pods:
                if p.node not in nodes:
                    problems.add(f"{key}: {job.name} pod {p.index} on unknown node {p.node}")
                    continue
                on_node[p.node].append(planned)
    tolerations = ShapeTolerations(options)
    kueue_levels = snapshot.kueue_topology and options.levels in ((), snapshot.levels)
    declared = list(snapshot.levels) if kueue_levels else []
    for name, pods in on_node.items():
        _check_node(nodes[name], pods, tolerations, problems)
        missing = [lv for lv in declared if lv not in nodes[name].labels]
        if missing:
            problems.add(f"node {name} lacks topology label {missing[0]} but has planned pods")
    by_label = _label_index(snapshot, outcomes.values())
    for key, outcome in outcomes.items():
        for n in outcome.reserved_nodes:
            if n not in nodes:
                problems.add(f"{key}: reserved node {n} is not in the cluster")
    check_reservations(outcomes, given, options, problems, _nodes_of(by_label))
    levels = options.levels or snapshot.levels
    for key, outcome in outcomes.items():
        _check_exclusivity(given[key], outcome, by_label, on_node, problems)
        check_topology(given[key], outcome, nodes, levels, problems)
    if options.queue == "strict-fifo":
        _check_strict_fifo(jobsets, outcomes, problems)
    return sorted(problems)


def _check_coverage(
    plan: Plan, given: Mapping[str, JobSetRequest], problems: set[str]
) -> dict[str, JobSetOutcome]:
    """Every given JobSet exactly once, nothing else."""
    seen: dict[str, JobSetOutcome] = {}
    for o in plan.jobsets:
        if o.key not in given:
            problems.add(f"{o.key}: in the plan but not given")
        elif o.key in seen:
            problems.add(f"{o.key}: appears more than once in the plan")
        else:
            seen[o.key] = o
    for key in given:
        if key not in seen:
            problems.add(f"{key}: missing from the plan")
    return seen


def _child_jobs(js: JobSetRequest) -> dict[str, tuple[ReplicatedJobRequest, int]]:
    """JobSet's naming of child Jobs, re-derived: `<jobset>-<replicatedJob>-<index>`."""
    return {
        f"{js.name}-{r.name}-{i}": (r, i) for r in js.replicated_jobs for i in range(r.replicas)
    }


def _units(rjob: ReplicatedJobRequest) -> int:
    per_pod = sum((v for k, v in rjob.pod.requests.items() if is_accelerator(k)), Decimal(0))
    return int(per_pod * rjob.pods_per_job) if per_pod > 0 else rjob.pods_per_job


def _check_outcome(js: JobSetRequest, o: JobSetOutcome, problems: set[str]) -> None:
    """Child Job names, pod indices, domains, status and the accelerator count."""
    key = js.key
    expected = _child_jobs(js)
    if o.priority != js.priority:
        problems.add(f"{key}: priority {o.priority} in the plan, {js.priority} in the JobSet")
    names = [j.name for j in o.jobs]
    for name in sorted({n for n in names if names.count(n) > 1}):
        problems.add(f"{key}: child Job {name} placed more than once")
    units = 0
    for job in o.jobs:
        if job.name not in expected:
            problems.add(f"{key}: child Job {job.name} is not a child Job of this JobSet")
            continue
        rjob, index = expected[job.name]
        units += _units(rjob)
        _check_job(key, job, rjob, index, problems)
    placed = set(names) & set(expected)
    if o.status == "placed":
        missing = sorted(set(expected) - placed)
        if missing:
            problems.add(f"{key}: placed but child Jobs not placed: {', '.join(missing)}")
    elif o.status == "unschedulable":
        if o.jobs:
            problems.add(f"{key}: unschedulable but holds {len(o.jobs)} child Jobs")
        if not o.reason:
            problems.add(f"{key}: unschedulable without a reason")
    elif o.status == "partial":
        if not o.jobs:
            problems.add(f"{key}: partial but holds no child Job")
        elif placed == set(expected):
            problems.add(f"{key}: partial but holds every child Job")
    if o.accelerators != units:
        problems.add(f"{key}: claims {o.accelerators} accelerator units, holds {units}")


def _check_job(
    key: str, job: JobPlacement, rjob: ReplicatedJobRequest, index: int, problems: set[str]
) -> None:
    where = f"{key}: {job.name}"
    if job.replicated_job != rjob.name or job.index != index:
        problems.add(
            f"{where}: labeled {job.replicated_job}[{job.index}], expected {rjob.name}[{index}]"
        )
    indices = sorted(p.index for p in job.pods)
    if indices != list(range(rjob.pods_per_job)):
        problems.add(f"{where}: pod indices {indices}, expected 0..{rjob.pods_per_job - 1}")
    if rjob.exclusive_key is None:
        if job.domain is not None:
            problems.add(f"{where}: has a domain but its replicated job is not exclusive")
    elif job.domain is None:
        problems.add(f"{where}: exclusive on {rjob.exclusive_key} but has no domain")
    elif job.domain.key != rjob.exclusive_key:
        problems.add(f"{where}: domain of key {job.domain.key}, expected {rjob.exclusive_key}")
    elif job.domain.path and tuple(job.domain.path[-1]) != (job.domain.key, job.domain.value):
        problems.add(
            f"{where}: domain path {job.domain.path} does not end at "
            f"{job.domain.key}={job.domain.value}"
        )


# -- per node: health, scheduling rules, resources, host ports --


def _check_node(
    node: Node, pods: list[_PlannedPod], tolerations: ShapeTolerations, problems: set[str]
) -> None:
    where = f"node {node.name}"
    if not node.ready:
        problems.add(f"{where}: NotReady but given pods")
    if node.unschedulable:
        problems.add(f"{where}: cordoned but given pods")
    for who in {p.shape_key: p for p in pods}.values():
        for why in scheduling_violations(node, who.shape, tolerations.of(who.shape_key, who.shape)):
            problems.add(f"{where}: pod of {who.jobset} {who.job} {why}")
    _check_room(node, pods, problems)
    if node.used_host_ports or any(p.shape.host_ports for p in pods):
        _check_ports(node, pods, problems)


def _check_room(node: Node, pods: list[_PlannedPod], problems: set[str]) -> None:
    """The pods' requests (and `pods` slots, when the node counts them) within its free room."""
    used = add_resources(*(p.shape.requests for p in pods))
    if PODS in node.free:
        used[PODS] = used.get(PODS, Decimal(0)) + len(pods)
    for name, amount in used.items():
        if amount <= 0 or (name == PODS and PODS not in node.free):
            continue
        have = node.free.get(name, Decimal(0))
        if amount > have:
            problems.add(f"node {node.name}: {name} overcommitted: planned {amount}, free {have}")


def _check_ports(node: Node, pods: list[_PlannedPod], problems: set[str]) -> None:
    """No host port bound twice, counting the running pods' ports."""
    ports: dict[tuple[int, str], int] = defaultdict(int)
    for hp in node.used_host_ports:
        ports[hp] += 1
    for p in pods:
        for hp in p.shape.host_ports:
            ports[hp] += 1
    for (port, proto), count in ports.items():
        if count > 1:
            problems.add(f"node {node.name}: host port {port}/{proto} bound {count} times")


# -- exclusivity and locality --


def _check_exclusivity(
    js: JobSetRequest,
    o: JobSetOutcome,
    by_label: Mapping[tuple[str, str], list[Node]],
    on_node: Mapping[str, list[_PlannedPod]],
    problems: set[str],
) -> None:
    """An exclusive child Job's domain holds no pod of any other child Job, planned or running."""
    for job in o.jobs:
        if job.domain is None:
            continue
        where = f"{js.key}: {job.name}"
        pins = dict(job.domain.path) if job.domain.path else {}
        pins[job.domain.key] = job.domain.value
        members = _members(pins, by_label)
        member_names = {n.name for n in members}
        if not members:
            problems.add(f"{where}: domain {job.domain.key}={job.domain.value} has no node")
        for p in job.pods:
            if p.node not in member_names:
                problems.add(
                    f"{where}: pod {p.index} on {p.node}, outside its domain "
                    f"{job.domain.key}={job.domain.value}"
                )
        label = f"{job.domain.key}={job.domain.value}"
        for n in members:
            _check_member(
                n, (js.key, job.name), f"{where}: exclusive domain {label}", on_node, problems
            )


def _check_member(
    n: Node,
    owner: tuple[str, str],
    where: str,
    on_node: Mapping[str, list[_PlannedPod]],
    problems: set[str],
) -> None:
    """One node of the exclusive domain of child Job `owner` (JobSet, Job): no one else's pods."""
    others = {f"{q.jobset} {q.job}" for q in on_node.get(n.name, ()) if (q.jobset, q.job) != owner}
    if others:
        problems.add(f"{where} shares node {n.name} with {', '.join(sorted(others))}")
    running = [j for j in n.jobsets if j != owner[0]]
    if running:
        problems.add(f"{where} has running pods of {', '.join(sorted(set(running)))} on {n.name}")


def _label_index(
    snapshot: ClusterSnapshot, outcomes: Iterable[JobSetOutcome]
) -> dict[tuple[str, str], list[Node]]:
    """(label, value) -> nodes carrying it, for the labels the plan's domains pin."""
    keys = set()
    for o in outcomes:
        for ref in (*(j.domain for j in o.jobs if j.domain is not None), *o.reserved_domains):
            keys.add(ref.key)
            keys.update(k for k, _ in ref.path)
    by_label: dict[tuple[str, str], list[Node]] = defaultdict(list)
    for n in snapshot.nodes:
        for k in keys:
            if k in n.labels:
                by_label[(k, n.labels[k])].append(n)
    return by_label


def _nodes_of(by_label: Mapping[tuple[str, str], list[Node]]) -> NodesOf:
    """A domain's nodes, by its labels (`_label_index` covers every domain of the plan)."""

    def nodes_of(ref: DomainRef) -> frozenset[str]:
        pins = dict(ref.path) if ref.path else {}
        pins[ref.key] = ref.value
        return frozenset(n.name for n in _members(pins, by_label))

    return nodes_of


def _members(pins: Mapping[str, str], by_label: Mapping[tuple[str, str], list[Node]]) -> list[Node]:
    """Nodes carrying every pinned (label, value)."""
    lists = sorted((by_label.get(p, []) for p in pins.items()), key=len)
    if not lists:
        return []
    return [n for n in lists[0] if all(n.labels.get(k) == v for k, v in pins.items())]


def _check_strict_fifo(
    jobsets: Sequence[JobSetRequest], outcomes: Mapping[str, JobSetOutcome], problems: set[str]
) -> None:
    """Within a priority tier, no JobSet placed after an earlier one that was not."""
    blocked: dict[int, str] = {}
    for js in sorted(jobsets, key=lambda j: j.queue_key()):
        o = outcomes.get(js.key)
        if o is None:
            continue
        if o.status == "placed" and js.priority in blocked:
            problems.add(
                f"{js.key}: placed under strict-fifo although the earlier "
                f"{blocked[js.priority]} is not"
            )
        if o.status != "placed":
            blocked.setdefault(js.priority, js.key)
