"""The placement map as plain data: the fleet by topology level, one state per host, and a legend.

`placer plan|explain|capacity --map FILE` draw this; the two writers (`html`, `png`) only
turn it into pixels, so both show the same thing. It reads the cluster snapshot and a `Plan` (the
plan document's model) and nothing of the solvers.

Structure: blocks hold domains, which hold hosts (`tree` decides which host goes where).
Each host gets one state, the first that applies:

  running   pods of a running JobSet are on it (colored by that JobSet, solid)
  planned   the plan puts pods of a pending JobSet on it (colored by that JobSet, hatched)
  notready  the node is NotReady
  cordoned  the node is unschedulable
  stranded  free, but unusable; what that means depends on the caller (see `StrandedRule`)
  free      everything else

Colors go to the JobSets covering the most hosts (the explained one first); the rest share one
"others" color, so the legend stays short at 10,000 nodes while tooltips still name every JobSet.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Literal

from placer.model.cluster import ClusterSnapshot, Node
from placer.model.plan import DomainRef, Plan
from placer.model.resources import is_accelerator
from placer.model.topology import HOSTNAME
from placer.render.maps.tree import BlockPath, block_title, place_hosts

__all__ = [
    "OTHERS",
    "PALETTE",
    "STATE_COLORS",
    "FleetMap",
    "HostState",
    "LegendEntry",
    "MapBlock",
    "MapDomain",
    "MapHost",
    "StrandedRule",
    "build_fleet_map",
    "tint",
]

HostState = Literal["running", "planned", "notready", "cordoned", "stranded", "free"]
StrandedRule = Literal["held-domain", "given"]
"""`held-domain` (plan, explain): free hosts in a domain a running or planned JobSet occupies,
which exclusive placement leaves idle. `given` (capacity): the hosts the capacity count found
stranded, free accelerators in domains no JobSet shape given can take."""

PALETTE = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#17becf",
    "#393b79",
    "#637939",
    "#8c6d31",
    "#843c39",
    "#7b4173",
    "#6baed6",
    "#74c476",
    "#fd8d3c",
)
"""Colors for the JobSets with the most hosts; no grays, black, white or amber (states use them)."""
OTHERS = "#bfae9f"
"""The shared color of JobSets beyond the palette."""
STATE_COLORS: dict[str, str] = {
    "free": "#ffffff",
    "stranded": "#ffd54f",
    "cordoned": "#9e9e9e",
    "notready": "#212121",
}
STRANDED_NOTES: dict[StrandedRule, str] = {
    "held-domain": "free, in a domain a running or planned JobSet occupies "
    "(exclusive placement leaves it idle)",
    "given": "free accelerators in a domain no JobSet shape given can take "
    "(from the capacity count)",
}


@dataclass(frozen=True)
class MapHost:
    name: str
    state: HostState
    jobset: str | None
    """The JobSet whose color the host takes: running or planned here, or holding its domain."""
    color: str
    running: tuple[str, ...] = ()
    planned: tuple[str, ...] = ()
    not_ready: bool = False
    cordoned: bool = False
    accelerators: int = 0
    free_accelerators: int = 0


@dataclass(frozen=True)
class MapDomain:
    label: str
    """The domain's value at its level (`v5e-2x4-pool-3`), or the key for hosts without one."""
    key: str
    hosts: tuple[MapHost, ...]
    holder: str | None = None
    """The JobSet occupying the domain (the one on most of its hosts), if any."""
    holder_color: str | None = None
    holder_planned: bool = False


@dataclass(frozen=True)
class MapBlock:
    title: str
    domains: tuple[MapDomain, ...]


@dataclass(frozen=True)
class LegendEntry:
    label: str
    color: str
    kind: Literal["running", "planned", "others", "state"]
    hosts: int
    note: str = ""
    state: HostState | None = None


@dataclass(frozen=True)
class FleetMap:
    title: str
    subtitle: str
    blocks: tuple[MapBlock, ...]
    legend: tuple[LegendEntry, ...]
    stranded_rule: StrandedRule
    hosts: int = 0
    domains: int = 0
    jobsets: tuple[str, ...] = field(default=())
    """Every JobSet drawn (running or planned), sorted; the legend names the top ones."""


def tint(color: str, amount: float = 0.55) -> str:
    """`color` mixed with white: the background of a planned (hatched) host."""
    r, g, b = (int(color[i : i + 2], 16) for i in (1, 3, 5))
    mix = [round(c + (255 - c) * amount) for c in (r, g, b)]
    return "#" + "".join(f"{c:02x}" for c in mix)


