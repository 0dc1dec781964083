"""Node affinity as kube-scheduler matches it: `Gt` and `Lt` read both sides with Go's ParseInt."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from placer.model.scheduling import NodeSelectorRequirement, go_int, matches_requirement


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("0", 0),
        ("007", 7),
        ("+5", 5),
        ("-5", -5),
        ("9223372036854775807", 2**63 - 1),
        ("-9223372036854775808", -(2**63)),
        ("9223372036854775808", None),
        ("1_000", None),
        ("1.5", None),
        (" 5", None),
        ("", None),
        ("\u0663", None),  # an Arabic-Indic three: a digit to Python, not to Go
    ],
)
def test_go_int_reads_what_strconv_parseint_reads(text: str, number: int | None) -> None:
    assert go_int(text) == number


@given(st.integers(-(2**63), 2**63 - 1))
def test_every_int64_reads_back(number: int) -> None:
    assert go_int(str(number)) == number


def gt(value: str) -> NodeSelectorRequirement:
    return NodeSelectorRequirement(key="gen", operator="Gt", values=(value,))


def test_gt_compares_integers_not_text() -> None:
    assert matches_requirement({"gen": "10"}, gt("9"))
    assert not matches_requirement({"gen": "9"}, gt("10"))
    assert matches_requirement(
        {"gen": "010"}, NodeSelectorRequirement(key="gen", operator="Lt", values=("11",))
    )


@pytest.mark.parametrize(
    ("label", "value"), [("1_000", "1"), ("5", "1_000"), ("5", "x"), ("x", "1")]
)
def test_a_side_that_is_no_go_integer_matches_no_node(label: str, value: str) -> None:
    assert not matches_requirement({"gen": label}, gt(value))
    assert not matches_requirement(
        {"gen": label}, NodeSelectorRequirement(key="gen", operator="Lt", values=(value,))
    )


def test_a_missing_label_matches_neither_gt_nor_lt() -> None:
    assert not matches_requirement({}, gt("-1"))
    assert not matches_requirement(
        {}, NodeSelectorRequirement(key="gen", operator="Lt", values=("1",))
    )
