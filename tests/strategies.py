"""Shared test inputs: small builders for nodes, clusters and JobSets, and hypothesis strategies.

Tests build the solver's input models directly (no YAML), so a case states exactly what it is about.
Builders use Kubernetes-looking defaults: TPU node pools labeled `cloud.google.com/gke-nodepool`,
grouped into blocks by `cloud.google.com/gce-topology-block`, tainted `google.com/tpu=present`
(tolerated through the ExtendedResourceToleration plugin, which SolveOptions models by default).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import TypedDict, Unpack

from hypothesis import strategies as st

from placer.model.cluster import ClusterSnapshot, JobSetUsage, Node, RunningJobSet
from placer.model.options import SolveOptions
from placer.model.plan import Plan
from placer.model.preemption import PreemptionFacts
from placer.model.scheduling import NodeSelectorTerm, Taint, Toleration
from placer.model.workload import JobSetRequest, PodShape, ReplicatedJobRequest
from placer.solver.time.reservations import Candidate, Need, Unit, UnitId

__all__ = [
    "BLOCK",
    "HOSTNAME",
    "NODEPOOL",
    "SUBBLOCK",
    "TPU",
    "TPU_TAINT",
    "TPU_TOPOLOGY",
    "NodeOptions",
    "PodOptions",
    "PoolOptions",
    "PreemptionCase",
    "cluster",
    "clusters",
    "group_scenarios",
    "hostile_names",
    "jobset",
    "kueue_clusters",
    "kueue_jobsets",
    "node",
    "node_room_groups",
    "pod",
    "pool",
    "preemption_mixes",
    "preemption_scenarios",
    "queues",
    "resources",
    "rjob",
    "running_pool",
    "scenarios",
    "solve_checked",
]

NODEPOOL = "cloud.google.com/gke-nodepool"
BLOCK = "cloud.google.com/gce-topology-block"
SUBBLOCK = "cloud.google.com/gce-topology-subblock"
TPU_TOPOLOGY = "cloud.google.com/gke-tpu-topology"
HOSTNAME = "kubernetes.io/hostname"
TPU = "google.com/tpu"
TPU_TAINT = Taint(key=TPU, value="present", effect="NoSchedule")


def resources(**kw: object) -> dict[str, Decimal]:
    """`resources(cpu=8, tpu=4, pods=110)` -> a ResourceMap; `tpu`/`gpu` map to the vendor names."""
    names = {"tpu": TPU, "gpu": "nvidia.com/gpu", "memory": "memory", "cpu": "cpu", "pods": "pods"}
    return {names.get(k, k): Decimal(str(v)) for k, v in kw.items()}


class NodeOptions(TypedDict, total=False):
    """`node`'s keywords that a pool passes on to each of its hosts."""

    cpu: int
    pods: int
    free: Mapping[str, Decimal] | None
    taints: Iterable[Taint] | None
    ready: bool
    unschedulable: bool
    jobsets: Iterable[str]
    used_host_ports: Iterable[tuple[int, str]]


class PoolOptions(NodeOptions, total=False):
    """`pool`'s keywords besides `tpu`: its labels, and its hosts' `NodeOptions`."""

    topology: str
    block: str | None


class PodOptions(TypedDict, total=False):
    """`pod`'s keywords, as `rjob` passes them on (`memory` and `gpu` among its resources)."""

    tpu: int
    cpu: int
    node_selector: Mapping[str, str] | None
    affinity: Iterable[NodeSelectorTerm]
    tolerations: Iterable[Toleration]
    host_ports: Iterable[tuple[int, str]]
    memory: object
    gpu: object


