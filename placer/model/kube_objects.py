"""Node and Pod objects as the snapshot loader reads them: the few fields it uses, checked fast.

`placer.model.snapshot` turns tens of thousands of API objects into a `ClusterSnapshot`; passing
each whole object through a pydantic model took a seventh of a 10,000-node load. Each reader here
first checks the fields it needs with plain type tests. An object that passes is one the pydantic
schema accepts, with the same values; anything else (no name, a wrong type, a YAML key that is not
a string) goes through the schema, so the error, its field path and its message are pydantic's.

`PodFootprints` computes what a bound pod takes from its node (requests, host ports) once per
distinct signature: a fleet runs the same few DaemonSet and JobSet pod specs thousands of times.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
)

from placer.model.jobset import pod_host_ports
from placer.model.manifests import object_key, validation_error
from placer.model.resources import PODS, ResourceMap, pod_request

__all__ = [
    "NodeFields",
    "PodFields",
    "PodFootprints",
    "read_node",
    "read_pod",
    "read_priority_class",
]

_EFFECTS = frozenset({"NoSchedule", "PreferNoSchedule", "NoExecute"})
_EMPTY: Mapping[str, Any] = {}
_NONE: list[Any] = []
"""Shared stand-ins for an absent object or list; never written to."""


# --- the schemas: the reference for what is accepted, and the source of every error message ----


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)


class _Meta(_Open):
    name: StrictStr
    namespace: StrictStr = "default"
    labels: dict[str, StrictStr] = Field(default_factory=dict)


class _TaintSpec(_Open):
    key: StrictStr
    value: StrictStr = ""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class _Condition(_Open):
    type: StrictStr
    status: StrictStr


class _NodeSpec(_Open):
    taints: list[_TaintSpec] = Field(default_factory=list)
    unschedulable: StrictBool = False


class _NodeStatus(_Open):
    allocatable: dict[str, Any] = Field(default_factory=dict)
    conditions: list[_Condition] = Field(default_factory=list)


class _NodeObj(_Open):
    metadata: _Meta
    spec: _NodeSpec = Field(default_factory=_NodeSpec)
    status: _NodeStatus = Field(default_factory=_NodeStatus)


class _PodSpec(_Open):
    nodeName: StrictStr | None = None


class _PodStatus(_Open):
    phase: StrictStr | None = None


class _PodObj(_Open):
    metadata: _Meta
    spec: _PodSpec = Field(default_factory=_PodSpec)
    status: _PodStatus = Field(default_factory=_PodStatus)


class _PriorityClassObj(_Open):
    metadata: _Meta
    value: StrictInt


# --- what the loader gets -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NodeFields:
    """A Node's fields as the schema validates them; mappings are read-only views of the input."""

    name: str
    labels: Mapping[str, str]
    taints: tuple[tuple[str, str, str], ...]
    """(key, value, effect)"""
    unschedulable: bool
    allocatable: Mapping[str, Any]
    """Unparsed quantities; `parse_resource_map` names a bad one."""
    conditions: tuple[tuple[str, str], ...]
    """(type, status)"""


@dataclass(frozen=True, slots=True)
class PodFields:
    """A Pod's fields as the schema validates them."""

    namespace: str
    labels: Mapping[str, str]
    node_name: str | None
    phase: str | None


# --- fast checks: None means "not sure", and the schema decides --------------------------------

_STR = frozenset({str})


def _all_str(values: Iterable[Any]) -> bool:
    """Exactly `str`, every one (a subclass is left to the schema); at C speed, no generator."""
    return set(map(type, values)) <= _STR


def _meta(meta: Mapping[str, Any], check_keys: bool) -> tuple[str, str, Mapping[str, str]] | None:
    name = meta.get("name")
    namespace = meta.get("namespace", "default")
    labels = meta.get("labels", _EMPTY)
    if type(name) is not str or type(namespace) is not str or type(labels) is not dict:
        return None
    if not _all_str(labels.values()) or (check_keys and not (_all_str(meta) and _all_str(labels))):
        return None
    return name, namespace, labels


def _sections(
    obj: Mapping[str, Any], check_keys: bool
) -> tuple[tuple[str, str, Mapping[str, str]] | None, dict[str, Any], dict[str, Any]] | None:
    """metadata (read), spec and status of an API object, or None if they are not all mappings
    (with string keys, when `check_keys`)."""
    if type(obj) is not dict:
        return None
    raw_meta = obj.get("metadata")
    spec = obj.get("spec", _EMPTY)
    status = obj.get("status", _EMPTY)
    if type(raw_meta) is not dict or type(spec) is not dict or type(status) is not dict:
        return None
    if check_keys and not (_all_str(obj) and _all_str(spec) and _all_str(status)):
        return None
    return _meta(raw_meta, check_keys), spec, status


