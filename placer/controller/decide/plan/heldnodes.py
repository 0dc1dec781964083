"""Nodes the recorded placements hold, and what each hold leaves to other JobSets' pods.

A recorded child Job holds its nodes in one of two ways:

- **whole**: an exclusive child Job holds every node of its domain, and so does every hold this
  controller cannot size (another holder's record, `foreign`; a JobSet whose manifest does not
  parse). No other record may take such a node, and the planner is told so twice: its token on
  the node closes the node's domains to exclusive child Jobs (`domains.reserve`), and a node
  reservation closes it to pods without an exclusive key (`held_from_now`).
- **in part**: a child Job without an exclusive key holds only the room of its pods on the nodes
  recorded for them. Other JobSets' pods without an exclusive key may go beside them, as the
  ledger commits such records side by side (`ledger.exclusive_clashes`): a coordinator on a
  64-core host leaves the rest of it to the next JobSet's coordinator. A recorded pod already
  bound takes its room in the observed snapshot; one not bound yet (gated, pending, not even
  created) takes it here (`held_snapshot`), so two records can never overcommit a node between
  a commit and the scheduler's binding.

The token of an in-part hold still closes the node's domains to exclusive child Jobs: a pod of
another JobSet is on them, as upstream's exclusive placement sees it.

With `--preemption` the eligible victims hold nothing: the solver may evict them. Their recorded
pods not bound yet still take their room, as the victim's own usage (`victims_unbound`), and
their exclusive domains stay closed to other pods without an exclusive key, by a reservation in
the victim's name (`victims_whole`); an eviction gives back both.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from placer.controller.decide.observe.domains import (
    DomainIndex,
    Hold,
    JobsByHolder,
    holds,
    reserve,
)
from placer.controller.decide.observe.survey import ManagedJobSet
from placer.model.assignment import Assignment
from placer.model.cluster import (
    NODE_RESERVATION_KEY,
    ClusterSnapshot,
    DomainReservation,
    JobSetUsage,
    Node,
)
from placer.model.options import SolveOptions
from placer.model.resources import ResourceMap, add_resources, left_after, pods_that_fit, pods_usage
from placer.model.workload import JobSetRequest, PodShape
from placer.solver.time.release import ReleaseTimeline

__all__ = [
    "HeldNodes",
    "RecordedPods",
    "held_from_now",
    "held_nodes",
    "held_snapshot",
    "overlap",
    "recorded_pods",
    "shapes_without_a_key",
    "victims_unbound",
    "victims_whole",
]

Ports = tuple[tuple[int, str], ...]


@dataclass(frozen=True)
class RecordedPods:
    """What sizes the in-part holds: the managed JobSets' pods without an exclusive key."""

    shapes: Mapping[str, Mapping[str, PodShape]] = field(default_factory=dict)
    """JobSet key -> child Job name -> its pods' shape, for every child Job without an exclusive
    key of a managed JobSet whose manifest parses. A hold not named here is held whole."""
    settled: Mapping[str, frozenset[tuple[str, int]]] = field(default_factory=dict)
    """JobSet key -> (child Job, completion index) whose pod of the current attempt is bound
    (the snapshot counts its room) or has succeeded (it needs none)."""


def recorded_pods(managed: Sequence[ManagedJobSet]) -> RecordedPods:
    """`RecordedPods` of the cycle's managed JobSets."""
    shapes: dict[str, Mapping[str, PodShape]] = {}
    settled: dict[str, frozenset[tuple[str, int]]] = {}
    for ms in managed:
        if ms.request is None:
            continue
        jobs = {name: r.pod for r, _, name in ms.request.child_jobs() if r.exclusive_key is None}
        if not jobs:
            continue
        shapes[ms.key] = jobs
        settled[ms.key] = frozenset(
            (p.ref.job_name, p.ref.completion_index)
            for p in ms.pods
            if p.ref.restart_attempt >= ms.restarts
            and ((p.node and not p.terminal) or _succeeded(p.pod))
        )
    return RecordedPods(shapes, settled)


def _succeeded(pod: Mapping[str, object]) -> bool:
    status = pod.get("status")
    return isinstance(status, Mapping) and status.get("phase") == "Succeeded"


@dataclass(frozen=True)
class HeldNodes:
    """Every node a hold covers, and how (see the module docstring)."""

    tokens: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """node -> the token of every hold on it (domains.holds)."""
    whole: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """node -> the tokens of the holds that take all of it."""
    unbound: Mapping[str, Mapping[str, tuple[ResourceMap, Ports]]] = field(default_factory=dict)
    """node -> in-part hold token -> what its recorded pods not bound yet use there (requests
    with one `pods` slot each, host ports); every in-part hold has an entry, maybe empty."""