def node(
    name: str,
    *,
    labels: Mapping[str, str] | None = None,
    tpu: int = 4,
    cpu: int = 32,
    pods: int = 110,
    free: Mapping[str, Decimal] | None = None,
    taints: Iterable[Taint] | None = None,
    ready: bool = True,
    unschedulable: bool = False,
    jobsets: Iterable[str] = (),
    used_host_ports: Iterable[tuple[int, str]] = (),
) -> Node:
    """A node with `tpu` chips (TPU-tainted when it has any); `free` defaults to allocatable."""
    alloc = resources(cpu=cpu, pods=pods, **({"tpu": tpu} if tpu else {}))
    return Node(
        name=name,
        labels={HOSTNAME: name, **(labels or {})},
        taints=tuple(taints) if taints is not None else ((TPU_TAINT,) if tpu else ()),
        allocatable=alloc,
        free=dict(free) if free is not None else dict(alloc),
        ready=ready,
        unschedulable=unschedulable,
        jobsets=tuple(sorted(jobsets)),
        used_host_ports=tuple(used_host_ports),
    )


def pool(
    name: str,
    hosts: int,
    *,
    tpu: int = 4,
    topology: str = "2x4",
    block: str | None = None,
    **node_kw: Unpack[NodeOptions],
) -> list[Node]:
    """One TPU node pool: `hosts` nodes `<name>-host-<i>` sharing the nodepool label."""
    labels = {NODEPOOL: name, TPU_TOPOLOGY: topology}
    if block is not None:
        labels[BLOCK] = block
    return [node(f"{name}-host-{i}", labels=labels, tpu=tpu, **node_kw) for i in range(hosts)]


def cluster(*groups: Node | Iterable[Node], levels: Sequence[str] = ()) -> ClusterSnapshot:
    nodes: list[Node] = []
    for g in groups:
        nodes.extend([g] if isinstance(g, Node) else g)
    return ClusterSnapshot(nodes=tuple(nodes), levels=tuple(levels))


def pod(
    *,
    tpu: int = 4,
    cpu: int = 1,
    node_selector: Mapping[str, str] | None = None,
    affinity: Iterable[NodeSelectorTerm] = (),
    tolerations: Iterable[Toleration] = (),
    host_ports: Iterable[tuple[int, str]] = (),
    **extra: object,
) -> PodShape:
    req = resources(cpu=cpu, **({"tpu": tpu} if tpu else {}), **extra)
    return PodShape(
        requests=req,
        node_selector=dict(node_selector or {}),
        affinity_terms=tuple(affinity),
        tolerations=tuple(tolerations),
        host_ports=tuple(host_ports),
    )


def rjob(
    name: str = "workers",
    replicas: int = 1,
    pods_per_job: int = 2,
    *,
    exclusive: str | None = NODEPOOL,
    shape: PodShape | None = None,
    required: str | None = None,
    preferred: str | None = None,
    **pod_kw: Unpack[PodOptions],
) -> ReplicatedJobRequest:
    """A replicated job; exclusive on the node pool by default; pod shape from `pod(**pod_kw)`."""
    return ReplicatedJobRequest(
        name=name,
        replicas=replicas,
        pods_per_job=pods_per_job,
        pod=shape or pod(**pod_kw),
        exclusive_key=exclusive,
        required_topology=required,
        preferred_topology=preferred,
    )


def jobset(
    name: str,
    *rjobs: ReplicatedJobRequest,
    namespace: str = "team-a",
    priority: int = 0,
    order: int = 0,
) -> JobSetRequest:
    return JobSetRequest(
        namespace=namespace,
        name=name,
        priority=priority,
        order=order,
        replicated_jobs=tuple(rjobs) or (rjob(),),
    )


def solve_checked(
    solver: str,
    snapshot: ClusterSnapshot,
    jobsets: Sequence[JobSetRequest],
    options: SolveOptions | None = None,
) -> Plan:
    """Solve with the named solver and fail the test if the independent checker finds anything."""
    from placer.solver.check.checker import check
    from placer.solver.registry import get_solver

    options = options or SolveOptions()
    plan = get_solver(solver).solve(snapshot, jobsets, options)
    violations = check(plan, snapshot, jobsets, options)
    assert violations == [], violations
    return plan


# -- hypothesis -----------------------------------------------------------------------------------

_PATH_PIECES = (
    "..",
    ".",
    "/",
    "//",
    "\\",
    "\x00",
    "~",
    "a",
    "b-1",
    "x.y",
    "jobs",
    "%2e%2e",
    "\n",
    " ",
)


