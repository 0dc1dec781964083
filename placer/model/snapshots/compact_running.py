"""The `running:` entries of a compact cluster description: capacity already in use.

Each entry names pools and nodes (names or shell patterns) and takes, on every node they match, what
one of its pods would: its requests (by default every accelerator of the node), pod slots, host
ports, and for a JobSet its hold on the node. `parse_description`
(placer/model/snapshots/compact.py) calls `apply_running` once the pools are expanded.

The work is bounded, because a few bytes of YAML (or one anchor and a thousand aliases of it) can
name every node of a 100,000-node description again and again: entries may take capacity on at
most `MAX_RUNNING_USES` nodes together (a node counted once per entry), and the patterns may be
tried against at most `MAX_PATTERN_TRIES` names together. Plain names (no `*`, `?` or `[`) are
looked up, not matched.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from fnmatch import fnmatchcase

from pydantic import Field, StrictInt, StrictStr

from placer.model.cluster import JobSetUsage, Node, RunningJobSet
from placer.model.durations import jobset_expected_duration, parse_rfc3339
from placer.model.errors import InputError
from placer.model.messages import echo
from placer.model.preemption import jobset_preemption_facts
from placer.model.read.limits import INT32_MAX, MAX_DESCRIPTION_NODES, Int32, Int64, Port
from placer.model.read.manifests import ClosedSchema
from placer.model.read.names import check, dns1123_label_problem, dns1123_subdomain_problem
from placer.model.resources import (
    PODS,
    ResourceMap,
    add_resources,
    as_scheduled,
    is_accelerator,
    parse_resource_map,
    subtract_resources,
)

__all__ = [
    "MAX_PATTERN_TRIES",
    "MAX_RUNNING_USES",
    "RunningSpec",
    "apply_running",
    "running_jobsets",
]

MAX_RUNNING_USES = 2 * MAX_DESCRIPTION_NODES
"""Nodes the running entries take capacity on together, a node counted once per entry."""
MAX_PATTERN_TRIES = 5_000_000
"""Names the running entries' shell patterns are matched against together (about a second)."""

Scalar = StrictStr | Int64 | float | bool


class RunningSpec(ClosedSchema):
    jobset: StrictStr | None = None
    pools: list[StrictStr] = Field(default_factory=list)
    nodes: list[StrictStr] = Field(default_factory=list)
    requests: dict[str, Scalar] | None = None
    pods: StrictInt = Field(default=1, ge=0, le=INT32_MAX)
    hostPorts: list[Port] = Field(default_factory=list)
    priority: Int32 | StrictStr | None = None
    startedAt: StrictStr | None = None
    """RFC 3339: when the JobSet started (dates it for the timeline and its eviction cost)."""
    annotations: dict[str, StrictStr] = Field(default_factory=dict)
    """The JobSet's own annotations placer reads of a running JobSet (expected duration,
    checkpoint interval, preemptible)."""


