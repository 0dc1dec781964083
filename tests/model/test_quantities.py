"""The one quantity parser (issue 22, item 2): Kubernetes' grammar, finite, within int64, and
nothing but a quantity or an InputError whatever it is given."""

from __future__ import annotations

import math
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from placer.model.errors import InputError
from placer.model.pod_requests import pod_request
from placer.model.resources import (
    MAX_QUANTITY,
    is_extended_resource,
    parse_resource_map,
)

SHAPE = (
    "a number with an optional suffix (Ki .. Ei, n, u, m, k, M .. E, or e<exponent>), such as "
    "500m, 4 or 16Gi"
)


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
        "\t1", "1\n", "\u20281", "", "1Ki5", "1.2.3", "0x10", "1ki", "e3", "1e", "--1", True,
        [1], {"a": 1}, 10**30, "9" * 5000, "1e99999",
    ],
)  # fmt: skip
def test_what_is_no_quantity(bad: object) -> None:
    with pytest.raises(InputError) as refused:
        parse_resource_map({"cpu": bad}, source="f.yaml", obj="ns/x", field="requests")
    assert str(refused.value).startswith("f.yaml: ns/x: requests.cpu: ")
    assert len(str(refused.value)) < 400


@pytest.mark.parametrize("text", [" 1", "1 ", "  1  ", "\u00a01", "1\u3000"])
def test_spaces_around_a_quantity_are_trimmed_as_the_api_server_trims_them(text: str) -> None:
    """`Quantity.UnmarshalJSON` trims with Go's `strings.TrimSpace` the JSON text between the
    quotes: spaces, and Unicode spaces a JSON encoder writes as they are (kubectl's writes NBSP
    raw); tabs and newlines arrive escaped and are refused above (tests/cluster asks the server)."""
    assert parse_resource_map({"cpu": text}) == {"cpu": Decimal(1)}


def test_a_null_quantity_is_zero_as_the_api_server_reads_it() -> None:
    """`Quantity.UnmarshalJSON` reads JSON null as zero; the real API server accepts `cpu: null`
    (tests/cluster/test_resource_rules.py sends it as raw JSON)."""
    assert parse_resource_map({"cpu": None, "memory": "1Gi"}) == {"cpu": 0, "memory": 2**30}


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


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1E3", Decimal(1000)),  # the exponent's E is either case, as in the Go parser
        ("2E-3", Decimal("0.002")),
        ("1Ei", Decimal(2**60)),
        ("7Ei", Decimal(7 * 2**60)),
        ("0e50", Decimal(0)),  # zero times any power of ten is zero
        ("0" * 99 + "1", Decimal(1)),  # 100 characters
        ("9223372036854775807", MAX_QUANTITY),
        (2.5e-7, Decimal("2.5e-7")),  # a JSON float reads as the text it was written as
        (1e-12, Decimal("1e-9")),
        ("1e-9999999", Decimal("1e-9")),  # finer than 1n, however much finer, is 1n
    ],
)
def test_more_kubernetes_spellings(text: str | float, value: Decimal) -> None:
    assert parse_resource_map({"memory": text}) == {"memory": value}


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (".", "invalid quantity '.': must be " + SHAPE),
        ("+.", "invalid quantity '+.': must be " + SHAPE),
        ("1K", "invalid quantity '1K': must be " + SHAPE),
        ("0" * 100 + "1", "invalid quantity '" + "0" * 80 + "'... (101 characters): longer than "
         "100 characters"),
        ("1e9999999999", "invalid quantity '1e9999999999': must be at most 9223372036854775807"),
        ("8Ei", "must be at most 9223372036854775807, got '8Ei'"),
        ("9223372036854775808", "must be at most 9223372036854775807, got '9223372036854775808'"),
        (2**64, "invalid quantity 18446744073709551616: must be at most 9223372036854775807"),
        (math.inf, "invalid quantity inf: must be a finite number"),
        ("-1m", "must be greater than or equal to 0, got '-1m'"),
    ],
)  # fmt: skip
def test_what_is_no_quantity_says_why(bad: object, message: str) -> None:
    with pytest.raises(InputError) as refused:
        parse_resource_map({"cpu": bad}, source="f.yaml", obj="ns/x", field="requests")
    e = refused.value
    assert (e.field, e.code, e.message) == ("requests.cpu", "quantity", message)


