"""Names, label keys and label values by the API server's rules, one rule at a time: the cases
are those of Kubernetes' own tests (`k8s.io/apimachinery/pkg/util/validation`), so a name placer
accepts is one the API server accepts, and a name it refuses is one the API server refuses."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from placer.model.errors import InputError
from placer.model.read.names import (
    check,
    check_label_map,
    check_levels,
    check_qualified_keys,
    check_taints,
    dns1123_label_problem,
    dns1123_subdomain_problem,
    label_value_problem,
    qualified_name_problem,
)

LABEL = (
    "must be a DNS-1123 label: lower-case letters, digits and '-', starting and ending with a "
    "letter or digit"
)
SUBDOMAIN = (
    "must be a DNS-1123 subdomain: lower-case letters, digits, '-' and '.', each '.'-separated "
    "part starting and ending with a letter or digit"
)
QUALIFIED = (
    "must be a qualified name: an optional DNS-1123 subdomain and '/', then letters, digits, "
    "'-', '_' and '.', starting and ending with a letter or digit"
)
VALUE = (
    "must be a label value: empty, or letters, digits, '-', '_' and '.', starting and ending "
    "with a letter or digit"
)


@pytest.mark.parametrize(
    "text", ["a", "ab", "abc", "a1", "a-1", "a--1--2--b", "0", "01", "1-2", "a" * 63]
)
def test_dns1123_labels_accepted(text: str) -> None:
    assert dns1123_label_problem(text) == ""


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "must not be empty"),
        *((bad, LABEL) for bad in ["A", "aBc", "a-1-B", "-", "a-", "-a", "1-", "-1", "_", "a_b"]),
        *((bad, LABEL) for bad in [".", "a.", ".a", "a.b", "1.2", " ", "a b", "a\n"]),
        ("a" * 64, "must be at most 63 characters, got 64"),
    ],
)
def test_dns1123_labels_refused(text: str, problem: str) -> None:
    assert dns1123_label_problem(text) == problem


@pytest.mark.parametrize(
    "text", ["a", "ab", "a.a", "a-1.b-2", "0.a", "11.22.33.44.55", "a--b.c--d", "a" * 253]
)
def test_dns1123_subdomains_accepted(text: str) -> None:
    assert dns1123_subdomain_problem(text) == ""


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "must not be empty"),
        *((bad, SUBDOMAIN) for bad in ["A", "a.B", "-", "-a", "a-", "a.-b", "a-.b", "a.b-"]),
        *((bad, SUBDOMAIN) for bad in ["_", "a_b", ".", "a.", ".a", "a..b", "a@b", "a/b"]),
        *((bad, SUBDOMAIN) for bad in ["a.b..c", "a.b-.c", "a.b.-c", "a.b.c."]),
        ("a" * 254, "must be at most 253 characters, got 254"),
    ],
)
def test_dns1123_subdomains_refused(text: str, problem: str) -> None:
    assert dns1123_subdomain_problem(text) == problem


@pytest.mark.parametrize(
    "text",
    [
        "simple",
        "now-with-dashes",
        "1-starts-with-num",
        "1234",
        "simple/simple",
        "now-with-dashes/simple",
        "now.with.dots/simple",
        "1-num.2-num/3-num",
        "1.2.3.4/5678",
        "Uppercase_Is_OK_123",
        "example.com/Uppercase_Is_OK_123",
        "requests.storage-foo",
        "a.b_c-d",
        "a" * 63,
        "a" * 253 + "/" + "b" * 63,
    ],
)
def test_qualified_names_accepted(text: str) -> None:
    assert qualified_name_problem(text) == ""


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "must not be empty"),
        ("/simple", "has an empty prefix before '/'"),
        ("example.com/", "has an empty name after '/'"),
        ("only/one/slash", "may contain at most one '/'"),
        ("Example.com/abc", f"prefix {SUBDOMAIN}"),
        ("example_com/abc", f"prefix {SUBDOMAIN}"),
        ("a" * 254 + "/abc", "prefix must be at most 253 characters, got 254"),
        ("a" * 64, "name part must be at most 63 characters, got 64"),
        ("example.com/" + "a" * 64, "name part must be at most 63 characters, got 64"),
        *((bad, QUALIFIED) for bad in ["nospecialchars%^=@", "cantendwithadash-", "-cantstart"]),
        *((bad, QUALIFIED) for bad in ["_a", "a_", ".a", "a.", "a b", "x/-a", "x/a."]),
    ],
)
def test_qualified_names_refused(text: str, problem: str) -> None:
    assert qualified_name_problem(text) == problem


@pytest.mark.parametrize(
    "text",
    ["", "simple", "now-with-dashes", "1-starts-with-num", "1234", "A_b.C-9", "A" * 63],
)
def test_label_values_accepted(text: str) -> None:
    assert label_value_problem(text) == ""


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        *((bad, VALUE) for bad in ["nospecialchars%^=@", "Tama-nui-te-r\u0101", "a\\b", "a/b"]),
        *((bad, VALUE) for bad in ["-dash", "dash-", ".dot", "dot.", "_us", "us_", " a"]),
        ("a" * 64, "must be at most 63 characters, got 64"),
    ],
)
def test_label_values_refused(text: str, problem: str) -> None:
    assert label_value_problem(text) == problem


def test_check_names_file_object_field_and_echoes_the_value() -> None:
    """The one line says where, and quotes the value cut and escaped (it came from input)."""
    with pytest.raises(InputError) as refused:
        check(dns1123_label_problem, "B\x1b", source="f.yaml", obj="ns/x", field="spec.name")
    e = refused.value
    assert (e.source, e.obj, e.field, e.code) == ("f.yaml", "ns/x", "spec.name", "name")
    assert e.message == f"'B\\x1b' {LABEL}"
    with pytest.raises(InputError) as long:
        check(dns1123_label_problem, "a" * 300, what="namespace")
    assert long.value.message == (
        f"namespace '{'a' * 80}'... (300 characters) must be at most 63 characters, got 300"
    )


@pytest.mark.parametrize("value", [5, None, ["a"], b"a"])
def test_check_refuses_what_is_not_a_string(value: object) -> None:
    """A YAML `name: 5` is no name, even though no rule could be asked about it."""
    with pytest.raises(InputError) as refused:
        check(label_value_problem, value, field="metadata.name")
    assert refused.value.message == f"{value!r} must be a string"


def test_check_returns_what_it_accepts() -> None:
    assert check(dns1123_subdomain_problem, "a.b") == "a.b"


def test_qualified_keys_name_the_bad_key() -> None:
    check_qualified_keys(["a", "example.com/b"], field="metadata.annotations")
    with pytest.raises(InputError) as refused:
        check_qualified_keys(["a", "bad key"], obj="ns/x", field="metadata.annotations")
    assert refused.value.field == "metadata.annotations[bad key]"
    assert refused.value.message == f"key 'bad key' {QUALIFIED}"
    with pytest.raises(InputError) as number:
        check_qualified_keys([7], field="metadata.annotations")
    assert (number.value.field, number.value.message) == (
        "metadata.annotations[7]",
        "key 7 must be a string",
    )


@pytest.mark.parametrize(
    ("labels", "field", "message"),
    [
        pytest.param({"ok": "v", "-k": "v"}, "labels[-k]", f"key '-k' {QUALIFIED}", id="key"),
        pytest.param({1: "v"}, "labels[1]", "key 1 must be a string", id="key-not-a-string"),
        pytest.param({"k": 5}, "labels[k]", "5 must be a string", id="value-not-a-string"),
        pytest.param({"k": "a/b"}, "labels[k]", f"'a/b' {VALUE}", id="value-with-slash"),
        pytest.param(
            {"k" * 300: "v"},
            f"labels[{'k' * 80}... (300 characters)]",
            f"key '{'k' * 80}'... (300 characters) name part must be at most 63 characters, "
            "got 300",
            id="long-key-cut-in-the-field",
        ),
    ],
)
def test_label_maps(labels: dict[object, object], field: str, message: str) -> None:
    with pytest.raises(InputError) as refused:
        check_label_map(labels, source="n.json", obj="Node/n", field="labels")
    assert (refused.value.field, refused.value.message) == (field, message)


def test_label_maps_take_empty_values_and_prefixed_keys() -> None:
    check_label_map({"example.com/pool": "", "zone": "Z_1.a-b"}, field="labels")


@dataclass(frozen=True)
class _Taint:
    key: str
    value: str
    effect: str = "NoSchedule"


@pytest.mark.parametrize(
    ("taint", "field", "message"),
    [
        pytest.param(_Taint("bad key", "v"), "spec.taints[1].key", f"'bad key' {QUALIFIED}"),
        pytest.param(_Taint("k", "a/b"), "spec.taints[1].value", f"'a/b' {VALUE}"),
        pytest.param(_Taint("k", "v" * 64), "spec.taints[1].value", "'" + "v" * 64 + "' must "
                     "be at most 63 characters, got 64"),
    ],
)  # fmt: skip
def test_taints(taint: _Taint, field: str, message: str) -> None:
    ok = _Taint("example.com/gpu", "")
    check_taints([ok], field="spec.taints")
    with pytest.raises(InputError) as refused:
        check_taints([ok, taint], source="n.json", obj="Node/n", field="spec.taints")
    assert (refused.value.field, refused.value.message) == (field, message)


def test_a_key_is_tainted_once_per_effect_counting_the_taints_beside() -> None:
    """The API server stores a node's taints unique by key and effect; one key may carry each
    effect once, and a description's override may not repeat its pool's taint."""
    a, b = _Taint("example.com/gpu", "x"), _Taint("example.com/gpu", "y", "NoExecute")
    check_taints([a, b], field="spec.taints")
    with pytest.raises(InputError) as refused:
        check_taints([a, b, _Taint("example.com/gpu", "z")], field="spec.taints")
    assert refused.value.field == "spec.taints[2]"
    assert "listed twice" in refused.value.message
    check_taints([b], field="nodes[0].taints", beside=[_Taint("example.com/gpu", "")])
    with pytest.raises(InputError, match="listed twice"):
        check_taints([a], field="nodes[0].taints", beside=[_Taint("example.com/gpu", "")])


def test_levels_are_qualified_names_none_twice() -> None:
    assert check_levels(["example.com/block", "rack"]) == ("example.com/block", "rack")
    with pytest.raises(InputError) as twice:
        check_levels(["rack", "host", "rack"], field="levels")
    assert (twice.value.field, twice.value.message) == ("levels[2]", "level 'rack' listed twice")
    with pytest.raises(InputError) as bad:
        check_levels(["rack", "a b"], field="levels")
    assert (bad.value.field, bad.value.message) == ("levels[1]", f"level 'a b' {QUALIFIED}")
