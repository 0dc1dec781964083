"""The kube-scheduler extender wire format (`k8s.io/kube-scheduler/extender/v1`), read and written.

Those Go types carry no json tags, so the JSON keys are the Go field names:
`ExtenderArgs{Pod, Nodes, NodeNames}`,
`ExtenderFilterResult{Nodes, NodeNames, FailedNodes, FailedAndUnresolvableNodes, Error}`,
`HostPriorityList [{Host, Score}]`, `ExtenderBindingArgs{PodName, PodNamespace, PodUID, Node}`,
`ExtenderBindingResult{Error}`. Like Go's decoder, keys match exactly first, then ignoring case.
The embedded Pod and NodeList are ordinary API objects with their usual lower-case keys.

Why a hand-made walker for the full-NodeList case: a scheduler that is not node-cache capable sends
every candidate Node in full (about 9 KB each with images and conditions) and expects the accepted
ones back as full objects. Decoding 1,000 of them with `json.loads` and encoding them again takes
several hundred milliseconds, past the scheduler's patience. The walker parses the envelope, the Pod
and each Node's name and labels exactly, remembers where each Node's text starts and ends, and the
response copies the accepted Nodes' original text. Any item that does not look like the compact
output of Go's encoder (metadata first, name first in it, items separated by `,`) is decoded in
full instead, so odd input is slower, never misread.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any

from placer.model.errors import InputError
from placer.model.limits import MAX_NESTING_DEPTH
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

_DECODER = json.JSONDecoder()
_WS = re.compile(r"[ \t\n\r]*")
_WS_CHARS = frozenset(" \t\n\r")
_ITEM_HEAD = '{"metadata":{"name":"'
_ITEM_SEP = ',{"metadata":'
_LABELS = '"labels":'
_COMPACT = (",", ":")


@dataclass(frozen=True, slots=True)
class NodeItem:
    """One Node of a full NodeList request: what decisions need, and where its text lies."""

    name: str
    labels: dict[str, str]
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class ExtenderArgs:
    """A decoded filter/prioritize request: `node_names` in node-cache mode, else `nodes`."""

    pod: dict[str, Any]
    node_names: list[str] | None = None
    nodes: list[NodeItem] | None = None
    text: str = ""
    """The request body, for copying accepted Nodes back verbatim."""
    raw: bytes = b""

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


def _skip(s: str, i: int) -> int:
    if s[i : i + 1] not in _WS_CHARS:  # the common case: Go writes no whitespace
        return i
    m = _WS.match(s, i)
    return m.end() if m else i


def _value(s: str, i: int, field: str) -> tuple[Any, int]:
    try:
        return _DECODER.raw_decode(s, i)
    except RecursionError as e:  # the C decoder's own guard, near 1,000 levels
        raise _bad(_TOO_DEEP, field) from e
    except json.JSONDecodeError as e:
        raise _bad(f"malformed JSON: {e.msg} at line {e.lineno} column {e.colno}", field) from e


_TOO_DEEP = f"nested deeper than {MAX_NESTING_DEPTH} levels"
"""Said when the C decoder's recursion guard trips (near 1,000 levels). Shallower nesting is
harmless here: decisions read only the Pod's metadata and walk nothing recursively, so the Pod is
not measured (that walk cost half a millisecond per request)."""


def _walk_object(s: str, i: int, field: str, handle: Any) -> int:
    """Walk the object at `s[i]`, calling `handle(key, value_start) -> value_end` per member."""
    i = _skip(s, i)
    if not s.startswith("{", i):
        raise _bad(f"expected a JSON object at offset {i}", field)
    i = _skip(s, i + 1)
    if s.startswith("}", i):
        return i + 1
    while True:
        if not s.startswith('"', i):
            raise _bad(f"malformed JSON: expected a key at offset {i}", field)
        try:
            key, i = scanstring(s, i + 1)
        except json.JSONDecodeError as e:
            raise _bad(f"malformed JSON: {e.msg} at offset {e.pos}", field) from e
        i = _skip(s, i)
        if not s.startswith(":", i):
            raise _bad(f"malformed JSON: expected ':' at offset {i}", field)
        i = handle(key, _skip(s, i + 1))
        i = _skip(s, i)
        if s.startswith(",", i):
            i = _skip(s, i + 1)
            continue
        if s.startswith("}", i):
            return i + 1
        raise _bad(f"malformed JSON: expected ',' or '}}' at offset {i}", field)


def _full_item(s: str, p: int, index: int) -> tuple[NodeItem, int]:
    field = f"Nodes.items[{index}]"
    obj, end = _value(s, p, field)
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    name = meta.get("name") if isinstance(meta, dict) else None
    if not isinstance(name, str) or not name:
        raise _bad("a Node without metadata.name", field)
    labels = meta.get("labels") if isinstance(meta, dict) else None
    return NodeItem(name, _labels(labels, field), p, end), end


def _labels(labels: object, field: str) -> dict[str, str]:
    if labels is None:
        return {}
    if not isinstance(labels, dict) or not set(map(type, labels.values())) <= {str}:
        raise _bad("metadata.labels must map strings to strings", field)
    return labels


def _fast_item(s: str, p: int, index: int) -> tuple[NodeItem, int] | None:
    """A Node in Go's compact shape, found without decoding it whole; None if unsure."""
    if not s.startswith(_ITEM_HEAD, p):
        return None
    end = s.find(_ITEM_SEP, p + 1)
    if end == -1 or s[end - 1] != "}":
        return None
    # `,{"metadata":` cannot occur inside a JSON string (its quotes would be escaped), and a
    # v1.Node has no nested object starting with metadata, so for the scheduler's Nodes the first
    # separator ends the item. For other senders: if it sat in a nested array, the item's own
    # brace would still be open in the slice and the count refuses (braces inside strings could
    # only hide that if they were unbalanced exactly as much: not a case worth a full decode).
    if s.count("{", p, end) != s.count("}", p, end):
        return None
    field = f"Nodes.items[{index}]"
    try:
        name, _ = scanstring(s, p + len(_ITEM_HEAD))
    except json.JSONDecodeError:
        return None
    labels: object = None
    at = s.find(_LABELS, p, end)
    if at != -1:
        labels, _ = _value(s, _skip(s, at + len(_LABELS)), field)
    if not name:
        raise _bad("a Node without metadata.name", field)
    return NodeItem(name, _labels(labels, field), p, end), end