@pytest.mark.parametrize("name", ["bad name", "-cpu", "a/b/c", "Example.com/gpu"])
def test_resource_names_are_qualified_names(name: str) -> None:
    with pytest.raises(InputError) as refused:
        parse_resource_map({name: "1"}, source="f.yaml", obj="ns/x", field="requests")
    assert refused.value.field == f"requests[{name}]"
    assert refused.value.message.startswith(f"resource name {name!r} ")


@pytest.mark.parametrize(
    ("name", "extended"),
    [
        ("cpu", False),
        ("nvidia.com/gpu", True),
        ("google.com/tpu", True),
        ("kubernetes.io/batteries", False),
        ("example.kubernetes.io/foo", False),
        ("requests.nvidia.com/gpu", False),  # a quota name, not a resource
        ("examplekubernetes.io/foo", False),  # upstream: contains "kubernetes.io/", so native
    ],
)
def test_extended_resources(name: str, extended: bool) -> None:
    """Kubernetes' IsExtendedResourceName: prefixed, outside *kubernetes.io/, no `requests.`."""
    assert is_extended_resource(name) is extended


def _pod(requests: dict[str, object], limits: dict[str, object]) -> dict[str, object]:
    return {"containers": [{"resources": {"requests": requests, "limits": limits}}]}


@pytest.mark.parametrize(
    ("requests", "limits", "field", "message"),
    [
        pytest.param(
            {"nvidia.com/gpu": "1"}, {"nvidia.com/gpu": "2"}, "nvidia.com/gpu",
            "must equal the limit 2 (extended resources are not overcommitted)", id="extended",
        ),
        pytest.param(
            {"cpu": "2"}, {"cpu": "1"}, "cpu",
            "must be less than or equal to the limit 1", id="over-the-limit",
        ),
        pytest.param(
            {"nvidia.com/gpu": "1"}, {}, "nvidia.com/gpu",
            "needs a limit equal to it (extended resources are not overcommitted)",
            id="extended-without-limit",
        ),
        pytest.param(
            {"hugepages-2Mi": "2Mi", "memory": "1Gi"}, {"hugepages-2Mi": "4Mi"}, "hugepages-2Mi",
            "must equal the limit 4194304 (hugepages are not overcommitted)", id="hugepages",
        ),
        pytest.param(
            {"nvidia.com/gpu": "500m"}, {}, "nvidia.com/gpu",
            "must be a whole number (an extended resource), got '500m'", id="fraction",
        ),
    ],
)  # fmt: skip
def test_requests_against_limits(
    requests: dict[str, object], limits: dict[str, object], field: str, message: str
) -> None:
    with pytest.raises(InputError) as refused:
        pod_request(_pod(requests, limits), source="f.yaml", obj="ns/x")
    e = refused.value
    assert (e.field, e.message) == (f"spec.containers[0].resources.requests.{field}", message)


def test_requests_within_limits() -> None:
    pod = _pod({"cpu": "1", "nvidia.com/gpu": "2"}, {"cpu": "2", "nvidia.com/gpu": "2"})
    assert pod_request(pod) == {"cpu": Decimal(1), "nvidia.com/gpu": Decimal(2)}


@pytest.mark.parametrize("key", ["containers", "initContainers"])
def test_container_lists_must_be_lists(key: str) -> None:
    with pytest.raises(InputError) as refused:
        pod_request({key: {"name": "c"}}, source="f.yaml", obj="ns/x")
    e = refused.value
    assert (e.field, e.message) == (f"spec.{key}", f"{key} must be a list")


def test_a_prefixed_native_resource_may_be_a_fraction() -> None:
    """The API server takes `examplekubernetes.io/foo: 500m` (native: no whole-number rule, and a
    request below its limit); placer refused it as an extended resource until this was fixed.
    kube-scheduler counts it in whole units (`Value`), as placer does."""
    pod = _pod({"examplekubernetes.io/foo": "500m"}, {"examplekubernetes.io/foo": "1"})
    assert pod_request(pod) == {"examplekubernetes.io/foo": Decimal(1)}
