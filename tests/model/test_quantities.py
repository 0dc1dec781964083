"""The one quantity parser (issue 22, item 2): Kubernetes' grammar, finite, within int64, and
nothing but a quantity or an InputError whatever it is given."""

from __future__ import annotations

import math
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from placer.model.errors import InputError
from placer.model.resources import MAX_QUANTITY, parse_resource_map


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("500m", Decimal("0.5")),
        ("16Gi", Decimal(16 * 2**30)),
        ("1.5Ki", Decimal(1536)),
        ("1e3", Decimal(1000)),
        ("2E", Decimal(2 * 10**18)),
        (".5", Decimal("0.5")),
        ("5.", Decimal(5)),
        ("+4", Decimal(4)),
        ("100n", Decimal("1e-7")),
        ("1e-12", Decimal("1e-9")),  # finer than 1n rounds up to 1n, as the API server does
        (0.1, Decimal("0.1")),  # a YAML/JSON number reads as the text it was written as
        (7, Decimal(7)),
    ],
)
def test_kubernetes_spellings(text: str | float, value: Decimal) -> None:
    assert parse_resource_map({"cpu": text}) == {"cpu": value}


@pytest.mark.parametrize(
    "bad",
    [
        "NaN", "nan", "Infinity", "inf", math.nan, math.inf, -math.inf, "١٢", "\uff14", "1_000",
        " 1", "1 ", "", "1Ki5", "1.2.3", "0x10", "1ki", "e3", "1e", "--1", True, None, [1],
        {"a": 1}, 10**30, "9" * 5000, "1e99999",
    ],
)  # fmt: skip
def test_what_is_no_quantity(bad: object) -> None:
    with pytest.raises(InputError) as refused:
        parse_resource_map({"cpu": bad}, source="f.yaml", obj="ns/x", field="requests")
    assert str(refused.value).startswith("f.yaml: ns/x: requests.cpu: ")
    assert len(str(refused.value)) < 400


@given(st.integers(0, int(MAX_QUANTITY)))
def test_every_int64_reads_back(n: int) -> None:
    assert parse_resource_map({"cpu": str(n)}) == {"cpu": Decimal(n)}


@given(
    st.one_of(
        st.text(max_size=30),
        st.text(alphabet="0123456789.eE+-KMGTPEimnuk ", max_size=12),
        st.floats(),
        st.integers(),
        st.booleans(),
        st.none(),
    )
)
def test_anything_is_a_quantity_or_one_input_error(value: object) -> None:
    try:
        got = parse_resource_map({"memory": value})
    except InputError as e:
        assert "\n" not in str(e)
        return
    quantity = got["memory"]
    assert quantity.is_finite() and Decimal(0) <= quantity <= MAX_QUANTITY
