"""The compact cluster description: a whole accelerator cluster in a few lines of YAML.

Used for the bundled examples, generated benchmark scenarios and capacity what-ifs
(`placer capacity --add-pool`), where writing hundreds of kubectl Node objects would hide the point.
`placer.model.snapshots.load.load_snapshot` recognizes it by `kind: ClusterDescription`. The
format is strict (unknown keys are errors, to catch typos), and every node is expanded from a pool
template:

    kind: ClusterDescription
    levels:                     # optional: topology levels, coarse to fine (node label keys)
    - cloud.google.com/gke-nodepool
    - kubernetes.io/hostname
    priorityClasses: {high: 1000, low: 10}      # optional: PriorityClass name -> value
    pools:
    - name: tpu-v5e-2x4-{i}     # pool name template, rendered once per pool
      count: 6                  # how many pools of this kind (default 1)
      start: 0                  # first value of {i} (default 0), to continue numbering
      hosts: 2                  # nodes per pool (default 1)
      nodeName: gke-{pool}-{h}  # node name template (default "{pool}-{h}")
      poolLabel: cloud.google.com/gke-nodepool  # label set to the pool name (default; null = none)
      labels:                   # values are templates too
        cloud.google.com/gke-tpu-accelerator: tpu-v5-lite-podslice
        cloud.google.com/gke-tpu-topology: 2x4
        cloud.google.com/gce-topology-block: block-{i//4}
      allocatable: {cpu: "224", memory: 400Gi, google.com/tpu: "4", pods: "110"}
      taints: [{key: google.com/tpu, value: present, effect: NoSchedule}]
      ready: true               # whole pool NotReady / cordoned (defaults true / false)
      unschedulable: false
    nodes:                      # optional per-node overrides, applied after expansion
    - name: gke-tpu-v5e-2x4-1-1
      ready: false              # also: unschedulable, labels (merged), taints (added), allocatable
    running:                    # optional: capacity already in use
    - jobset: team-b/pretrain   # namespace/name (namespace defaults to "default"); omit for
      pools: [tpu-v5e-2x4-0]    #   non-JobSet pods, which use capacity but hold no domain;
      nodes: []                 #   pools and nodes are names or shell patterns ("*-pool-*")
      requests: {google.com/tpu: "4"}  # per node; default: every accelerator on the node
      pods: 1                   # pod slots used per node (default 1)
      hostPorts: [8471]         # TCP host ports taken on each node (default none)
      priority: low             # optional: its priority, a value or a priorityClasses name
      startedAt: "2026-12-01T04:00:00Z"  # optional: when it started (RFC 3339)
      annotations:              # optional: the JobSet's placer.dev/expected-duration,
        placer.dev/checkpoint-interval: 1h  # checkpoint-interval and preemptible

Templates substitute `{i}` (pool index), `{h}` (host index in the pool), `{n}` (node index in the
entry, `(i - start) * hosts + h`) and `{pool}` (the rendered pool name; not in `name` itself). A
variable may carry integer arithmetic applied left to right (`{i//4}`, `{i%4}`, `{h+1}`, `{i//2*2}`)
and a format spec (`{h:02d}`). That is enough for hierarchies: H100 blocks and sub-blocks
(`block-{i//4}`, `sb-{i%4}`), GB200 NVL72 domains (a pool of 18 hosts per `nvidia.com/gpu.clique`).
Every node also gets `kubernetes.io/hostname: <node name>` unless its labels set it. The template
language is templates.py's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import Field, StrictBool, StrictInt, StrictStr, ValidationError

from placer.model.cluster import ClusterSnapshot, Node
from placer.model.errors import InputError
from placer.model.messages import echo
from placer.model.read.limits import (
    INT32_MAX,
    MAX_DESCRIPTION_NODES,
    MAX_POOL_HOSTS,
    Int32,
    Int64,
    check_nesting_depth,
)
from placer.model.read.manifests import ClosedSchema, validation_error
from placer.model.read.names import (
    check,
    check_label_map,
    check_levels,
    check_taints,
    dns1123_subdomain_problem,
    label_value_problem,
    qualified_name_problem,
)
from placer.model.resources import (
    as_scheduled,
    parse_resource_map,
)
from placer.model.scheduling import Taint
from placer.model.snapshots.compact_running import RunningSpec, apply_running, running_jobsets
from placer.model.snapshots.templates import render_template
from placer.model.topology import HOSTNAME

__all__ = [
    "DEFAULT_POOL_LABEL",
    "DESCRIPTION_KIND",
    "add_pools",
    "expand_pools",
    "parse_description",
]

DESCRIPTION_KIND = "ClusterDescription"
DEFAULT_POOL_LABEL = "cloud.google.com/gke-nodepool"

Scalar = StrictStr | Int64 | float | StrictBool


class DescriptionTaint(ClosedSchema):
    key: StrictStr
    value: StrictStr = ""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class PoolSpec(ClosedSchema):
    name: StrictStr = Field(min_length=1)
    count: StrictInt = Field(default=1, ge=0, le=MAX_DESCRIPTION_NODES)
    start: StrictInt = Field(default=0, ge=0, le=INT32_MAX)
    hosts: StrictInt = Field(default=1, ge=1, le=MAX_POOL_HOSTS)
    nodeName: StrictStr = "{pool}-{h}"
    poolLabel: StrictStr | None = DEFAULT_POOL_LABEL
    labels: dict[str, Scalar] = Field(default_factory=dict)
    allocatable: dict[str, Scalar] = Field(default_factory=dict)
    taints: list[DescriptionTaint] = Field(default_factory=list)
    ready: StrictBool = True
    unschedulable: StrictBool = False


class NodeOverride(ClosedSchema):
    name: StrictStr
    ready: StrictBool | None = None
    unschedulable: StrictBool | None = None
    labels: dict[str, Scalar] = Field(default_factory=dict)
    taints: list[DescriptionTaint] = Field(default_factory=list)
    allocatable: dict[str, Scalar] = Field(default_factory=dict)


class Description(ClosedSchema):
    apiVersion: StrictStr = ""
    kind: Literal["ClusterDescription"]
    metadata: dict[str, Any] = Field(default_factory=dict)
    levels: list[StrictStr] = Field(default_factory=list)
    priorityClasses: dict[str, Int32] = Field(default_factory=dict)
    pools: list[dict[str, Any]] = Field(default_factory=list)
    """Validated by `expand_pools`, so `--add-pool` reports the same errors."""
    nodes: list[NodeOverride] = Field(default_factory=list)
    running: list[RunningSpec] = Field(default_factory=list)


def _scalar(value: Any) -> str:
    """Label values and quantities written unquoted in YAML arrive as numbers or booleans."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _taints(specs: Sequence[DescriptionTaint]) -> tuple[Taint, ...]:
    return tuple(Taint(key=t.key, value=t.value, effect=t.effect) for t in specs)