def _accelerators(resources: dict[str, Decimal]) -> int:
    return int(sum((v for k, v in resources.items() if is_accelerator(k)), Decimal(0)))


def _planned_hosts(plan: Plan | None) -> dict[str, list[str]]:
    """node -> JobSets the plan puts pods of there."""
    out: dict[str, list[str]] = defaultdict(list)
    if plan is None:
        return out
    for o in plan.jobsets:
        if o.status == "unschedulable":
            continue
        for job in o.jobs:
            for pod in job.pods:
                if o.key not in out[pod.node]:
                    out[pod.node].append(o.key)
    return out


def _planned_domains(plan: Plan | None) -> list[tuple[DomainRef, str]]:
    if plan is None:
        return []
    return [
        (job.domain, o.key)
        for o in plan.jobsets
        if o.status != "unschedulable"
        for job in o.jobs
        if job.domain is not None
    ]


def _domain_keys(plan: Plan | None, keys: Iterable[str]) -> list[str]:
    found = [k for k in keys if k and k != HOSTNAME]
    for ref, _ in _planned_domains(plan):
        if ref.key != HOSTNAME and ref.key not in found:
            found.append(ref.key)
    return found


def _colors(counts: Counter[str], first: str | None) -> dict[str, str]:
    """A color each for `first` and the JobSets on the most hosts, as many as the palette has."""
    ranked = sorted(counts, key=lambda k: (k != first, -counts[k], k))
    return {k: PALETTE[i] for i, k in enumerate(ranked[: len(PALETTE)])}


@dataclass
class _Occupancy:
    """Who is on each host and which (domain key, value) pairs a plan reserves for whom."""

    running: dict[str, tuple[str, ...]]
    planned: dict[str, list[str]]
    reserved: dict[str, list[str]]
    """node -> JobSets whose planned domain contains it (with or without pods there)."""


def _occupancy(snapshot: ClusterSnapshot, plan: Plan | None) -> _Occupancy:
    running = {n.name: n.jobsets for n in snapshot.nodes if n.jobsets}
    reserved: dict[str, list[str]] = defaultdict(list)
    index: dict[str, dict[str, set[str]]] = {}
    for ref, key in _planned_domains(plan):
        pairs = list(ref.path) or [(ref.key, ref.value)]
        members: set[str] | None = None
        for label, value in pairs:
            if label not in index:
                index[label] = defaultdict(set)
                for n in snapshot.nodes:
                    if label in n.labels:
                        index[label][n.labels[label]].add(n.name)
            found = index[label].get(value, set())
            members = found if members is None else members & found
        for name in members or ():
            if key not in reserved[name]:
                reserved[name].append(key)
    return _Occupancy(running=running, planned=_planned_hosts(plan), reserved=reserved)


def _state(node: Node, occ: _Occupancy) -> tuple[HostState, str | None]:
    if node.name in occ.running:
        return "running", occ.running[node.name][0]
    if occ.planned.get(node.name):
        return "planned", occ.planned[node.name][0]
    if not node.ready:
        return "notready", None
    if node.unschedulable:
        return "cordoned", None
    return "free", None