def _scalar(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class _Budget:
    """What the entries may still cost; the InputError once they ask for more."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.uses = MAX_RUNNING_USES
        self.tries = MAX_PATTERN_TRIES

    def try_names(self, count: int, field: str) -> None:
        self.tries -= count
        if self.tries < 0:
            raise InputError(
                f"the running entries' patterns are matched against more than "
                f"{MAX_PATTERN_TRIES} names together; name pools and nodes, or match fewer",
                source=self.source,
                field=field,
                code="too-many-nodes",
            )

    def use(self, count: int, field: str) -> None:
        self.uses -= count
        if self.uses < 0:
            raise InputError(
                f"the running entries take capacity on more than {MAX_RUNNING_USES} nodes "
                "together (a node counted once per entry)",
                source=self.source,
                field=field,
                code="too-many-nodes",
            )


def _matching(
    pattern: str, names: Iterable[str], known: Mapping[str, object], budget: _Budget, field: str
) -> list[str]:
    if not any(ch in pattern for ch in "*?["):
        return [pattern] if pattern in known else []
    candidates = list(names)
    budget.try_names(len(candidates), field)
    return [n for n in candidates if fnmatchcase(n, pattern)]


def _targets(
    r: RunningSpec,
    members: Mapping[str, Sequence[str]],
    nodes: Mapping[str, Node],
    budget: _Budget,
    field: str,
) -> list[str]:
    """The nodes one entry takes capacity on, each once, in description order."""
    if not r.pools and not r.nodes:
        raise InputError(
            "names no pools and no nodes", source=budget.source, field=field, code="running"
        )
    targets: list[str] = []
    for j, pattern in enumerate(r.pools):
        where = f"{field}.pools[{j}]"
        matched = _matching(pattern, members, members, budget, where)
        if not matched:
            raise InputError(
                f"no pool matches {echo(pattern)}",
                source=budget.source,
                field=where,
                code="unknown-pool",
            )
        for p in matched:
            budget.use(len(members[p]), where)
            targets.extend(members[p])
    for j, pattern in enumerate(r.nodes):
        where = f"{field}.nodes[{j}]"
        matched = _matching(pattern, nodes, nodes, budget, where)
        if not matched:
            raise InputError(
                f"no node matches {echo(pattern)}",
                source=budget.source,
                field=where,
                code="unknown-node",
            )
        budget.use(len(matched), where)
        targets.extend(matched)
    return list(dict.fromkeys(targets))


@dataclass
class _Load:
    """What the entries take on one node, summed before the node is copied once."""

    used: ResourceMap = field(default_factory=dict)
    ports: set[tuple[int, str]] = field(default_factory=set)
    usage: dict[str, JobSetUsage] = field(default_factory=dict)


def running_jobsets(running: Sequence[RunningSpec], *, source: str) -> dict[str, RunningJobSet]:
    """JobSet key -> when it started and what its annotations say, for the entries that state
    either; a bad value is bad input naming the entry (`running[k].startedAt`, or the
    annotation)."""
    result: dict[str, RunningJobSet] = {}
    for k, r in enumerate(running):
        if r.jobset is None or (r.startedAt is None and not r.annotations):
            continue
        where = f"running[{k}]"
        key = _jobset_key(r.jobset, source, f"{where}.jobset")
        manifest = {"metadata": {"annotations": r.annotations}}
        duration = jobset_expected_duration(manifest, source=source, key=f"{where} {key}")
        started = None
        if r.startedAt is not None:
            try:
                started = parse_rfc3339(r.startedAt, field=f"{where}.startedAt")
            except InputError as e:
                raise InputError(
                    e.message, source=source, obj=key, field=e.field, code=e.code
                ) from None
        result[key] = RunningJobSet(
            started_at=started,
            expected_duration_s=duration.seconds,
            duration_source=duration.source,
            preemption=jobset_preemption_facts(manifest, source=source, key=f"{where} {key}"),
        )
    return dict(sorted(result.items()))


def apply_running(
    nodes: dict[str, Node],
    members: Mapping[str, Sequence[str]],
    running: Sequence[RunningSpec],
    classes: Mapping[str, int],
    *,
    source: str,
) -> None:
    """Take the capacity of every running entry, in place on `nodes` (name -> node); `members`
    is pool name -> its node names. Each entry counts as one of its pods on every node it
    names; what all entries take on a node is summed, then the node is copied once."""
    budget = _Budget(source)
    loads: dict[str, _Load] = {}
    for k, r in enumerate(running):
        where = f"running[{k}]"
        targets = _targets(r, members, nodes, budget, where)
        priority = _running_priority(r, classes, source=source, field=where)
        requests = (
            None
            if r.requests is None
            else as_scheduled(
                parse_resource_map(
                    {k: _scalar(v) for k, v in r.requests.items()},
                    source=source,
                    field=f"{where}.requests",
                )
            )
        )
        ports = {(p, "TCP") for p in r.hostPorts}
        key = None if r.jobset is None else _jobset_key(r.jobset, source, f"{where}.jobset")
        for name in targets:
            node = nodes[name]
            load = loads.get(name)
            if load is None:
                load = loads[name] = _Load(usage=dict(node.jobset_usage))
            _take(load, node, requests, r.pods, ports, key, priority)
    for name, load in loads.items():
        node = nodes[name]
        nodes[name] = node.model_copy(
            update={
                "free": subtract_resources(node.free, load.used),
                "jobsets": tuple(sorted({*node.jobsets, *load.usage})),
                "used_host_ports": tuple(sorted({*node.used_host_ports, *load.ports})),
                "jobset_usage": dict(sorted(load.usage.items())),
            }
        )


def _jobset_key(text: str, source: str, field: str) -> str:
    """`namespace/name` (namespace defaults to `default`), both checked as the API server has
    them: the key names the JobSet in plans and reasons."""
    namespace, _, name = text.rpartition("/") if "/" in text else ("default", "", text)
    check(dns1123_label_problem, namespace, source=source, field=field, what="namespace")
    check(dns1123_subdomain_problem, name, source=source, field=field, what="JobSet name")
    return f"{namespace}/{name}"


def _take(
    load: _Load,
    node: Node,
    requests: ResourceMap | None,
    pods: int,
    ports: set[tuple[int, str]],
    jobset: str | None,
    priority: int | None,
) -> None:
    """One entry on one node: as if one of its pods ran there (its requests, by default every
    accelerator of the node; its pod slots; its host ports; for a JobSet, its hold)."""
    if requests is None:
        used = {k: v for k, v in node.allocatable.items() if is_accelerator(k)}
    else:
        used = dict(requests)
    if PODS in node.allocatable:
        used[PODS] = used.get(PODS, Decimal(0)) + pods
    for k, v in used.items():
        load.used[k] = load.used.get(k, Decimal(0)) + v
    load.ports |= ports
    if jobset is None:
        return
    before = load.usage.get(jobset, JobSetUsage())
    mine = {k: v for k, v in used.items() if k in node.allocatable}
    load.usage[jobset] = JobSetUsage(
        requests=dict(sorted(add_resources(before.requests, mine).items())),
        host_ports=tuple(sorted({*before.host_ports, *ports})),
        priority=priority if priority is not None else before.priority,
    )


def _running_priority(
    r: RunningSpec, classes: Mapping[str, int], *, source: str, field: str
) -> int | None:
    if r.priority is None or isinstance(r.priority, int):
        return r.priority
    if r.priority not in classes:
        raise InputError(
            f"unknown priority class {echo(r.priority)} "
            f"(known: {', '.join(sorted(classes)) or 'none'})",
            source=source,
            field=f"{field}.priority",
            code="priority-class",
        )
    return classes[r.priority]