def _walk_items(s: str, i: int) -> tuple[list[NodeItem], int]:
    if s.startswith("null", i):
        return [], i + 4
    if not s.startswith("[", i):
        raise _bad("items must be an array", "Nodes.items")
    items: list[NodeItem] = []
    i = _skip(s, i + 1)
    if s.startswith("]", i):
        return items, i + 1
    while True:
        found = _fast_item(s, i, len(items)) or _full_item(s, i, len(items))
        items.append(found[0])
        i = _skip(s, found[1])
        if s.startswith(",", i):
            i = _skip(s, i + 1)
            continue
        if s.startswith("]", i):
            return items, i + 1
        raise _bad(f"malformed JSON: expected ',' or ']' at offset {i}", "Nodes.items")


_ARG_KEYS = {"pod": "Pod", "nodes": "Nodes", "nodenames": "NodeNames"}


def decode_args(body: bytes) -> ExtenderArgs:
    """Decode an `ExtenderArgs` body; InputError (HTTP 400) if it is not one."""
    try:
        s = body.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _bad(f"body is not UTF-8: {e.reason} at byte {e.start}") from e
    found: dict[str, Any] = {}

    def nodelist(key: str, i: int) -> int:
        if key.lower() == "items":
            items, end = _walk_items(s, i)
            found["items"] = items
            return end
        return _value(s, i, f"Nodes.{key}")[1]

    def member(key: str, i: int) -> int:
        canonical = _ARG_KEYS.get(key.lower())
        if canonical == "Nodes" and not s.startswith("null", i):
            found["Nodes"] = True
            return _walk_object(s, i, "Nodes", nodelist)
        value, end = _value(s, i, canonical or key)
        if canonical is not None and (canonical not in found or key == canonical):
            found[canonical] = value
        return end

    end = _walk_object(s, 0, "", member)
    if _skip(s, end) != len(s):
        raise _bad(f"malformed JSON: extra data at offset {_skip(s, end)}")
    pod = found.get("Pod")
    if not isinstance(pod, dict):
        raise _bad("Pod must be a Pod object", "Pod")
    names = found.get("NodeNames")
    if names is not None:
        if not isinstance(names, list) or not set(map(type, names)) <= {str}:
            raise _bad("NodeNames must be an array of strings", "NodeNames")
        return ExtenderArgs(pod=pod, node_names=names)
    if found.get("Nodes") is True:
        return ExtenderArgs(pod=pod, nodes=found.get("items", []), text=s, raw=body)
    raise _bad("neither NodeNames nor Nodes given", "NodeNames")


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
        doc = json.loads(body)
    except RecursionError as e:
        raise _bad(_TOO_DEEP, obj=obj) from e
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise _bad(f"malformed JSON: {e}", obj=obj) from e
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
    spans = [by_name[n] for n in result.passed]
    tail = f']}},"NodeNames":null,{_tail(result)}'.encode()
    head = b'{"Nodes":{"metadata":{},"items":['
    if args.raw.isascii():  # byte offsets equal character offsets: copy bytes, skip re-encoding
        raw = memoryview(args.raw)
        return b"".join([head, b",".join(raw[i.start : i.end] for i in spans), tail])
    text = args.text
    return b"".join([head, ",".join(text[i.start : i.end] for i in spans).encode(), tail])


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
