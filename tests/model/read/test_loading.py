"""The one YAML and JSON parser, at its bounds (README, "Input limits"): numbers of at most 100
characters, no NaN or infinity in JSON, nesting of at most 100 levels in YAML whatever spells it,
and aliases adding at most 100,000 nodes, counted at the depth and the size of what they name."""

from __future__ import annotations

import pytest

from placer.model.errors import InputError
from placer.model.read.limits import nesting_depth
from placer.model.read.loading import load_json, load_yaml_documents

ALIASES = "aliases expand to more than 100000 nodes beyond the "


@pytest.mark.parametrize(
    ("text", "value"),
    [
        pytest.param("1" * 100, int("1" * 100), id="int-100-digits"),
        pytest.param("0." + "5" * 98, float("0." + "5" * 98), id="float-100-characters"),
        pytest.param("1e308", 1e308, id="large-float"),
    ],
)
def test_json_numbers_within_the_limits(text: str, value: float) -> None:
    assert load_json(f"[{text}]") == [value]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("1" * 101, "a number of 101 characters; at most 100"),
        ("0." + "5" * 99, "a number of 101 characters; at most 100"),
        ("1e400", "the number 1e400 is too large for a float"),
        ("-1e400", "the number -1e400 is too large for a float"),
        ("NaN", "NaN is not a number JSON allows"),
        ("Infinity", "Infinity is not a number JSON allows"),
        ("-Infinity", "-Infinity is not a number JSON allows"),
    ],
)
def test_json_numbers_refused(text: str, problem: str) -> None:
    with pytest.raises(InputError) as refused:
        load_json(f'{{"a": {text}}}', source="body", obj="ns/x")
    e = refused.value
    assert (e.source, e.obj, e.code) == ("body", "ns/x", "syntax")
    assert e.message == f"invalid JSON: {problem}"


def test_json_bytes() -> None:
    """Request bodies arrive as bytes: a byte-order mark is dropped, bad UTF-8 says where."""
    assert load_json(b'\xef\xbb\xbf{"a": 1}') == {"a": 1}
    with pytest.raises(InputError) as refused:
        load_json(b'{"a": "\xff"}', source="body", obj="ns/x")
    e = refused.value
    assert (e.obj, e.code) == ("ns/x", "syntax")
    assert e.message == "not UTF-8: invalid start byte at byte 7"


def test_yaml_integers_of_at_most_100_digits() -> None:
    """Both loaders (libyaml first, then the pure one) bound integers: Python refuses to convert
    past 4,300 digits with a ValueError that is no YAML error."""
    assert load_yaml_documents("a: " + "7" * 100) == [{"a": int("7" * 100)}]
    for digits in (101, 5000):
        with pytest.raises(InputError) as refused:
            load_yaml_documents("a: " + "7" * digits, source="f.yaml")
        e = refused.value
        assert (e.source, e.code) == ("f.yaml", "syntax")
        assert e.message == (
            f"invalid YAML at line 1 column 4: a number of {digits} characters; at most 100"
        )


# Each spelling of nesting on its own, 150 deep: a flow sequence, a flow mapping, a block
# sequence, a block mapping, complex keys. The quick count that skips shallow texts must count
# every one of them.
DEEP = {
    "flow-sequence": "[" * 150 + "]" * 150,
    "flow-mapping": "{" * 150 + "}" * 150,
    "block-sequence": "- " * 150 + "x",
    "block-mapping": "\n".join(" " * i + "a:" for i in range(150)) + " x",
    "complex-keys": "? " * 150 + "x",
}


@pytest.mark.parametrize("text", DEEP.values(), ids=DEEP.keys())
def test_yaml_nesting_whatever_spells_it(text: str) -> None:
    with pytest.raises(InputError) as refused:
        load_yaml_documents(text, source="f.yaml")
    e = refused.value
    assert (e.source, e.code, e.message) == ("f.yaml", "nesting", "nested deeper than 100 levels")