# --- expansion ----------------------------------------------------------------------------------


def _pool_specs(pools: Sequence[Mapping[str, Any]], *, source: str, prefix: str) -> list[PoolSpec]:
    """Validated pool specs, refused before expansion if they make too many nodes together."""
    specs: list[PoolSpec] = []
    total = 0
    for p, raw in enumerate(pools):
        field = f"{prefix}[{p}]"
        if not isinstance(raw, Mapping):
            raise InputError("must be an object", source=source, field=field, code="type")
        try:
            spec = PoolSpec.model_validate(raw)
        except ValidationError as e:
            raise validation_error(e, source=source, obj="", prefix=field) from e
        total += spec.count * spec.hosts
        if total > MAX_DESCRIPTION_NODES:
            raise InputError(
                f"the pools make {total} nodes so far; at most {MAX_DESCRIPTION_NODES}",
                source=source,
                field=f"{field}.count",
                code="too-many-nodes",
            )
        specs.append(spec)
    return specs


def _expand(
    pools: Sequence[Mapping[str, Any]], *, source: str, prefix: str = "pools"
) -> list[tuple[str, Node]]:
    """(pool name, node) for every node of every pool, in description order."""
    out: list[tuple[str, Node]] = []
    names: set[str] = set()
    for p, spec in enumerate(_pool_specs(pools, source=source, prefix=prefix)):
        field = f"{prefix}[{p}]"
        check_taints(spec.taints, source=source, field=f"{field}.taints")
        if spec.poolLabel:
            check(qualified_name_problem, spec.poolLabel, source=source, field=f"{field}.poolLabel")
        allocatable = as_scheduled(
            parse_resource_map(
                {k: _scalar(v) for k, v in spec.allocatable.items()},
                source=source,
                field=f"{field}.allocatable",
            )
        )
        for i in range(spec.start, spec.start + spec.count):
            pool = render_template(spec.name, {"i": i}, source=source, field=f"{field}.name")
            for h in range(spec.hosts):
                values: dict[str, int | str] = {
                    "i": i,
                    "h": h,
                    "n": (i - spec.start) * spec.hosts + h,
                    "pool": pool,
                }
                name = render_template(
                    spec.nodeName, values, source=source, field=f"{field}.nodeName"
                )
                if name in names:
                    raise InputError(
                        f"node name {echo(name)} generated twice",
                        source=source,
                        field=f"{field}.nodeName",
                        code="duplicate",
                    )
                names.add(name)
                check(
                    dns1123_subdomain_problem,
                    name,
                    source=source,
                    field=f"{field}.nodeName",
                    what="node name",
                )
                labels = {
                    k: render_template(
                        _scalar(v), values, source=source, field=f"{field}.labels.{k}"
                    )
                    for k, v in spec.labels.items()
                }
                check_label_map(labels, source=source, field=f"{field}.labels")
                if spec.poolLabel:
                    check(
                        label_value_problem,
                        pool,
                        source=source,
                        field=f"{field}.name",
                        what=f"pool name (the value of {spec.poolLabel})",
                    )
                    labels.setdefault(spec.poolLabel, pool)
                labels.setdefault(HOSTNAME, name)
                out.append(
                    (
                        pool,
                        Node(
                            name=name,
                            labels=dict(sorted(labels.items())),
                            taints=_taints(spec.taints),
                            allocatable=allocatable,
                            free=dict(allocatable),
                            ready=spec.ready,
                            unschedulable=spec.unschedulable,
                        ),
                    )
                )
    return out