def _fast_node(obj: Mapping[str, Any], check_keys: bool) -> NodeFields | None:
    """Every model level (object, metadata, spec, status, each taint and condition) refuses a
    non-string key, even among the fields it keeps unread: `check_keys` checks them."""
    parts = _sections(obj, check_keys)
    if parts is None:
        return None
    meta, spec, status = parts
    raw_taints = spec.get("taints", _NONE)
    unschedulable = spec.get("unschedulable", False)
    allocatable = status.get("allocatable", _EMPTY)
    raw_conditions = status.get("conditions", _NONE)
    if (
        meta is None
        or type(raw_taints) is not list
        or type(unschedulable) is not bool
        or type(allocatable) is not dict
        or type(raw_conditions) is not list
        or (check_keys and not _all_str(allocatable))
    ):
        return None
    taints: list[tuple[str, str, str]] = []
    for t in raw_taints:
        if type(t) is not dict or (check_keys and not _all_str(t)):
            return None
        key, value, effect = t.get("key"), t.get("value", ""), t.get("effect")
        if type(key) is not str or type(value) is not str or type(effect) is not str:
            return None
        if effect not in _EFFECTS:
            return None
        taints.append((key, value, effect))
    conditions: list[tuple[str, str]] = []
    for c in raw_conditions:
        if type(c) is not dict or (check_keys and not _all_str(c)):
            return None
        kind, state = c.get("type"), c.get("status")
        if type(kind) is not str or type(state) is not str:
            return None
        conditions.append((kind, state))
    return NodeFields(
        name=meta[0],
        labels=meta[2],
        taints=tuple(taints),
        unschedulable=unschedulable,
        allocatable=allocatable,
        conditions=tuple(conditions),
    )


def _fast_pod(obj: Mapping[str, Any], check_keys: bool) -> PodFields | None:
    """As `_fast_node`: object, metadata, spec and status refuse non-string keys."""
    parts = _sections(obj, check_keys)
    if parts is None:
        return None
    meta, spec, status = parts
    node_name = spec.get("nodeName")
    phase = status.get("phase")
    if meta is None:
        return None
    if node_name is not None and type(node_name) is not str:
        return None
    if phase is not None and type(phase) is not str:
        return None
    return PodFields(namespace=meta[1], labels=meta[2], node_name=node_name, phase=phase)


# --- readers ------------------------------------------------------------------------------------


def read_node(obj: Mapping[str, Any], source: str, *, keys_are_strings: bool = False) -> NodeFields:
    """The Node's fields, or the schema's InputError naming the file, `Node/name` and the field.

    `keys_are_strings`: the caller knows every mapping key in `obj` is a `str` (the JSON parser
    made it), so the fast path need not check them.
    """
    fields = _fast_node(obj, not keys_are_strings)
    if fields is not None:
        return fields
    try:
        n = _NodeObj.model_validate(obj)
    except ValidationError as e:
        raise validation_error(e, source=source, obj=object_key(obj)) from e
    return NodeFields(
        name=n.metadata.name,
        labels=n.metadata.labels,
        taints=tuple((t.key, t.value, t.effect) for t in n.spec.taints),
        unschedulable=n.spec.unschedulable,
        allocatable=n.status.allocatable,
        conditions=tuple((c.type, c.status) for c in n.status.conditions),
    )


def read_pod(obj: Mapping[str, Any], source: str, *, keys_are_strings: bool = False) -> PodFields:
    """The Pod's fields, or the schema's InputError naming the file, the pod and the field;
    `keys_are_strings` as for `read_node`."""
    fields = _fast_pod(obj, not keys_are_strings)
    if fields is not None:
        return fields
    try:
        p = _PodObj.model_validate(obj)
    except ValidationError as e:
        raise validation_error(e, source=source, obj=object_key(obj)) from e
    return PodFields(
        namespace=p.metadata.namespace,
        labels=p.metadata.labels,
        node_name=p.spec.nodeName,
        phase=p.status.phase,
    )


def read_priority_class(obj: Mapping[str, Any], source: str) -> tuple[str, int]:
    """(name, value); a handful per cluster, so always through the schema."""
    try:
        pc = _PriorityClassObj.model_validate(obj)
    except ValidationError as e:
        raise validation_error(e, source=source, obj=object_key(obj)) from e
    return pc.metadata.name, pc.value


Footprint = tuple[ResourceMap, tuple[tuple[int, str], ...]]


class PodFootprints:
    """What a pod takes from its node: requests plus one `pods` slot, and host ports.

    Memoized per signature: the `repr` of everything `pod_request` and `pod_host_ports` read
    (each container's resources, ports and restart policy, hostNetwork, overhead). `repr` tells
    apart every value JSON and YAML produce (`1`, `1.0`, `"1"`, `True`), so equal signatures mean
    equal results. Only successes are stored: a bad pod is computed afresh, and its error names
    that pod. The maps handed out are shared between pods; callers only read them.
    """

    def __init__(self) -> None:
        self._known: dict[str, Footprint] = {}

    def __call__(self, pod: Mapping[str, Any], source: str) -> Footprint:
        """The footprint of a Pod object; a bad request is an InputError naming the pod."""
        spec = pod.get("spec") or _EMPTY
        key = _signature(spec)
        found = self._known.get(key) if key is not None else None
        if found is not None:
            return found
        request = {**pod_request(spec, source=source, obj=object_key(pod)), PODS: Decimal(1)}
        result = (request, pod_host_ports(spec))
        if key is not None:
            self._known[key] = result
        return result


def _signature(spec: Mapping[str, Any]) -> str | None:
    """None when the spec is too odd to summarize (then it is simply computed)."""
    containers = spec.get("containers") or []
    init = spec.get("initContainers") or []
    if type(containers) is not list or type(init) is not list:
        return None
    app: list[Any] = []
    for c in containers:
        if type(c) is not dict:
            return None
        app.append((c.get("resources"), c.get("ports")))
    sidecars: list[Any] = []
    for c in init:
        if type(c) is not dict:
            return None
        sidecars.append((c.get("resources"), c.get("ports"), c.get("restartPolicy")))
    return repr((spec.get("hostNetwork") is True, app, sidecars, spec.get("overhead")))
