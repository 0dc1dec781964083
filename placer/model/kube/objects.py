"""Node, Pod and PriorityClass objects as placer reads them: typed, and only the fields it uses.

The snapshot loader (`placer.model.snapshots.load`) turns tens of thousands of API objects into a
`ClusterSnapshot`. The structs below are the one schema for them, whatever the source (and the
JobSet parser reads a pending JobSet's pod template with strict subclasses of them,
`placer.model.jobset.objects`):

- a kubectl JSON file is decoded in one call (`decode_kubectl_list`), straight from its bytes into
  the structs: msgspec skips every field not declared here without building it;
- YAML documents, watch caches and live API objects are Python mappings, converted by the same
  structs with the same type rules (`read_object`).

Why msgspec and not pydantic's `validate_json` (benchmarks/RESULTS-speed.md, "snapshot
decoding"): on a 50,000-node kubectl List (236 MB) msgspec decodes in 1.7 s of CPU with a 0.64 GB
peak; the same fields as pydantic models took 3.9 s with a 1.6 GB peak, and `json.load` alone
3.2 s (1.2 GB).

A failed conversion is an `InputError` naming the file, the object (`Node/name`, `namespace/name`)
and the field path (`spec.taints[0].effect`).

`pod_footprint` is what a bound pod takes from its node: requests plus one `pods` slot, and host
ports, by the rules of `pod_request` and `pod_host_ports`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any, Literal, TypeVar

import msgspec

from placer.model.errors import InputError
from placer.model.kube.go_json import as_go_reads
from placer.model.pod_requests import pod_request
from placer.model.read.manifests import object_key
from placer.model.resources import PODS, ResourceMap

__all__ = [
    "Container",
    "Footprint",
    "JobSetMeta",
    "JobSetObject",
    "KubeObject",
    "NodeCondition",
    "NodeObject",
    "NodeSpec",
    "NodeStatus",
    "ObjectMeta",
    "PodObject",
    "PodSpec",
    "PodStatus",
    "PriorityClassObject",
    "TaintSpec",
    "decode_kubectl_list",
    "footprint_signature",
    "pod_footprint",
    "pod_host_ports",
    "read_as",
    "read_object",
]


# `gc=False`: these hold no reference cycles, so the cyclic collector need not track them (a
# 50,000-node load builds a million of them).


class ObjectMeta(msgspec.Struct, frozen=True, gc=False):
    name: str
    namespace: str = "default"
    labels: dict[str, str] = {}


class TaintSpec(msgspec.Struct, frozen=True, gc=False):
    key: str
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]
    value: str = ""


class NodeCondition(msgspec.Struct, frozen=True, gc=False):
    type: str
    status: str


class NodeSpec(msgspec.Struct, frozen=True, gc=False):
    taints: tuple[TaintSpec, ...] = ()
    unschedulable: bool = False


class NodeStatus(msgspec.Struct, frozen=True, gc=False):
    allocatable: dict[str, Any] = {}
    """Unparsed quantities; `parse_resource_map` names a bad one."""
    conditions: list[NodeCondition] = []


class NodeObject(msgspec.Struct, frozen=True, gc=False):
    metadata: ObjectMeta
    spec: NodeSpec = NodeSpec()
    status: NodeStatus = NodeStatus()


class Container(msgspec.Struct, frozen=True, gc=False):
    """What `pod_request` and `pod_host_ports` read of a container, as given (checked there)."""

    resources: Any = None
    ports: Any = None
    restartPolicy: Any = None

    def as_mapping(self) -> dict[str, Any]:
        return {
            "resources": self.resources,
            "ports": self.ports,
            "restartPolicy": self.restartPolicy,
        }


class PodSpec(msgspec.Struct, frozen=True, gc=False):
    nodeName: str | None = None
    containers: tuple[Container, ...] | None = None
    initContainers: tuple[Container, ...] | None = None
    overhead: Any = None
    resources: Any = None
    """Pod-level requests and limits, read as `pod_request` reads them."""
    hostNetwork: Any = None
    priority: Any = None
    """Read only when an integer (admission sets it); anything else is ignored."""
    priorityClassName: Any = None


class PodStatus(msgspec.Struct, frozen=True, gc=False):
    phase: str | None = None
    startTime: Any = None
    """When the kubelet took the pod up (RFC 3339): dates running JobSets for the timeline."""


class PodObject(msgspec.Struct, frozen=True, gc=False):
    metadata: ObjectMeta
    spec: PodSpec = PodSpec()
    status: PodStatus = PodStatus()


class PriorityClassObject(msgspec.Struct, frozen=True, gc=False):
    metadata: ObjectMeta
    value: int = 0
    """Left out, 0, as the API server stores it."""
    preemptionPolicy: str | None = None
    """`Never`: pods of this class never preempt others (read by preemption)."""
    globalDefault: bool = False
    """The class admission gives a pod that names none
    (`snapshots.priority_classes.default_priority_class`)."""


KubeObject = NodeObject | PodObject | PriorityClassObject
_T = TypeVar("_T", bound=msgspec.Struct)


# Items of a List carry their `kind`, which picks the struct; objects handed in one by one (watch
# caches list items without it) are read as the struct their caller names.


class _ListedNode(NodeObject, frozen=True, gc=False, tag_field="kind", tag="Node"):
    pass


class _ListedPod(PodObject, frozen=True, gc=False, tag_field="kind", tag="Pod"):
    pass


class _ListedPriorityClass(
    PriorityClassObject, frozen=True, gc=False, tag_field="kind", tag="PriorityClass"
):
    pass


class JobSetMeta(msgspec.Struct, frozen=True, gc=False):
    name: str
    namespace: str = "default"
    annotations: dict[str, Any] = {}


class JobSetObject(msgspec.Struct, frozen=True, gc=False):
    """A JobSet in a snapshot: only what dates a running one (its expected duration); pending
    JobSets come from their manifests, where they run from their pods."""

    metadata: JobSetMeta
    spec: dict[str, Any] = {}


class _ListedJobSet(JobSetObject, frozen=True, gc=False, tag_field="kind", tag="JobSet"):
    pass


class _KubectlList(msgspec.Struct, gc=False):
    """`kubectl get nodes,pods,priorityclasses,jobsets -A -o json`: a v1 List of those kinds."""

    kind: str
    items: list[_ListedNode | _ListedPod | _ListedPriorityClass | _ListedJobSet]


_LIST_DECODER = msgspec.json.Decoder(_KubectlList)
_BY_KIND: dict[str, type[KubeObject]] = {
    "Node": NodeObject,
    "Pod": PodObject,
    "PriorityClass": PriorityClassObject,
}


def decode_kubectl_list(raw: bytes) -> list[KubeObject | JobSetObject] | None:
    """The Nodes, Pods, PriorityClasses and JobSets of a kubectl JSON List, in one call.

    None when the bytes are anything else or anything in them is wrong (other kinds, a bad
    field, bad JSON): the caller then reads the file object by object through `read_object`,
    which names what is wrong, or skips what it does not know.
    """
    try:
        decoded = _LIST_DECODER.decode(raw)
    except (msgspec.ValidationError, msgspec.DecodeError, RecursionError):
        return None  # RecursionError: nested past the interpreter's limit; the reader says so
    if not decoded.kind.endswith("List"):
        return None
    return list(decoded.items)


def read_object(obj: Mapping[str, Any], source: str) -> KubeObject | None:
    """A Node, Pod or PriorityClass by its `kind`, None for other kinds; see `read_as`."""
    kind = obj.get("kind")
    struct = _BY_KIND.get(kind) if isinstance(kind, str) else None
    return None if struct is None else read_as(struct, obj, source)


def read_as(struct: type[_T], obj: Mapping[str, Any], source: str) -> _T:
    """`obj` as `struct` (its `kind`, if any, not checked); an InputError names the file, the
    object and the field of anything the struct refuses."""
    try:
        return msgspec.convert(obj, struct)
    except msgspec.ValidationError:
        pass
    # Read again as the API server reads JSON, nulls as fields left out (`as_go_reads`): only
    # after a failure, so the watch cache's and the live loader's objects are not copied.
    go = as_go_reads(obj)
    try:
        return msgspec.convert(go, struct)
    except msgspec.ValidationError as e:
        kind = struct.__name__.removesuffix("Object")
        named = go if "kind" in go else {**go, "kind": kind}
        raise _input_error(e, source=source, obj=object_key(named), data=go) from e


_MESSAGE = re.compile(r"^(?P<msg>.*?)(?: - at (?P<key>`key` in )?`\$(?P<path>[^`]*)`)?$", re.S)
_MISSING = re.compile(r"^Object missing required field `(?P<name>[^`]+)`$")


def _input_error(
    e: msgspec.ValidationError, *, source: str, obj: str, data: Mapping[str, Any]
) -> InputError:
    """msgspec's "Expected `str`, got `int` - at `$.metadata.name`" as file: object: field."""
    m = _MESSAGE.match(str(e))
    assert m is not None  # the pattern matches any text
    message = m["msg"]
    field = _name_keys(data, m["path"] or "", message).lstrip(".")
    missing = _MISSING.match(message)
    if missing:
        field = f"{field}.{missing['name']}" if field else missing["name"]
        message = "field required"
    elif m["key"]:
        message = f"{message} as a key"
    return InputError(message, source=source, obj=obj, field=field, code="schema")


