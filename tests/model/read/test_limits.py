"""The hard limits on input, at their boundaries: the numbers are the README's ("Input limits"),
written out here rather than imported, so a changed limit is a failing test and not a silent
change of what placer accepts."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from placer.model.errors import InputError
from placer.model.read.limits import (
    Int32,
    Int64,
    Port,
    check_nesting_depth,
    check_pods_per_jobset,
    check_pods_per_plan,
    nesting_depth,
)


@pytest.mark.parametrize(
    ("kind", "accepted", "refused"),
    [
        pytest.param(Int32, [-(2**31), 0, 2**31 - 1], [-(2**31) - 1, 2**31], id="int32"),
        pytest.param(Int64, [-(2**63), 2**63 - 1], [-(2**63) - 1, 2**63], id="int64"),
        pytest.param(Port, [1, 65535], [0, 65536, -1], id="port"),
    ],
)
def test_integer_bounds(kind: Any, accepted: list[int], refused: list[int]) -> None:
    adapter: TypeAdapter[int] = TypeAdapter(kind)
    for n in accepted:
        assert adapter.validate_python(n) == n
    for n in refused:
        with pytest.raises(ValidationError):
            adapter.validate_python(n)


@pytest.mark.parametrize("kind", [Int32, Int64, Port])
@pytest.mark.parametrize("value", ["5", True, 5.0])
def test_integers_are_not_coerced(kind: Any, value: object) -> None:
    """A quoted "5", a YAML `yes` or a float is no int32: the API server refuses them too."""
    with pytest.raises(ValidationError):
        TypeAdapter(kind).validate_python(value)


def _nested(depth: int, *, mapping: bool = False) -> Any:
    value: Any = {} if mapping else []
    for _ in range(depth - 1):
        value = {"a": value} if mapping else [value]
    return value


@pytest.mark.parametrize(
    ("obj", "depth"),
    [
        pytest.param(7, 0, id="scalar"),
        pytest.param([], 1, id="list"),
        pytest.param({}, 1, id="dict"),
        pytest.param((1, [2]), 2, id="tuple"),
        pytest.param({"a": [1, {"b": []}], "c": 3}, 4, id="mixed"),
        pytest.param([[], [[[]]], []], 4, id="deepest-branch"),
        pytest.param(_nested(150, mapping=True), 150, id="mappings"),
        pytest.param(_nested(150), 150, id="lists"),
    ],
)
def test_nesting_depth(obj: Any, depth: int) -> None:
    assert nesting_depth(obj) == depth


def test_nesting_is_checked_at_one_hundred_levels() -> None:
    for mapping in (False, True):
        check_nesting_depth(_nested(100, mapping=mapping), "f.json")
        with pytest.raises(InputError) as deep:
            check_nesting_depth(_nested(101, mapping=mapping), "f.json", obj_name="ns/x")
        e = deep.value
        assert (e.source, e.obj, e.code) == ("f.json", "ns/x", "nesting")
        assert e.message == "nested deeper than 100 levels"


def test_a_cycle_is_measured_once() -> None:
    """A YAML anchor aliased inside itself (`&a [*a]`) loads as a list holding itself: each
    collection is visited once, so the walk ends and says how deep the text nests."""
    cycle: list[Any] = []
    cycle.append(cycle)
    assert nesting_depth(cycle, 10) == 1
    assert nesting_depth({"a": [cycle]}, 10) == 3


@pytest.mark.parametrize(
    ("check", "most", "field", "message"),
    [
        pytest.param(
            lambda n: check_pods_per_jobset(n, source="f.yaml", obj="ns/x", field="spec"),
            100_000,
            "spec",
            "asks for 100001 pods; at most 100000 per JobSet",
            id="jobset",
        ),
        pytest.param(
            lambda n: check_pods_per_plan(n, source="f.yaml", obj="ns/x"),
            1_000_000,
            "",
            "the JobSets ask for 1000001 pods together; at most 1000000 per plan",
            id="plan",
        ),
    ],
)
def test_pods(check: Any, most: int, field: str, message: str) -> None:
    check(most)
    with pytest.raises(InputError) as refused:
        check(most + 1)
    e = refused.value
    assert (e.source, e.obj, e.field, e.code) == ("f.yaml", "ns/x", field, "too-many-pods")
    assert e.message == message