def held_nodes(
    records: JobsByHolder,
    foreign: JobsByHolder,
    index: DomainIndex,
    pods: RecordedPods | None = None,
) -> HeldNodes:
    """The nodes `records` (JobSet key -> recorded child Jobs) and `foreign` hold. Without
    `pods`, every hold is whole."""
    pods = pods or RecordedPods()
    tokens: dict[str, list[str]] = {}
    whole: dict[str, list[str]] = {}
    unbound: dict[str, dict[str, tuple[ResourceMap, Ports]]] = {}
    sized = [(h, True) for h in holds(records, {})] + [(h, False) for h in holds({}, foreign)]
    for hold, ours in sized:
        nodes = index.job_nodes(hold.job)
        for node in nodes:
            tokens.setdefault(node, []).append(hold.token)
        shape = pods.shapes.get(hold.owner, {}).get(hold.job_name) if ours else None
        if hold.job.domain is not None or shape is None:
            for node in nodes:
                whole.setdefault(node, []).append(hold.token)
            continue
        room = _unbound_room(hold, shape, pods.settled.get(hold.owner, frozenset()))
        for node in nodes:
            unbound.setdefault(node, {})[hold.token] = room.get(node, ({}, ()))
    return HeldNodes(
        tokens={n: tuple(t) for n, t in tokens.items()},
        whole={n: tuple(t) for n, t in whole.items()},
        unbound=unbound,
    )


def _unbound_room(
    hold: Hold, shape: PodShape, settled: frozenset[tuple[str, int]]
) -> dict[str, tuple[ResourceMap, Ports]]:
    """node -> what the hold's recorded pods not bound yet (not `settled`) use there."""
    room: dict[str, tuple[ResourceMap, Ports]] = {}
    for completion, node in sorted(hold.job.nodes.items()):
        if (hold.job_name, completion) in settled:
            continue
        used, ports = room.get(node, ({}, ()))
        more = pods_usage(shape.requests, 1)
        room[node] = (add_resources(used, more), (*ports, *shape.host_ports))
    return room


def victims_unbound(
    snapshot: ClusterSnapshot, victims: JobsByHolder, pods: RecordedPods
) -> ClusterSnapshot:
    """`snapshot` (as `preempting.evictable_snapshot` lists the victims) with the recorded pods
    not bound yet of each victim's child Jobs without an exclusive key taking their room as the
    victim's own usage: counted while it runs, given back with the rest if the plan evicts it.

    The victims are not held (`planning._solve_pass` offers them to the solver instead), so
    without this nothing counted such a pod: a new coordinator could be planned into the room
    a victim's pending coordinator was recorded for, and once both were bound one of them would
    wait with the node overcommitted. Bound pods are in the snapshot's usage already."""
    uses: dict[str, dict[str, tuple[ResourceMap, Ports]]] = {}
    for hold in holds(victims, {}):
        shape = pods.shapes.get(hold.owner, {}).get(hold.job_name)
        if hold.job.domain is not None or shape is None:
            continue
        settled = pods.settled.get(hold.owner, frozenset())
        for node, (used, ports) in _unbound_room(hold, shape, settled).items():
            have, taken = uses.setdefault(node, {}).get(hold.owner, ({}, ()))
            uses[node][hold.owner] = (add_resources(have, used), (*taken, *ports))
    if not uses:
        return snapshot
    nodes = [_taking_room(n, found) if (found := uses.get(n.name)) else n for n in snapshot.nodes]
    return snapshot.model_copy(update={"nodes": tuple(nodes)})


def victims_whole(victims: JobsByHolder, index: DomainIndex) -> dict[str, tuple[str, ...]]:
    """node -> the victims holding it whole (an exclusive child Job's domain), as `held_from_now`
    takes them: each node reserved to its victim, by the victim's key, so that the solver's
    eviction of that victim releases it (`whatif.without_jobsets`).

    A victim is offered to the solver, not held, and its tokens are off its nodes: without this,
    a pod without an exclusive key went onto its exclusive domain with the victim left running,
    `overlap` refused the record (the domain is held whole once the victim stays), and the next
    cycle planned the same: round 48's livelock, back whenever `--preemption` was on."""
    found: dict[str, set[str]] = {}
    for hold in holds(victims, {}):
        if hold.job.domain is None:
            continue
        for node in index.job_nodes(hold.job):
            found.setdefault(node, set()).add(hold.owner)
    return {n: tuple(sorted(keys)) for n, keys in found.items()}