def pod_host_ports(pod_spec: Mapping[str, Any]) -> tuple[tuple[int, str], ...]:
    """(port, protocol) the pod binds on its node: explicit hostPorts, and every containerPort under
    hostNetwork (the API server defaults hostPort to containerPort there). Sidecars count too."""
    host_network = pod_spec.get("hostNetwork") is True
    containers = list(pod_spec.get("containers") or [])
    containers += [
        c
        for c in pod_spec.get("initContainers") or []
        if isinstance(c, Mapping) and c.get("restartPolicy") == "Always"
    ]
    ports: set[tuple[int, str]] = set()
    for c in containers:
        if not isinstance(c, Mapping):
            continue
        for p in c.get("ports") or []:
            if not isinstance(p, Mapping):
                continue
            port = p.get("hostPort") or (p.get("containerPort") if host_network else None)
            if isinstance(port, int) and port > 0:
                ports.add((port, str(p.get("protocol") or "TCP")))
    return tuple(sorted(ports))


_PART = re.compile(r"\.[^.\[]+|\[[^\]]*\]")
_GOT = re.compile(r"got `(?P<kind>[a-z]+)`")
_KINDS: dict[str, tuple[type, ...]] = {
    "str": (str,),
    "int": (int,),
    "float": (float,),
    "bool": (bool,),
    "null": (type(None),),
    "array": (list, tuple),
    "object": (Mapping,),
}