def hostile_names() -> st.SearchStrategy[str]:
    """Names as an attacker writes them: arbitrary text, and text built from pieces of paths
    (`..`, `/`, NUL, backslashes) around plausible names; valid DNS names now and then."""
    return st.one_of(
        st.text(max_size=40),
        st.lists(st.sampled_from(_PATH_PIECES), min_size=1, max_size=8).map("".join),
        st.from_regex(r"[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?", fullmatch=True),
    )


@st.composite
def clusters(draw: st.DrawFn, max_pools: int = 6) -> ClusterSnapshot:
    """Small TPU clusters: pools of 1-4 hosts in 1-2 blocks, some nodes NotReady, cordoned,
    partly used, held by running JobSets; plus a few CPU nodes for non-exclusive jobs."""
    nodes: list[Node] = []
    for p in range(draw(st.integers(1, max_pools))):
        hosts = draw(st.integers(1, 4))
        tpu = draw(st.sampled_from([4, 8]))
        block = f"b{draw(st.integers(0, 1))}"
        topology = draw(st.sampled_from(["2x4", "4x4"]))
        held = draw(st.sampled_from([(), (), (), ("team-z/running",)]))
        for i in range(hosts):
            used_tpu = draw(st.sampled_from([0, 0, 0, tpu // 2]))
            free = resources(cpu=32, pods=110, tpu=tpu - used_tpu)
            nodes.append(
                node(
                    f"pool{p}-host-{i}",
                    labels={NODEPOOL: f"pool{p}", BLOCK: block, TPU_TOPOLOGY: topology},
                    tpu=tpu,
                    free=free,
                    ready=draw(st.sampled_from([True] * 9 + [False])),
                    unschedulable=draw(st.sampled_from([False] * 9 + [True])),
                    jobsets=held,
                    used_host_ports=draw(st.sampled_from([(), (), ((8471, "TCP"),)])),
                )
            )
    for c in range(draw(st.integers(0, 2))):
        nodes.append(
            node(f"cpu-{c}", labels={NODEPOOL: "cpu"}, tpu=0, cpu=draw(st.sampled_from([4, 8, 16])))
        )
    return ClusterSnapshot(nodes=tuple(nodes), levels=(BLOCK, NODEPOOL, HOSTNAME))


@st.composite
def _rjobs(draw: st.DrawFn, index: int) -> ReplicatedJobRequest:
    exclusive = draw(st.sampled_from([NODEPOOL, NODEPOOL, NODEPOOL, BLOCK, None]))
    if exclusive is None:
        shape = pod(tpu=0, cpu=draw(st.sampled_from([1, 2, 4])))
    else:
        shape = pod(
            tpu=draw(st.sampled_from([4, 8])),
            node_selector=draw(st.sampled_from([None, None, {TPU_TOPOLOGY: "2x4"}])),
            host_ports=draw(st.sampled_from([(), ((8471, "TCP"),)])),
        )
    return ReplicatedJobRequest(
        name=f"r{index}",
        replicas=draw(st.integers(0, 3)),
        pods_per_job=draw(st.integers(1, 4)),
        pod=shape,
        exclusive_key=exclusive,
        required_topology=draw(st.sampled_from([None, None, None, BLOCK])),
        preferred_topology=draw(st.sampled_from([None, None, BLOCK])),
    )


@st.composite
def queues(draw: st.DrawFn, max_jobsets: int = 5) -> list[JobSetRequest]:
    """1-5 JobSets of 1-2 replicated jobs, priorities 0-1, some sharing names across namespaces."""
    result: list[JobSetRequest] = []
    for i in range(draw(st.integers(1, max_jobsets))):
        rjobs = tuple(draw(_rjobs(k)) for k in range(draw(st.integers(1, 2))))
        result.append(
            JobSetRequest(
                namespace=draw(st.sampled_from(["team-a", "team-b"])),
                name=f"js{i}",
                priority=draw(st.integers(0, 1)),
                order=i,
                replicated_jobs=rjobs,
            )
        )
    return result


def running_pool(
    name: str,
    hosts: int,
    key: str,
    *,
    priority: int | None = 0,
    tpu: int = 4,
    **kw: Unpack[PoolOptions],
) -> list[Node]:
    """A pool whose every chip is held by the running JobSet `key` (one pod per host, its usage
    recorded with `priority`), so a what-if or a preemption can free it whole."""
    usage = JobSetUsage(requests=resources(tpu=tpu, cpu=1, pods=1), priority=priority)
    return [
        n.model_copy(
            update={
                "free": {**n.free, TPU: Decimal(0)},
                "jobsets": (key,),
                "jobset_usage": {key: usage},
            }
        )
        for n in pool(name, hosts, tpu=tpu, **kw)
    ]


@dataclass(frozen=True)
class PreemptionCase:
    snapshot: ClusterSnapshot
    jobsets: list[JobSetRequest]


@st.composite
def preemption_scenarios(draw: st.DrawFn) -> PreemptionCase:
    """A few pools, most held by running JobSets (one or two pools each, priorities 0-2, some
    protected, some checkpointing, started 0-10 h ago at 2026-12-01T12:00Z), a free pool or none,
    and 1-3 pending JobSets of priorities 0-2 wanting 1-3 pools (some `preemptionPolicy: Never`),
    or 1-3 child Jobs of two pods without an exclusive key (which never make room by evicting,
    and may not take a domain freed for another's sake from a victim they could not evict)."""
    now = datetime(2026, 12, 1, 12, tzinfo=UTC)
    nodes: list[Node] = []
    running: dict[str, RunningJobSet] = {}
    pools = 0
    for r in range(draw(st.integers(1, 4))):
        key = f"team-z/run{r}"
        priority = draw(st.integers(0, 2))
        for _ in range(draw(st.integers(1, 2))):
            nodes.extend(running_pool(f"p{pools}", 2, key, priority=priority))
            pools += 1
        facts = PreemptionFacts(
            preemptible=draw(st.sampled_from([True, True, False])),
            checkpoint_interval_s=draw(st.sampled_from([None, 1800.0, 3600.0])),
        )
        started = now - timedelta(minutes=draw(st.integers(0, 600)))
        running[key] = RunningJobSet(started_at=started, preemption=facts)
    for _ in range(draw(st.integers(0, 1))):
        nodes.extend(pool(f"p{pools}", 2))
        pools += 1
    jobsets = [
        JobSetRequest(
            namespace="team-a",
            name=f"js{i}",
            priority=draw(st.integers(0, 2)),
            order=i,
            never_preempts=draw(st.sampled_from([False, False, True])),
            replicated_jobs=(
                rjob(
                    replicas=draw(st.integers(1, 3)),
                    pods_per_job=2,
                    exclusive=draw(st.sampled_from([NODEPOOL, NODEPOOL, None])),
                ),
            ),
        )
        for i in range(draw(st.integers(1, 3)))
    ]
    snapshot = ClusterSnapshot(nodes=tuple(nodes), running=running)
    return PreemptionCase(snapshot, jobsets)


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[ClusterSnapshot, list[JobSetRequest]]:
    return draw(clusters()), draw(queues())


RACK = "cloud.com/topology-rack"


class _Gpus(TypedDict, total=False):
    """`pod`'s optional GPU keyword."""

    gpu: int


class _Topology(TypedDict, total=False):
    """The topology keywords of a podset group's `ReplicatedJobRequest`."""

    required_topology: str
    preferred_topology: str
    podset_group: str


@st.composite
def group_scenarios(draw: st.DrawFn) -> tuple[ClusterSnapshot, JobSetRequest]:
    """A small rack/block cluster (some hosts labeled `role=head`, some with GPUs) and one JobSet
    of a Kueue podset group: a one-pod leader (maybe only for head nodes) and 1-6 workers, in
    either order, asking for a rack or a block, required or preferred."""
    nodes: list[Node] = []
    for r in range(draw(st.integers(1, 3))):
        for h in range(draw(st.integers(1, 3))):
            labels = {BLOCK: f"b{r % 2}", RACK: f"r{r}"}
            if draw(st.booleans()):
                labels["role"] = "head"
            room = resources(
                cpu=draw(st.sampled_from([1, 2, 4, 8])),
                gpu=draw(st.sampled_from([0, 2, 4])),
                pods=110,
            )
            nodes.append(Node(name=f"r{r}-h{h}", labels=labels, allocatable=room, free=dict(room)))
    level = draw(st.sampled_from([RACK, BLOCK]))
    kind = draw(st.sampled_from(["required", "preferred"]))
    topology = _Topology(podset_group="g")
    if kind == "required":
        topology["required_topology"] = level
    else:
        topology["preferred_topology"] = level
    leader = ReplicatedJobRequest(
        name="leader",
        replicas=1,
        pods_per_job=1,
        pod=pod(
            tpu=0,
            cpu=draw(st.integers(1, 4)),
            node_selector=draw(st.sampled_from([None, {"role": "head"}])),
        ),
        **topology,
    )
    workers = ReplicatedJobRequest(
        name="workers",
        replicas=draw(st.integers(1, 3)),
        pods_per_job=draw(st.integers(1, 2)),
        pod=pod(
            tpu=0, cpu=draw(st.integers(1, 2)), **draw(st.sampled_from([_Gpus(), _Gpus(gpu=1)]))
        ),
        **topology,
    )
    members = (leader, workers) if draw(st.booleans()) else (workers, leader)
    snapshot = ClusterSnapshot(nodes=tuple(nodes), levels=(BLOCK, RACK, HOSTNAME))
    return snapshot, jobset("lws", *members)


@dataclass(frozen=True)
class ReservationCase:
    """One input of `placer.solver.time.reservations.reserve`, as its keyword arguments name it."""

    units: list[Unit]
    candidates: list[Candidate]
    free_at: dict[str, float]
    limit: int | None
    always: frozenset[str]
    holds: list[tuple[UnitId, float, float]]
    kept: dict[str, frozenset[UnitId]]


@st.composite
def reservation_cases(draw: st.DrawFn) -> ReservationCase:
    """Random inputs of the reservation pass: node pools of 1-2 nodes, sometimes blocks over
    them (overlapping units), running JobSets ending at a few instants or never, periods already
    held (now or later, overlapping or not), kept units (some no longer known), a head limit,
    and candidates of 1-2 needs over overlapping eligible sets, empty runs included."""
    pools = draw(st.integers(1, 8))
    units: list[Unit] = []
    nodes: list[str] = []
    for p in range(pools):
        members = [f"p{p}-n{i}" for i in range(draw(st.integers(1, 2)))]
        nodes += members
        units.append(Unit(("pool", f"p{p:02d}"), frozenset(members)))
    if pools > 1 and draw(st.booleans()):  # blocks over consecutive pools
        size = draw(st.integers(2, pools))
        for b, first in enumerate(range(0, pools, size)):
            inside = frozenset(n for u in units[first : first + size] for n in u.nodes)
            units.append(Unit(("block", f"b{b}"), inside))
    ids = [u.id for u in units]
    known = st.sampled_from(ids)
    some_ids = st.one_of(known, st.just(("pool", "gone")))
    free_at = {
        n: draw(st.sampled_from([0.0, 0.0, 10.0, 25.0, 60.0, math.inf]))
        for n in nodes
        if draw(st.booleans())
    }
    holds = [
        (draw(known), start, start + draw(st.sampled_from([0.0, 10.0, 40.0])))
        for start in draw(st.lists(st.sampled_from([0.0, 0.0, 5.0, 30.0]), max_size=4))
    ]
    times = st.sampled_from([0.0, 5.0, 20.0, 40.0, 60.0])
    candidates = [
        Candidate(
            f"j{c}",
            draw(times),
            tuple(
                Need(
                    f"r{r}", draw(st.integers(1, 3)), frozenset(draw(st.sets(some_ids, min_size=1)))
                )
                for r in range(draw(st.integers(1, 2)))
            ),
        )
        for c in range(draw(st.integers(1, 6)))
    ]
    names = [c.jobset for c in candidates]
    kept = {
        name: frozenset(draw(st.sets(some_ids, min_size=1, max_size=4)))
        for name in draw(st.sets(st.sampled_from(names), max_size=2))
    }
    return ReservationCase(
        units=units,
        candidates=candidates,
        free_at=free_at,
        limit=draw(st.sampled_from([None, None, 0, 1, 2])),
        always=frozenset(draw(st.sets(st.sampled_from(names), max_size=2))),
        holds=holds,
        kept=kept,
    )


@st.composite
def kueue_clusters(draw: st.DrawFn) -> ClusterSnapshot:
    """Small GPU clusters on Kueue-style levels (block, sub-block "rack", host): 1-3 blocks of
    1-3 racks of 1-4 hosts with 8 GPUs each, some half used or full."""
    nodes: list[Node] = []
    allocatable = resources(cpu=32, pods=110, gpu=8)
    for b in range(draw(st.integers(1, 3))):
        for r in range(draw(st.integers(1, 3))):
            for h in range(draw(st.integers(1, 4))):
                name = f"b{b}-r{r}-h{h}"
                gpus = draw(st.sampled_from([8, 8, 8, 4, 0]))
                nodes.append(
                    Node(
                        name=name,
                        labels={HOSTNAME: name, BLOCK: f"b{b}", SUBBLOCK: f"r{r}"},
                        allocatable=allocatable,
                        free={**allocatable, **resources(gpu=gpus)},
                    )
                )
    return ClusterSnapshot(nodes=tuple(nodes), levels=(BLOCK, SUBBLOCK, HOSTNAME))


@st.composite
def kueue_jobsets(draw: st.DrawFn) -> JobSetRequest:
    """One non-exclusive JobSet with a Kueue required or preferred topology at the block or rack
    level: 1-3 child Jobs of 1-4 pods of 4 or 8 GPUs."""
    level = draw(st.sampled_from([BLOCK, SUBBLOCK]))
    required = draw(st.booleans())
    rjob = ReplicatedJobRequest(
        name="workers",
        replicas=draw(st.integers(1, 3)),
        pods_per_job=draw(st.integers(1, 4)),
        pod=pod(tpu=0, gpu=draw(st.sampled_from([4, 8]))),
        exclusive_key=None,
        required_topology=level if required else None,
        preferred_topology=None if required else level,
    )
    return JobSetRequest(namespace="team-a", name="tas", priority=0, replicated_jobs=(rjob,))


@st.composite
def node_room_groups(draw: st.DrawFn) -> list[list[tuple[int, int | None]]]:
    """A domain's nodes split among 1-4 child domains: per node, the workers' pods that fit alone
    (0-8) and beside the leader (0 up to that, or None where the leader does not fit)."""
    groups: list[list[tuple[int, int | None]]] = []
    for _ in range(draw(st.integers(1, 4))):
        nodes: list[tuple[int, int | None]] = []
        for _ in range(draw(st.integers(0, 4))):
            room = draw(st.integers(0, 8))
            nodes.append((room, draw(st.none() | st.integers(0, room))))
        groups.append(nodes)
    return groups


@st.composite
def preemption_mixes(draw: st.DrawFn) -> tuple[ClusterSnapshot, list[JobSetRequest]]:
    """`scenarios()` (blocks, overlapping exclusive keys, shared pods, required and preferred
    topology, NotReady and cordoned hosts) with the held pools' running JobSet given a recorded
    usage and priority 0 (mostly) or 1, so a queued JobSet of priority 1 may evict it."""
    snapshot, queue = draw(scenarios())
    priority = draw(st.sampled_from([0, 0, 0, 1]))
    nodes = []
    for n in snapshot.nodes:
        if n.jobsets:
            used = {k: v - n.free.get(k, Decimal(0)) for k, v in n.allocatable.items()}
            usage = JobSetUsage(
                requests={k: v for k, v in used.items() if v > 0} | {"pods": Decimal(1)},
                priority=priority,
            )
            n = n.model_copy(update={"jobset_usage": {k: usage for k in n.jobsets}})
        nodes.append(n)
    running = {"team-z/running": RunningJobSet(started_at=datetime(2026, 12, 1, tzinfo=UTC))}
    return snapshot.model_copy(update={"nodes": tuple(nodes), "running": running}), queue