def _taking_room(node: Node, uses: Mapping[str, tuple[ResourceMap, Ports]]) -> Node:
    """`node` with each holder of `uses` (a hold's token, a victim's key) taking that room:
    out of `free`, into its usage (added to what it has), listed on the node."""
    free = dict(node.free)
    usage = dict(node.jobset_usage)
    ports = set(node.used_host_ports)
    for key, (used, taken) in sorted(uses.items()):
        offered = {k: v for k, v in used.items() if k in node.allocatable}
        free = left_after(free, offered)
        base = usage.get(key) or JobSetUsage()
        usage[key] = base.model_copy(
            update={
                "requests": add_resources(base.requests, offered),
                "host_ports": tuple(sorted({*base.host_ports, *taken})),
            }
        )
        ports.update(taken)
    return node.model_copy(
        update={
            "free": free,
            "jobset_usage": usage,
            "used_host_ports": tuple(sorted(ports)),
            "jobsets": tuple(sorted({*node.jobsets, *uses})),
        }
    )


def held_snapshot(snapshot: ClusterSnapshot, held: HeldNodes) -> ClusterSnapshot:
    """`snapshot` with every hold's token on its nodes (`domains.reserve`) and the recorded
    pods of in-part holds not bound yet taking their room, recorded as the hold's usage: the
    time-aware pass gives it back when the hold is expected to end, and a token with a usage
    no longer takes the whole node there."""
    snapshot = reserve(snapshot, held.tokens)
    if not held.unbound:
        return snapshot
    nodes = [
        _taking_room(n, uses) if (uses := held.unbound.get(n.name)) else n for n in snapshot.nodes
    ]
    return snapshot.model_copy(update={"nodes": tuple(nodes)})


def shapes_without_a_key(requests: Iterable[JobSetRequest]) -> list[PodShape]:
    """The pod shapes of `requests`' replicated jobs without an exclusive key: what
    `held_from_now` asks room for."""
    return [r.pod for js in requests for r in js.replicated_jobs if r.exclusive_key is None]


def held_from_now(
    snapshot: ClusterSnapshot,
    whole: Mapping[str, Sequence[str]],
    options: SolveOptions,
    shapes: Sequence[PodShape],
) -> ClusterSnapshot:
    """`snapshot` with every node a whole hold covers (`HeldNodes.whole`) reserved to that hold
    from now until the hold is expected to end (`DomainReservation.held`): closed to the pods
    without an exclusive key of every JobSet, as `overlap` closes it to every new record.

    The tokens on a node close its domains to exclusive child Jobs only. Without this, the
    solver put such a pod on a node of another JobSet's exclusive domain, `overlap` refused the
    record, and the next cycle made the same plan: the JobSet never started, with room
    elsewhere (tests/cluster/test_gate_binding.py). The end matters to time-aware planning only
    (when the node frees for pods planned later). Only nodes with room now for one pod of
    `shapes` (those of the targets' replicated jobs without an exclusive key) get one: no such
    pod goes on the others now anyway, and with a reservation for every held node the reasons
    judged 9,000 nodes one by one (1 s more per plan at 10,000 nodes:
    benchmarks/RESULTS-controller.md, round 48)."""
    nodes = snapshot.by_name()
    requests = list({tuple(sorted(pod.requests.items())): pod.requests for pod in shapes}.values())
    roomy = {
        n: tokens
        for n, tokens in whole.items()
        if n in nodes and any(pods_that_fit(nodes[n].free, r) for r in requests)
    }
    if not roomy:
        return snapshot
    now = options.time.now
    ends = ReleaseTimeline.of_policy(snapshot, options.time, now).ends_s if now else {}
    closed = tuple(
        DomainReservation(
            jobset=min(tokens),
            key=NODE_RESERVATION_KEY,
            path=((NODE_RESERVATION_KEY, node),),
            start_s=0.0,
            end_s=max(ends.get(t, 0.0) for t in tokens),
            held=True,
        )
        for node, tokens in sorted(roomy.items())
    )
    return snapshot.model_copy(update={"reservations": (*snapshot.reservations, *closed)})


def overlap(
    record: Assignment, held: HeldNodes, index: DomainIndex, *, strict: bool = False
) -> str:
    """The first node the record may not take, or "": an exclusive child Job takes no node
    another hold covers; a child Job without an exclusive key no node another hold takes whole
    (its room there was checked by the plan). `strict`: no node another hold covers at all
    (a record restored as it is, whose room nothing checked)."""
    for hold in holds({record.jobset: record.jobs}, {}):
        closing = held.tokens if strict or hold.job.domain is not None else held.whole
        for node in index.job_nodes(hold.job):
            others = [t for t in closing.get(node, ()) if t != hold.token]
            if others:
                return f"{hold.job_name} on {node} (held by {others[0]})"
    return ""