def _name_keys(data: Any, path: str, message: str) -> str:
    """msgspec writes a mapping's key as `[...]` (`.metadata.labels[...]`); name it, as
    `.metadata.labels.team`: the first key down which the path leads to a value of the kind the
    message says it got. The path unchanged when no key fits (or the message names no kind)."""
    got = _GOT.search(message)
    if "[...]" not in path or got is None:
        return path
    kinds = _KINDS.get(got["kind"], ())
    parts = _PART.findall(path)

    def walk(node: Any, i: int) -> str | None:
        if i == len(parts):
            wrong = isinstance(node, kinds) and not (kinds == (int,) and isinstance(node, bool))
            return "" if wrong else None
        part = parts[i]
        if part == "[...]":
            if isinstance(node, Mapping):
                for key, value in node.items():
                    rest = walk(value, i + 1)
                    if rest is not None:
                        return f".{key}{rest}"
            return None
        if part.startswith("["):
            index = int(part[1:-1])
            found = isinstance(node, list | tuple) and index < len(node)
            rest = walk(node[index], i + 1) if found else None
        else:
            found = isinstance(node, Mapping) and part[1:] in node
            rest = walk(node[part[1:]], i + 1) if found else None
        return None if rest is None else f"{part}{rest}"

    named = walk(data, 0)
    return path if named is None else named


Footprint = tuple[ResourceMap, tuple[tuple[int, str], ...]]
"""(requests plus one `pods` slot, host ports (port, protocol))."""


def _spec_mapping(spec: PodSpec) -> dict[str, Any]:
    """The pod spec as `pod_request` and `pod_host_ports` read it."""
    return {
        "containers": [c.as_mapping() for c in spec.containers or ()],
        "initContainers": [c.as_mapping() for c in spec.initContainers or ()],
        "overhead": spec.overhead,
        "resources": spec.resources,
        "hostNetwork": spec.hostNetwork,
    }


def pod_footprint(pod: PodObject, source: str) -> Footprint:
    """What the pod takes from its node; a bad request is an InputError naming the pod."""
    spec = _spec_mapping(pod.spec)
    obj = f"{pod.metadata.namespace}/{pod.metadata.name}"
    request = {**pod_request(spec, source=source, obj=obj), PODS: Decimal(1)}
    return request, pod_host_ports(spec)


_SIGNATURE = msgspec.msgpack.Encoder()


def footprint_signature(pod: PodObject) -> bytes | None:
    """Equal for pods whose footprints are equal: everything `pod_footprint` reads, encoded as
    MessagePack, which tells apart every value JSON and YAML produce (`1`, `1.0`, `"1"`, `True`,
    NaN and null). None when a value cannot be encoded (then the footprint is just computed)."""
    spec = pod.spec
    try:
        return _SIGNATURE.encode(
            (
                spec.hostNetwork is True,
                spec.containers,
                spec.initContainers,
                spec.overhead,
                spec.resources,
            )
        )
    except (TypeError, ValueError, OverflowError):
        return None
