"""The extender's JSON: Go field names, the NodeList walker's fast path against a full decode."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from placer.model.errors import InputError
from plugins.extender.decide import FilterResult
from plugins.extender.wire import decode_args, decode_binding, encode_filter
from tests.extender.builders import NODES, node_object, plain_pod

GO = (",", ":")


def nodelist_body(items: list[dict[str, object]], *, separators: tuple[str, str] = GO) -> bytes:
    doc = {"Pod": plain_pod(), "Nodes": {"metadata": {}, "items": items}, "NodeNames": None}
    return json.dumps(doc, separators=separators).encode()


@pytest.mark.parametrize(
    "separators", [pytest.param(GO, id="go-compact"), pytest.param((", ", ": "), id="spaced")]
)
def test_nodelist_items_are_read_and_echoed_verbatim(separators: tuple[str, str]) -> None:
    items = [node_object(n) for n in NODES]
    args = decode_args(nodelist_body(items, separators=separators))
    assert args.names == list(NODES)
    assert args.labels is not None and args.labels["n7"] == items[6]["metadata"]["labels"]
    body = encode_filter(args, FilterResult(passed=("n2", "n9")))
    answer = json.loads(body)
    assert answer["Nodes"]["items"] == [items[1], items[8]]
    assert answer["NodeNames"] is None and answer["Error"] == ""


def test_nodes_are_read_by_structure_and_echoed_verbatim() -> None:
    body = nodelist_body([node_object("n1"), node_object("n2")])
    args = decode_args(body)
    assert args.nodes is not None
    first = args.nodes[0]
    assert (first.name, first.labels["kubernetes.io/hostname"]) == ("n1", "n1")
    assert json.loads(first.raw) == node_object("n1")


@pytest.mark.parametrize(
    "node",
    [
        pytest.param(node_object("n1", note="unbalanced { [ braces"), id="braces-in-strings"),
        pytest.param(
            {**node_object("n1"), "extra": [{"metadata": {"name": "a"}}, {"metadata": {}}]},
            id="nested-metadata-array",
        ),
        pytest.param({"spec": {}, **node_object("n1")}, id="metadata-not-first"),
    ],
)
def test_unusual_nodes_are_read_like_any_other(node: dict[str, object]) -> None:
    items = [node, node_object("n2")]
    args = decode_args(nodelist_body(items))
    assert args.names == ["n1", "n2"]
    answer = json.loads(encode_filter(args, FilterResult(passed=("n1", "n2"))))
    assert answer["Nodes"]["items"] == items


def _decoy(name: str, labels: dict[str, str]) -> dict[str, object]:
    """A Node whose own labels come after `"labels"` and `"name"` keys nested elsewhere."""
    node = node_object(name, labels)
    meta = node["metadata"]
    assert isinstance(meta, dict)
    own = meta.pop("labels")
    meta["annotations"] = {"labels": json.dumps({"pool": "other"}), "name": "decoy"}
    meta["managedFields"] = [{"fieldsV1": {"labels": {"pool": "other"}, "name": "decoy"}}]
    meta["labels"] = own
    return {"metadata": meta, "status": {"labels": {"pool": "other"}, "name": "decoy"}}


def test_nested_labels_and_names_do_not_fool_the_reader() -> None:
    labels = {"pool": "p1", "kubernetes.io/hostname": "n1"}
    plain, decoy = node_object("n1", labels), _decoy("n1", labels)
    for node in (plain, decoy):
        args = decode_args(nodelist_body([node]))
        assert args.labels == {"n1": labels}
    body = nodelist_body([plain]).replace(b'"name":"n1"', b'"name":"a","name":"n1"', 1)
    assert decode_args(body).names == ["n1"], "a duplicate key: the last counts, as in json"


@given(
    st.dictionaries(
        st.sampled_from(["pool", "labels", "name", "kubernetes.io/hostname"]),
        st.sampled_from(["p1", "p2", "labels", "name"]),
        max_size=4,
    ),
    st.sampled_from(["annotations", "managedFields", "status"]),
)
def test_the_reader_agrees_with_a_full_decode(labels: dict[str, str], decoy: str) -> None:
    node = node_object("n1", labels)
    node["metadata"][decoy] = {"labels": {"x": "y"}, "name": "z"}
    body = nodelist_body([node])
    args = decode_args(body)
    full = json.loads(body)["Nodes"]["items"][0]["metadata"]
    assert args.names == [full["name"]] and args.labels == {full["name"]: full["labels"]}


def test_non_ascii_nodes_are_echoed_intact() -> None:
    item = node_object("n1")
    item["metadata"]["annotations"]["note"] = "zürich → ☃"
    args = decode_args(
        json.dumps({"Pod": plain_pod(), "Nodes": {"items": [item]}}, ensure_ascii=False).encode()
    )
    answer = json.loads(encode_filter(args, FilterResult(passed=("n1",))))
    assert answer["Nodes"]["items"] == [item]


def test_keys_match_like_gos_decoder() -> None:
    args = decode_args(b'{"pod": {"metadata": {"name": "p"}}, "nodenames": ["a", "b"]}')
    assert args.node_names == ["a", "b"] and args.pod["metadata"]["name"] == "p"
    binding = decode_binding(b'{"podName":"p","PodNamespace":"ns","PodUID":"u","node":"n1"}')
    assert (binding.pod_name, binding.pod_namespace, binding.pod_uid, binding.node) == (
        "p",
        "ns",
        "u",
        "n1",
    )


@pytest.mark.parametrize(
    ("body", "message"),
    [
        pytest.param(b'{"Pod": {', "malformed JSON", id="truncated"),
        pytest.param(b"[]", "expected a JSON object", id="array"),
        pytest.param(b'{"NodeNames": ["a"]}', "Pod must be a Pod object", id="no-pod"),
        pytest.param(b'{"Pod": {}, "NodeNames": [1]}', "array of strings", id="bad-names"),
        pytest.param(b'{"Pod": {}}', "neither NodeNames nor Nodes", id="no-nodes"),
        pytest.param(b'{"Pod": {}, "NodeNames": []} x', "Extra data", id="trailing"),
        pytest.param(
            b'{"Pod": {}, "Nodes": {"items": [{"spec": {}}]}}', "metadata.name", id="nameless-node"
        ),
        pytest.param(b"\xff\xfe", "not UTF-8", id="binary"),
        pytest.param(
            b'{"NodeNames": [], "Pod": {"spec": ' + b"[" * 100_000 + b"]" * 100_000 + b"}}",
            r"^ExtenderArgs: Pod: nested deeper than 100 levels$",
            id="deep-pod",
        ),
        pytest.param(
            b'{"NodeNames": [], "X": ' + b"[" * 100_000 + b"]" * 100_000 + b', "Pod": {}}',
            r"^ExtenderArgs: X: nested deeper than 100 levels$",
            id="past-the-parser-guard",
        ),
        pytest.param(
            b'{"Pod": {}, "Nodes": {"items": [' + b"[" * 100_000 + b"]" * 100_000 + b"]}}",
            r"^ExtenderArgs: Nodes.items\[0\]: nested deeper than 100 levels$",
            id="deep-node",
        ),
    ],
)
def test_bad_bodies_are_input_errors(body: bytes, message: str) -> None:
    with pytest.raises(InputError, match=message):
        decode_args(body)


def test_binding_needs_pod_and_node() -> None:
    with pytest.raises(InputError, match="Node: required"):
        decode_binding(b'{"PodName": "p", "PodNamespace": "ns"}')


def test_a_deeply_nested_binding_is_an_input_error() -> None:
    with pytest.raises(
        InputError, match=r"^ExtenderBindingArgs: PodName: nested deeper than 100 levels$"
    ):
        decode_binding(b'{"PodName": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")


names = st.text(min_size=1, max_size=12)
reasons = st.sampled_from(["reserved for a/b", 'odd "reason" \\ é', "outside domain b1/s1 of j"])


@given(st.dictionaries(names, reasons, max_size=30), st.lists(names, max_size=30))
def test_filter_answer_round_trips_any_names(failed: dict[str, str], passed: list[str]) -> None:
    args = decode_args(json.dumps({"Pod": {}, "NodeNames": passed}).encode())
    answer = json.loads(
        encode_filter(args, FilterResult(passed=tuple(passed), unresolvable=failed))
    )
    assert answer["NodeNames"] == passed
    assert answer["FailedAndUnresolvableNodes"] == failed
    assert answer["FailedNodes"] == {}
