"""Flag value types: one wording for every command's ranges."""

from __future__ import annotations

import argparse
from collections.abc import Callable

import pytest

from placer.commands.flags.argtypes import PORT, label_keys, number, whole_number


@pytest.mark.parametrize(
    ("parse", "text", "message"),
    [
        pytest.param(whole_number(0), "x", "not a whole number: 'x'", id="int-text"),
        pytest.param(whole_number(0), "-1", "must be >= 0, got -1", id="int-low"),
        pytest.param(whole_number(1, 10), "11", "must be at most 10, got 11", id="int-high"),
        pytest.param(PORT, "70000", "must be at most 65535, got 70000", id="port"),
        pytest.param(number(0, above=True), "0", "must be > 0, got 0", id="float-above"),
        pytest.param(number(0), "inf", "must be a finite number, got inf", id="float-inf"),
        pytest.param(number(0, 86400), "1e9", "must be at most 86400, got 1e9", id="float-high"),
        pytest.param(label_keys, " , ", "expected node label keys", id="keys"),
    ],
)
def test_out_of_range_values_are_refused_with_one_wording(
    parse: Callable[[str], object], text: str, message: str
) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=message):
        parse(text)


def test_values_in_range_pass() -> None:
    assert whole_number(1, 10)("10") == 10
    assert number(0, above=True)("0.5") == 0.5
    assert label_keys("a, b") == ("a", "b")
