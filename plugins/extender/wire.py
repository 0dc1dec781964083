"""The kube-scheduler extender wire format (`k8s.io/kube-scheduler/extender/v1`), read and written.

Those Go types carry no json tags, so the JSON keys are the Go field names:
`ExtenderArgs{Pod, Nodes, NodeNames}`,
`ExtenderFilterResult{Nodes, NodeNames, FailedNodes, FailedAndUnresolvableNodes, Error}`,
`HostPriorityList [{Host, Score}]`, `ExtenderBindingArgs{PodName, PodNamespace, PodUID, Node}`,
`ExtenderBindingResult{Error}`. Like Go's decoder, keys match exactly first, then ignoring case.
The embedded Pod and NodeList are ordinary API objects with their usual lower-case keys.

Why structure-first decoding for the full-NodeList case: a scheduler that is not node-cache
capable sends every candidate Node in full (about 9 KB each with images and conditions) and
expects the accepted ones back as full objects. Decoding 1,000 of them into Python objects and
encoding them again takes several hundred milliseconds, past the scheduler's patience. So the body
is parsed by structure in C (msgspec): the envelope and the NodeList into `msgspec.Raw` spans
(the exact text of each value, not built), each Node's `metadata.name` and `metadata.labels`
decoded from its span by a struct that skips every other field, and the response copies the
accepted Nodes' spans. A JSON parser decides what is a key and where a value ends, so a `"labels"`
or `"name"` key nested elsewhere in a Node (an annotation, a status field) is never taken for the
Node's own; duplicate keys resolve as in Python's decoder (the last one counts). The Pod, small,
is decoded in full by `placer.model.read.loading` (NaN, overlong numbers refused).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from json.decoder import scanstring  # type: ignore[attr-defined]  # not in typeshed's json
from typing import Any

import msgspec

from placer.model.errors import InputError
from placer.model.read.limits import MAX_NESTING_DEPTH
from placer.model.read.loading import JSON_DECODER
from plugins.extender.decide import FilterResult, HostScore

__all__ = [
    "BindingArgs",
    "ExtenderArgs",
    "NodeItem",
    "decode_args",
    "decode_binding",
    "encode_bind_result",
    "encode_error",
    "encode_filter",
    "encode_priorities",
]

_COMPACT = (",", ":")


@dataclass(frozen=True, slots=True)
class NodeItem:
    """One Node of a full NodeList request: what decisions need, and its exact text."""

    name: str
    labels: dict[str, str]
    raw: bytes


@dataclass(frozen=True, slots=True)
class ExtenderArgs:
    """A decoded filter/prioritize request: `node_names` in node-cache mode, else `nodes`."""

    pod: dict[str, Any]
    node_names: list[str] | None = None
    nodes: list[NodeItem] | None = None

    @property
    def names(self) -> list[str]:
        if self.node_names is not None:
            return self.node_names
        return [n.name for n in self.nodes or ()]

    @property
    def labels(self) -> dict[str, dict[str, str]] | None:
        """Labels from the request itself (NodeList mode only)."""
        if self.nodes is None:
            return None
        return {n.name: n.labels for n in self.nodes}


@dataclass(frozen=True, slots=True)
class BindingArgs:
    pod_name: str
    pod_namespace: str
    pod_uid: str
    node: str


def _bad(message: str, field: str = "", obj: str = "ExtenderArgs") -> InputError:
    return InputError(message, obj=obj, field=field, code="extender-request")


_TOO_DEEP = f"nested deeper than {MAX_NESTING_DEPTH} levels"
"""Said when the C decoder's recursion guard trips (near 1,000 levels). Shallower nesting is
harmless here: decisions read only the Pod's metadata and walk nothing recursively, so the Pod is
not measured (that walk cost half a millisecond per request)."""


class _NodeMeta(msgspec.Struct, frozen=True, gc=False):
    name: str = ""
    labels: dict[str, str] | None = None


class _NodeHead(msgspec.Struct, frozen=True, gc=False):
    """What decisions read of a Node; msgspec skips every other field without building it."""

    metadata: _NodeMeta = _NodeMeta()


_MEMBERS = msgspec.json.Decoder(dict[str, msgspec.Raw])
_ITEMS = msgspec.json.Decoder(list[msgspec.Raw] | None)
_NAMES = msgspec.json.Decoder(list[str] | None)
_HEAD = msgspec.json.Decoder(_NodeHead)


def _decode(
    decoder: msgspec.json.Decoder[Any], raw: bytes | msgspec.Raw, field: str, shape: str
) -> Any:
    """One value by structure; malformed JSON, too deep or the wrong shape is an InputError."""
    try:
        return decoder.decode(raw)
    except RecursionError:  # the C decoder's own guard, near 1,000 levels
        raise _bad(_TOO_DEEP, field or _member_at(bytes(raw).decode("utf-8", "replace"))) from None
    except msgspec.ValidationError:
        raise _bad(shape, field) from None
    except msgspec.DecodeError as e:
        # Python's decoder says where, in lines and columns; its words are the message
        text = bytes(raw).decode("utf-8", "replace")
        _python_decode(text, field)
        raise _bad(f"malformed JSON: {e}", field) from None


def _python_decode(text: str, field: str = "", obj: str = "ExtenderArgs") -> Any:
    """`text` by Python's decoder (NaN, infinities and overlong numbers refused); an InputError
    names the member of the request where the JSON goes wrong."""
    try:
        return JSON_DECODER.decode(text)
    except RecursionError:
        raise _bad(_TOO_DEEP, field or _member_at(text), obj) from None
    except json.JSONDecodeError as e:
        where = field or _member_at(text, e.pos)
        raise _bad(
            f"malformed JSON: {e.msg} at line {e.lineno} column {e.colno}", where, obj
        ) from None
    except ValueError as e:  # NaN, an overlong number
        raise _bad(f"malformed JSON: {e}", field, obj) from None


def _member_at(text: str, stop: int | None = None) -> str:
    """Which member of the request holds offset `stop` (or, without one, first nests deeper than
    `MAX_NESTING_DEPTH`): `Pod`, `Nodes.items[3]`, for the message. A scan run only once a
    decoder has refused the body, so its speed does not matter."""
    frames: list[list[Any]] = []  # ["{", last key] or ["[", index]
    i, expect_key = 0, False
    end = len(text) if stop is None else min(stop, len(text))
    while i < end:
        c = text[i]
        if c == '"':
            try:
                key, i = scanstring(text, i + 1)
            except ValueError:
                break
            if expect_key and frames and frames[-1][0] == "{":
                frames[-1][1] = key
            continue
        if c in "{[":
            if stop is None and len(frames) > MAX_NESTING_DEPTH:
                break
            frames.append([c, None if c == "{" else 0])
            expect_key = c == "{"
        elif c in "}]":
            if frames:
                frames.pop()
            expect_key = False
        elif c == ",":
            if frames and frames[-1][0] == "[":
                frames[-1][1] += 1
            expect_key = bool(frames) and frames[-1][0] == "{"
        elif c == ":":
            expect_key = False
        i += 1
    member = str(frames[0][1]) if frames and frames[0][0] == "{" and frames[0][1] else ""
    if member.lower() == "nodes" and len(frames) > 2 and frames[1][1] == "items":
        return f"Nodes.items[{frames[2][1]}]"
    return member


def _canonical(members: dict[str, msgspec.Raw], keys: dict[str, str]) -> dict[str, msgspec.Raw]:
    """Go's key matching: the exact key wins, else one that matches ignoring case."""
    found: dict[str, msgspec.Raw] = {}
    for key, value in members.items():
        canonical = keys.get(key.lower())
        if canonical is not None and (canonical not in found or key == canonical):
            found[canonical] = value
    return found