def expand_pools(pools: Sequence[Mapping[str, Any]], *, source: str = "") -> list[Node]:
    """Nodes of the given pool specs (the `pools:` entries of the format), free = allocatable."""
    return [node for _, node in _expand(pools, source=source)]


def add_pools(
    snapshot: ClusterSnapshot, pools: Sequence[Mapping[str, Any]], *, source: str = ""
) -> ClusterSnapshot:
    """`snapshot` with the given pools' nodes appended: the capacity what-if (`--add-pool`)."""
    existing = {n.name for n in snapshot.nodes}
    added = expand_pools(pools, source=source)
    for node in added:
        if node.name in existing:
            raise InputError(
                f"node {echo(node.name)} already exists in the cluster",
                source=source,
                field="pools",
                code="duplicate",
            )
    return snapshot.model_copy(update={"nodes": (*snapshot.nodes, *added)})


def _override(node: Node, o: NodeOverride, *, source: str, field: str) -> Node:
    added = {k: _scalar(v) for k, v in o.labels.items()}
    check_label_map(added, source=source, field=f"{field}.labels")
    check_taints(o.taints, source=source, field=f"{field}.taints", beside=node.taints)
    labels = {**node.labels, **added}
    allocatable = {
        **node.allocatable,
        **as_scheduled(
            parse_resource_map(
                {k: _scalar(v) for k, v in o.allocatable.items()},
                source=source,
                field=f"{field}.allocatable",
            )
        ),
    }
    return node.model_copy(
        update={
            "labels": dict(sorted(labels.items())),
            "taints": (*node.taints, *_taints(o.taints)),
            "allocatable": allocatable,
            "free": allocatable,
            "ready": node.ready if o.ready is None else o.ready,
            "unschedulable": node.unschedulable if o.unschedulable is None else o.unschedulable,
        }
    )


def parse_description(doc: Mapping[str, Any], *, source: str = "") -> ClusterSnapshot:
    """A `kind: ClusterDescription` document -> snapshot (overrides applied, running load taken)."""
    check_nesting_depth(doc, source, obj_name=DESCRIPTION_KIND)
    try:
        desc = Description.model_validate(doc)
    except ValidationError as e:
        raise validation_error(e, source=source, obj=DESCRIPTION_KIND) from e
    check_levels(desc.levels, source=source, field="levels")
    for name in desc.priorityClasses:
        check(
            dns1123_subdomain_problem,
            name,
            source=source,
            field=f"priorityClasses[{echo(name, quote=False)}]",
            what="PriorityClass name",
        )
    expanded = _expand(desc.pools, source=source)
    nodes = {node.name: node for _, node in expanded}
    members: dict[str, list[str]] = {}
    for pool, node in expanded:
        members.setdefault(pool, []).append(node.name)
    for k, o in enumerate(desc.nodes):
        field = f"nodes[{k}]"
        if o.name not in nodes:
            raise InputError(
                f"no node named {echo(o.name)} in the pools",
                source=source,
                field=f"{field}.name",
                code="unknown-node",
            )
        nodes[o.name] = _override(nodes[o.name], o, source=source, field=field)
    apply_running(nodes, members, desc.running, desc.priorityClasses, source=source)
    return ClusterSnapshot(
        nodes=tuple(nodes.values()),
        priority_classes=dict(desc.priorityClasses),
        running=running_jobsets(desc.running, source=source),
        levels=tuple(desc.levels),
        source=source,
    )