def build_fleet_map(
    snapshot: ClusterSnapshot,
    plan: Plan | None,
    *,
    levels: Sequence[str] = (),
    keys: Sequence[str] = (),
    stranded: Collection[str] | None = None,
    title: str = "",
    highlight: str | None = None,
) -> FleetMap:
    """The map of `snapshot` with `plan` drawn in; `keys` are the JobSets' exclusive keys.

    `levels` default to the snapshot's (else derived from `keys`, as the planner does). With
    `stranded` given (node names), those free hosts are the stranded ones; without it, free hosts
    in a domain some JobSet occupies are. `highlight` (a JobSet key) gets the first color.
    """
    domain_keys = _domain_keys(plan, keys)
    placed = place_hosts(snapshot, tuple(levels) or snapshot.levels, domain_keys)
    occ = _occupancy(snapshot, plan)
    rule: StrandedRule = "held-domain" if stranded is None else "given"
    stranded_set = frozenset(stranded or ())

    states = {n.name: _state(n, occ) for n in snapshot.nodes}
    counts: Counter[str] = Counter(js for _, js in states.values() if js is not None)
    colors = _colors(counts, highlight)

    def color_of(js: str | None) -> str:
        return OTHERS if js is None else colors.get(js, OTHERS)

    by_block: dict[BlockPath, list[MapDomain]] = {}
    for (block, (key, value)), nodes in placed.items():
        holders = Counter(js for n in nodes if (js := states[n.name][1]) is not None)
        for n in nodes:
            holders.update(occ.reserved.get(n.name, ()))
        holder = min(holders, key=lambda k: (-holders[k], k)) if holders else None
        hosts = []
        for n in nodes:
            state, js = states[n.name]
            if state == "free":
                if rule == "given":
                    state = "stranded" if n.name in stranded_set else "free"
                elif holder is not None and key in domain_keys:
                    state, js = "stranded", holder
            hosts.append(
                MapHost(
                    name=n.name,
                    state=state,
                    jobset=js,
                    color=color_of(js) if state in ("running", "planned") else STATE_COLORS[state],
                    running=tuple(occ.running.get(n.name, ())),
                    planned=tuple(occ.planned.get(n.name, ())),
                    not_ready=not n.ready,
                    cordoned=n.unschedulable,
                    accelerators=_accelerators(n.allocatable),
                    free_accelerators=_accelerators(n.free) if n.usable else 0,
                )
            )
        holder_planned = holder is not None and not any(
            holder in occ.running.get(n.name, ()) for n in nodes
        )
        by_block.setdefault(block, []).append(
            MapDomain(
                label=value,
                key=key,
                hosts=tuple(hosts),
                holder=holder,
                holder_color=color_of(holder) if holder is not None else None,
                holder_planned=holder_planned,
            )
        )
    blocks = tuple(
        MapBlock(title=block_title(path), domains=tuple(domains))
        for path, domains in by_block.items()
    )
    all_hosts = [h for b in blocks for d in b.domains for h in d.hosts]
    jobsets = sorted({js for h in all_hosts for js in (*h.running, *h.planned)} | set(counts))
    return FleetMap(
        title=title or "placement map",
        subtitle=_subtitle(snapshot, plan, blocks)
        + (f"; {highlight} is on no host" if highlight and highlight not in counts else ""),
        blocks=blocks,
        legend=_legend(all_hosts, colors, counts, rule),
        stranded_rule=rule,
        hosts=len(all_hosts),
        domains=sum(len(b.domains) for b in blocks),
        jobsets=tuple(jobsets),
    )


def _subtitle(snapshot: ClusterSnapshot, plan: Plan | None, blocks: Sequence[MapBlock]) -> str:
    domains = sum(len(b.domains) for b in blocks)
    text = f"{len(snapshot.nodes)} hosts, {domains} domains in {len(blocks)} groups"
    if plan is not None:
        placed = sum(1 for o in plan.jobsets if o.status == "placed")
        text += (
            f"; plan {plan.solver.name} {plan.solver.status}: "
            f"{placed} of {len(plan.jobsets)} JobSets placed"
        )
    return text


def _legend(
    hosts: Sequence[MapHost], colors: dict[str, str], counts: Counter[str], rule: StrandedRule
) -> tuple[LegendEntry, ...]:
    planned_only = {h.jobset for h in hosts if h.state == "planned"} - {
        h.jobset for h in hosts if h.state == "running"
    }
    entries = [
        LegendEntry(
            label=js,
            color=color,
            kind="planned" if js in planned_only else "running",
            hosts=counts[js],
        )
        for js, color in colors.items()
    ]
    rest = [js for js in counts if js not in colors]
    if rest:
        entries.append(
            LegendEntry(
                label=f"others ({len(rest)} JobSets)",
                color=OTHERS,
                kind="others",
                hosts=sum(counts[js] for js in rest),
            )
        )
    by_state = Counter(h.state for h in hosts)
    notes: dict[HostState, str] = {
        "free": "no JobSet on it",
        "stranded": STRANDED_NOTES[rule],
        "cordoned": "unschedulable",
        "notready": "node not Ready",
    }
    labels: dict[HostState, str] = {
        "free": "free",
        "stranded": "stranded",
        "cordoned": "cordoned",
        "notready": "NotReady",
    }
    for state in labels:
        entries.append(
            LegendEntry(
                label=labels[state],
                color=STATE_COLORS[state],
                kind="state",
                hosts=by_state[state],
                note=notes[state],
                state=state,
            )
        )
    return tuple(entries)