def _node(raw: msgspec.Raw, index: int) -> NodeItem:
    field = f"Nodes.items[{index}]"
    head = _decode(
        _HEAD, raw, field, "a Node is an object whose metadata.labels map strings to strings"
    )
    if not head.metadata.name:
        raise _bad("a Node without metadata.name", field)
    return NodeItem(head.metadata.name, dict(head.metadata.labels or {}), bytes(raw))


def _is_null(raw: msgspec.Raw) -> bool:
    return bytes(raw).strip() == b"null"


_ARG_KEYS = {"pod": "Pod", "nodes": "Nodes", "nodenames": "NodeNames"}


def decode_args(body: bytes) -> ExtenderArgs:
    """Decode an `ExtenderArgs` body; InputError (HTTP 400) if it is not one."""
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _bad(f"body is not UTF-8: {e.reason} at byte {e.start}") from None
    found = _canonical(_decode(_MEMBERS, body, "", "expected a JSON object"), _ARG_KEYS)
    pod_raw = found.get("Pod")
    pod = None if pod_raw is None else _python_decode(bytes(pod_raw).decode(), "Pod")
    if not isinstance(pod, dict):
        raise _bad("Pod must be a Pod object", "Pod")
    names_raw = found.get("NodeNames")
    if names_raw is not None and not _is_null(names_raw):
        names = _decode(_NAMES, names_raw, "NodeNames", "NodeNames must be an array of strings")
        return ExtenderArgs(pod=pod, node_names=names)
    nodes_raw = found.get("Nodes")
    if nodes_raw is None or _is_null(nodes_raw):
        raise _bad("neither NodeNames nor Nodes given", "NodeNames")
    nodelist = _canonical(
        _decode(_MEMBERS, nodes_raw, "Nodes", "Nodes must be a NodeList object"), {"items": "items"}
    )
    items_raw = nodelist.get("items")
    items = (
        []
        if items_raw is None
        else _decode(_ITEMS, items_raw, "Nodes.items", "items must be an array") or []
    )
    return ExtenderArgs(pod=pod, nodes=[_node(raw, i) for i, raw in enumerate(items)])