def test_yaml_nesting_of_exactly_100_levels_is_read() -> None:
    """(The scalar's colons make the text long enough in nesting marks to be measured.)"""
    docs = load_yaml_documents("[" * 100 + "'" + ":" * 20 + "'" + "]" * 100)
    assert nesting_depth(docs[0]) == 100
    with pytest.raises(InputError):
        load_yaml_documents("[" * 101 + "'" + ":" * 20 + "'" + "]" * 101)


def _deep_alias(used_at: int, *, through: bool = False) -> str:
    """An anchor 60 lists deep, aliased inside `used_at` lists of a mapping (directly, or through
    a second anchor that holds the alias)."""
    text = "x: &d " + "[" * 60 + "]" * 60 + "\n"
    name = "d"
    if through:
        text += "z: &e [*d]\n"
        name = "e"
    return text + "y: " + "[" * used_at + f"*{name}" + "]" * used_at + "\n"


def test_an_alias_counts_at_the_depth_it_is_used() -> None:
    """1 (the mapping) + 39 + 60 = 100 levels are read; one more list is one level too many."""
    docs = load_yaml_documents(_deep_alias(39))
    assert nesting_depth(docs[0]) == 100
    with pytest.raises(InputError) as refused:
        load_yaml_documents(_deep_alias(40), source="f.yaml")
    assert (refused.value.code, refused.value.message) == (
        "nesting",
        "nested deeper than 100 levels",
    )


def test_an_alias_inside_an_anchor_adds_its_depth() -> None:
    """`&e [*d]` is 61 deep: 1 + 38 + 61 = 100 are read, 1 + 39 + 61 are not."""
    assert nesting_depth(load_yaml_documents(_deep_alias(38, through=True))[0]) == 100
    with pytest.raises(InputError) as refused:
        load_yaml_documents(_deep_alias(39, through=True))
    assert refused.value.code == "nesting"


@pytest.mark.parametrize(
    ("text", "anchor"),
    [
        ("spec: &a [*a]\n", "a"),
        ("metadata:\n  annotations: &m {k: *m}\n", "m"),
        ("a: &outer\n  b: &inner [1, *outer]\n", "outer"),
    ],
)
def test_an_alias_inside_its_own_anchor_is_refused(text: str, anchor: str) -> None:
    """A structure that contains itself (kubectl's parser refuses it too) would reach every
    reader of the manifest as a cycle."""
    with pytest.raises(InputError) as refused:
        load_yaml_documents(text, source="f.yaml")
    assert (refused.value.code, refused.value.message) == (
        "cycle",
        f"the YAML alias *{anchor} is inside its own anchor (a cycle)",
    )


def test_an_alias_after_its_anchor_closed_is_a_copy() -> None:
    (doc,) = load_yaml_documents("a: &x [1, {b: 2}]\nc: [*x, *x]\n")
    assert doc == {"a": [1, {"b": 2}], "c": [[1, {"b": 2}], [1, {"b": 2}]]}


def _aliased(copies: int, *, one_more: bool = False) -> str:
    """An anchor of 1,000 items (1,001 nodes) aliased `copies` times: each alias adds 1,000 nodes
    beyond the one written; `one_more` adds an alias of a one-item list (one node more)."""
    text = "a: &a [" + ", ".join(["0"] * 1000) + "]\n"
    text += "b: [" + ", ".join(["*a"] * copies) + "]\n"
    if one_more:
        text += "c: &s [0]\nd: *s\n"
    return text


def test_aliases_may_add_100000_nodes() -> None:
    docs = load_yaml_documents(_aliased(100))
    assert len(docs[0]["b"]) == 100 and docs[0]["b"][0] is docs[0]["a"]
    with pytest.raises(InputError) as refused:
        load_yaml_documents(_aliased(100, one_more=True), source="bomb.yaml")
    e = refused.value
    assert (e.source, e.code) == ("bomb.yaml", "too-large")
    assert e.message.startswith(ALIASES)
