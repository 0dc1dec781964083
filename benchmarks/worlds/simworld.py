"""The world every policy is simulated in: a fleet with nothing running yet, and its arrivals.

The arrivals are a consecutive window of the Philly trace (so bursts survive) whose gaps are scaled
so that held accelerator-seconds / (free accelerators x arrival span) equals the offered `load`,
where a child Job holds its whole exclusive domain (an 8-host child Job on an 18-host NVL72 rack
holds 72 GPUs). Which JobSets fail, when, and which of their hosts breaks are drawn here too, so
every policy meets the same failures.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field, replace
from decimal import Decimal

from benchmarks.worlds.fleets import GeneratedCluster
from benchmarks.worlds.queues import (
    PRIORITIES,
    ChildShape,
    JobSetSpec,
    QueueMix,
    gpu_menu,
    make_queue,
    tpu_menu,
)
from benchmarks.worlds.records import CLIQUE, GPU_TYPES, HOSTNAME, NODEPOOL, TPU_TYPES
from benchmarks.worlds.trace import sample_window
from placer.model.cluster import ClusterSnapshot
from placer.model.options import SolveOptions
from placer.model.resources import is_accelerator
from placer.solver.context import PlacementContext
from placer.solver.registry import get_solver

__all__ = [
    "HOUR",
    "SimConfig",
    "SimWorld",
    "accelerator_units",
    "build_world",
    "fluid_backlog_s",
    "one_priority",
    "shape_pools",
]

HOUR = 3600.0


@dataclass(frozen=True)
class SimConfig:
    jobsets: int = 120
    load: float = 0.9
    round_s: float = 300.0
    duration_cap_s: float = 12 * HOUR
    fail_share: float = 0.1
    repair_s: float = 2 * HOUR
    checkpoint_s: float = 1800.0
    starve_s: float = HOUR
    default_duration_s: float = 4 * HOUR
    """What the planner assumes for a JobSet that announces no run time."""
    size: float = 1.0


@dataclass
class SimWorld:
    """The cluster and arrival sequence every policy is simulated on."""

    name: str
    snapshot: ClusterSnapshot
    queue: list[JobSetSpec]
    capacity_units: int
    total_units: int
    failures: dict[str, tuple[float, int]]
    """JobSet key -> (fraction of its first run at which it fails, which pod's host breaks)."""
    offered_load: float
    """Held accelerator-seconds (nominal domain sizes) / (free accelerators x arrival span)."""
    dropped: int = 0
    """JobSets that could not fit even the empty fleet (left out for every policy)."""
    shape_loads: dict[str, float] = field(default_factory=dict)
    """Offered load per TPU slice shape (each shape is its own pool)."""


def accelerator_units(free: dict[str, Decimal]) -> int:
    return int(sum((v for k, v in free.items() if is_accelerator(k)), Decimal(0)))


def build_world(kind: str, seed: int, cfg: SimConfig) -> SimWorld:
    """A fleet with no JobSets running yet (the arrivals bring the load), and its arrivals."""
    rng = random.Random(f"sim:{kind}:{seed}")
    c = GeneratedCluster(name=f"sim-{kind}", rng=rng)
    c.priority_classes = {n: v for n, v, _ in PRIORITIES}
    if kind == "tpu":
        c.levels = (NODEPOOL, HOSTNAME)
        fleet = []
        for gen, shape, count in (
            ("v5e", "2x4", 12),
            ("v5e", "4x4", 8),
            ("v5e", "4x8", 4),
            ("v6e", "2x4", 8),
            ("v6e", "4x4", 6),
            ("v6e", "4x8", 3),
        ):
            n = max(1, round(count * cfg.size))
            c.add_tpu_pools(TPU_TYPES[gen], shape, n)
            fleet.append((TPU_TYPES[gen], shape, n))
        menu = tpu_menu(fleet)
        mix = QueueMix(max_replicas=4)
        c.add_non_jobset_pods(0.02, (4,))
    elif kind == "gb200":
        c.levels = ("cloud.google.com/gce-topology-block", CLIQUE, HOSTNAME)
        c.span_level = "cloud.google.com/gce-topology-block"
        c.add_gpu_blocks(
            GPU_TYPES["gb200"], max(1, round(2 * cfg.size)), 8, 18, domain_label=CLIQUE
        )
        c.break_clique_hosts(CLIQUE, 3)
        menu = gpu_menu(
            GPU_TYPES["gb200"],
            CLIQUE,
            {18: 0.15, 16: 0.45, 15: 0.15, 12: 0.15, 8: 0.1},
            c.span_level,
            18,
        )
        mix = QueueMix(max_replicas=4)
        c.add_non_jobset_pods(0.03, (1, 2))
    else:
        raise ValueError(f"unknown simulation fleet {kind!r}")
    c.degrade(cordoned=0.01, not_ready=0.0)
    snapshot = c.to_snapshot()
    capacity = sum(accelerator_units(n.free) for n in snapshot.nodes if n.usable)
    total = sum(accelerator_units(n.allocatable) for n in snapshot.nodes)
    trace = sample_window(rng, cfg.jobsets)
    queue = make_queue(rng, trace, menu, mix, prefix="sim", duration_cap_s=cfg.duration_cap_s)
    shape_capacity = _shape_capacity(menu, snapshot) if kind == "tpu" else {}
    if shape_capacity:
        queue = _balance_shapes(queue, menu, shape_capacity)
    queue, dropped = _fit_alone(queue, snapshot)
    work = math.fsum(js.held_units * js.duration_s for js in queue)
    span = max(queue[-1].arrival_s, 1.0)
    scale = work / (cfg.load * capacity * span)
    queue = [replace(js, arrival_s=js.arrival_s * scale) for js in queue]
    shape_loads = _shape_loads(queue, shape_capacity)
    failures = {
        js.key: (rng.random(), rng.randrange(1 << 16))
        for js in queue
        if rng.random() < cfg.fail_share
    }
    offered = work / (capacity * max(queue[-1].arrival_s, 1.0))
    return SimWorld(
        f"{kind}-{len(snapshot.nodes)}n",
        snapshot,
        queue,
        capacity,
        total,
        failures,
        offered,
        dropped,
        shape_loads,
    )


def one_priority(world: SimWorld) -> SimWorld:
    """The same world with every JobSet in one priority class (the middle one, `batch`).

    Why: issue 21's targets compare policies under the queue's priority tiers; run once with
    one tier, the same arrivals show how much of every policy's p95 and max the tiers cost (a
    low-priority JobSet waits behind every later higher one until aging lifts it), apart from
    what a policy chooses."""
    name, value, _ = PRIORITIES[len(PRIORITIES) // 2]
    queue = [replace(js, priority_class=name, priority=value) for js in world.queue]
    return replace(world, queue=queue)


@dataclass(frozen=True)
class ShapePool:
    """The JobSets of one child shape and the domains that can take their child Jobs."""

    domains: int
    """Domains a child Job of the shape fits on the empty fleet (0 for pool "all")."""
    capacity: int
    """Their nominal accelerators (pool "all": every free accelerator)."""
    work_share: float
    """The shape's share of all held accelerator-seconds offered."""
    fluid_backlog_s: float
    """See `fluid_backlog_s`."""


def shape_pools(world: SimWorld) -> dict[str, ShapePool]:
    """Per child shape (and "all"), what it asks of the fleet and what can serve it.

    The fluid backlog is, in seconds of those domains, max over s <= t of (held accelerator-
    seconds of the shape's JobSets arriving in [s, t] - capacity x (t - s)) / capacity, where
    capacity is the accelerators of the domains a child Job of the shape fits on the empty fleet
    (an 18-host child Job only fits racks with 18 healthy, empty hosts). It is the longest wait of
    a first-come-first-served queue in the fluid picture (perfect packing, work divisible, no
    other shape competing for those domains), so it understates what any policy faces; the
    over-time report gives it beside the measured delays, as the backlog the arrivals themselves
    carry. Pool "all" is every JobSet on every free accelerator.
    """
    groups: dict[str, list[JobSetSpec]] = {"all": list(world.queue)}
    for js in world.queue:
        groups.setdefault(js.rjobs[0].shape.label, []).append(js)
    total = math.fsum(js.held_units * js.duration_s for js in world.queue) or 1.0
    pools: dict[str, ShapePool] = {}
    for label, jobs in sorted(groups.items()):
        domains, capacity = (
            (0, world.capacity_units) if label == "all" else _fitting(world.snapshot, jobs[0])
        )
        work = math.fsum(js.held_units * js.duration_s for js in jobs)
        pools[label] = ShapePool(domains, capacity, work / total, _fluid_peak_s(jobs, capacity))
    return pools


def fluid_backlog_s(world: SimWorld) -> dict[str, float]:
    """Per child shape (and "all"), the fluid backlog of `shape_pools`; a shape no domain can
    take is left out."""
    return {k: p.fluid_backlog_s for k, p in shape_pools(world).items() if p.capacity > 0}


def _fluid_peak_s(jobs: list[JobSetSpec], capacity: int) -> float:
    if capacity <= 0:
        return math.inf
    # running maximum of (arrived work - capacity x arrival time) over earlier window starts
    peak = 0.0
    lowest_start = math.inf
    arrived = 0.0
    for js in sorted(jobs, key=lambda j: j.arrival_s):
        lowest_start = min(lowest_start, arrived - capacity * js.arrival_s)
        arrived += js.held_units * js.duration_s
        peak = max(peak, (arrived - capacity * js.arrival_s - lowest_start) / capacity)
    return peak


def _fitting(snapshot: ClusterSnapshot, js: JobSetSpec) -> tuple[int, int]:
    """Domains one child Job of `js`'s first replicated job fits, and their nominal
    accelerators."""
    request = js.to_request()
    ctx = PlacementContext(snapshot, [request], SolveOptions())
    jc = ctx.classes_of(request)[0]
    if jc.exclusive_key is None:
        return 0, sum(accelerator_units(n.free) for n in snapshot.nodes if n.usable)
    shape = js.rjobs[0].shape
    per_domain = max(shape.domain_units, shape.pods_per_job * shape.units_per_pod)
    fitting = sum(
        1
        for d in ctx.domains(jc.exclusive_key)
        if ctx.domain_capacity(jc, d) >= jc.rjob.pods_per_job
    )
    return fitting, fitting * per_domain


def _shape_capacity(menu: list[ChildShape], snapshot: ClusterSnapshot) -> dict[str, int]:
    """Free accelerators on usable nodes matching each child shape's node selector."""
    return {
        s.label: sum(
            accelerator_units(n.free)
            for n in snapshot.nodes
            if n.usable and all(n.labels.get(k) == v for k, v in s.node_selector)
        )
        for s in menu
    }


def _balance_shapes(
    queue: list[JobSetSpec], menu: list[ChildShape], capacity: dict[str, int]
) -> list[JobSetSpec]:
    """Give each JobSet the slice shape whose offered load is lowest so far.

    TPU child Jobs are pinned to one topology, so each shape is its own pool; drawn at random,
    heavy-tailed durations leave one shape at 130% while another idles at 50%, and a cluster-wide
    "90% offered load" would describe no shape at all. Balancing keeps every shape near the
    stated load; it is the same queue for every policy.
    """
    work = dict.fromkeys(capacity, 0.0)
    usable = [s for s in menu if capacity[s.label] > 0]
    out = []
    for js in queue:
        r = js.rjobs[0]
        adds = {
            s.label: r.replicas * s.pods_per_job * s.units_per_pod * js.duration_s for s in usable
        }
        best = min(usable, key=lambda s: (work[s.label] + adds[s.label]) / capacity[s.label])
        work[best.label] += adds[best.label]
        out.append(replace(js, rjobs=(replace(r, shape=best), *js.rjobs[1:])))
    return out


def _shape_loads(queue: list[JobSetSpec], capacity: dict[str, int]) -> dict[str, float]:
    """Offered load per child shape (TPU topology) after arrivals were scaled."""
    if not capacity or not queue:
        return {}
    span = max(queue[-1].arrival_s, 1.0)
    work = dict.fromkeys(capacity, 0.0)
    for js in queue:
        for r in js.rjobs:
            work[r.shape.label] += (
                r.replicas * r.shape.pods_per_job * r.shape.units_per_pod * (js.duration_s)
            )
    return {k: work[k] / (capacity[k] * span) for k in sorted(capacity) if capacity[k]}


def _fit_alone(queue: list[JobSetSpec], snapshot: ClusterSnapshot) -> tuple[list[JobSetSpec], int]:
    """Shrink JobSets that could not run even on the empty fleet; drop those that never could.

    Without this a JobSet wider than the fleet waits forever under every policy, which says
    nothing about the policies. Returns the queue and how many JobSets were dropped.
    """
    solver = get_solver("best-fit")
    options = SolveOptions(check=False)
    kept: list[JobSetSpec] = []
    for js in queue:
        while True:
            plan = solver.solve(snapshot, [js.to_request()], options)
            if plan.jobsets[0].status == "placed":
                kept.append(js)
                break
            widest = max(js.rjobs, key=lambda r: r.replicas)
            if widest.replicas <= 1:
                break
            rjobs = tuple(
                replace(r, replicas=r.replicas - 1) if r is widest else r for r in js.rjobs
            )
            js = replace(js, rjobs=rjobs)
    return kept, len(queue) - len(kept)