_BIND_KEYS = {
    "podname": "PodName",
    "podnamespace": "PodNamespace",
    "poduid": "PodUID",
    "node": "Node",
}


def decode_binding(body: bytes) -> BindingArgs:
    """Decode an `ExtenderBindingArgs` body; InputError (HTTP 400) if it is not one."""
    obj = "ExtenderBindingArgs"
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _bad(f"body is not UTF-8: {e.reason} at byte {e.start}", obj=obj) from None
    doc = _python_decode(text, obj=obj)
    if not isinstance(doc, dict):
        raise _bad("expected a JSON object", obj=obj)
    fields: dict[str, str] = {}
    for key, value in doc.items():
        canonical = _BIND_KEYS.get(key.lower())
        if canonical is None or (canonical in fields and key != canonical):
            continue
        if value is not None and not isinstance(value, str):
            raise _bad("must be a string", field=canonical, obj=obj)
        fields[canonical] = value or ""
    for required in ("PodName", "PodNamespace", "Node"):
        if not fields.get(required):
            raise _bad("required", field=required, obj=obj)
    return BindingArgs(
        pod_name=fields["PodName"],
        pod_namespace=fields["PodNamespace"],
        pod_uid=fields.get("PodUID", ""),
        node=fields["Node"],
    )


_SAFE = bytes(c for c in range(0x20, 0x7F) if c not in b'"\\')
"""ASCII characters JSON writes as they are (node names never need anything else)."""


def _plain(names: Iterable[str]) -> bool:
    """True if no name needs escaping in JSON: then names can be joined without `json.dumps`."""
    try:
        raw = "".join(names).encode("ascii")
    except UnicodeEncodeError:
        return False
    return not raw.translate(None, _SAFE)


def _names_json(names: Sequence[str]) -> str:
    if not names:
        return "[]"
    if not _plain(names):
        return json.dumps(list(names), separators=_COMPACT)
    return '["' + '","'.join(names) + '"]'


def _failures_json(failed: dict[str, str]) -> str:
    """node -> reason as JSON. Thousands of nodes share a handful of reasons: each reason is
    encoded once and each group joined in one go, ten times faster than `json.dumps` here."""
    if not failed:
        return "{}"
    if not _plain(failed):
        return json.dumps(failed, separators=_COMPACT)
    reasons = set(failed.values())
    groups: dict[str, Iterable[str]] = {}
    if len(reasons) == 1:
        groups[reasons.pop()] = failed
    else:
        lists: dict[str, list[str]] = {}
        for name, reason in failed.items():
            group = lists.get(reason)
            if group is None:
                lists[reason] = [name]
            else:
                group.append(name)
        groups.update(lists)
    parts = []
    for reason, names in groups.items():
        text = json.dumps(reason)
        parts.append('"' + f'":{text},"'.join(names) + f'":{text}')
    return "{" + ",".join(parts) + "}"


def _tail(result: FilterResult, error: str = "") -> str:
    return (
        f'"FailedNodes":{_failures_json(result.failed)},'
        f'"FailedAndUnresolvableNodes":{_failures_json(result.unresolvable)},'
        f'"Error":{json.dumps(error)}}}'
    )


def encode_filter(args: ExtenderArgs, result: FilterResult) -> bytes:
    """An `ExtenderFilterResult` in the mode of the request: names back for names, the accepted
    Node objects (their original text) back for a NodeList."""
    if args.nodes is None:
        names = _names_json(result.passed)
        return f'{{"Nodes":null,"NodeNames":{names},{_tail(result)}'.encode()
    by_name: dict[str, NodeItem] = {}
    for item in args.nodes:
        by_name.setdefault(item.name, item)
    tail = f']}},"NodeNames":null,{_tail(result)}'.encode()
    head = b'{"Nodes":{"metadata":{},"items":['
    return b"".join([head, b",".join(by_name[n].raw for n in result.passed), tail])


def encode_error(message: str) -> bytes:
    """An `ExtenderFilterResult` carrying only `Error` (also what prioritize and bind answer)."""
    return json.dumps(
        {
            "Nodes": None,
            "NodeNames": None,
            "FailedNodes": {},
            "FailedAndUnresolvableNodes": {},
            "Error": message,
        },
        separators=_COMPACT,
    ).encode()


def encode_priorities(scores: Sequence[HostScore]) -> bytes:
    return json.dumps(
        [{"Host": s.host, "Score": s.score} for s in scores], separators=_COMPACT
    ).encode()


def encode_bind_result(error: str = "") -> bytes:
    return json.dumps({"Error": error}, separators=_COMPACT).encode()
