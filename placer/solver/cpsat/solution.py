"""A solution of the planner's model as typed values per variable family, not names to numbers.

Stages hand their best solution to the next stage as a hint, packing takes the admissions of the
admission stages, and materialization reads the counts: all through `Solution`, keyed like the
variables in `Variables`, so a typo in a variable name cannot silently read a zero.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from ortools.sat.python import cp_model

from placer.solver.cpsat.variables import Variables

__all__ = ["Solution", "ValueSource"]

K = TypeVar("K")


class ValueSource(Protocol):
    """What a solved CP-SAT solver offers: the value of a variable in its best solution."""

    def value(self, expression: cp_model.LinearExprT) -> int: ...


@dataclass(frozen=True)
class Solution:
    """Values of the planner's variables (missing keys mean 0)."""

    admit: Mapping[str, int] = field(default_factory=dict)
    count: Mapping[tuple[int, str], int] = field(default_factory=dict)
    shared_in_class: Mapping[tuple[int, str], int] = field(default_factory=dict)
    shared_in_group: Mapping[tuple[int, str], int] = field(default_factory=dict)
    local: Mapping[tuple[int, str, str], int] = field(default_factory=dict)
    span: Mapping[tuple[str, str, str], int] = field(default_factory=dict)
    used: Mapping[tuple[int, str, str], int] = field(default_factory=dict)
    hosts: Mapping[tuple[int, str], int] = field(default_factory=dict)

    @classmethod
    def read(cls, solver: ValueSource, v: Variables) -> Solution:
        """Every planner variable's value in the solver's best solution."""

        def values(xs: Mapping[K, cp_model.IntVar]) -> dict[K, int]:
            return {k: int(solver.value(x)) for k, x in xs.items()}

        return cls(
            admit=values(v.admit),
            count=values(v.count),
            shared_in_class=values(v.shared_in_class),
            shared_in_group=values(v.shared_in_group),
            local=values(v.local),
            span=values(v.span),
            used=values(v.used),
            hosts=values(v.hosts),
        )

    @property
    def admitted(self) -> frozenset[str]:
        return frozenset(k for k, x in self.admit.items() if x)

    def hint(self, model: cp_model.CpModel, v: Variables) -> None:
        """Replace the model's hint with this solution, complete over the planner's variables
        (a complete hint is a solution CP-SAT starts from; a partial one it may fail to repair)."""
        model.clear_hints()  # type: ignore[no-untyped-call]
        _hint(model, v.admit, self.admit)
        _hint(model, v.count, self.count)
        _hint(model, v.shared_in_class, self.shared_in_class)
        _hint(model, v.shared_in_group, self.shared_in_group)
        _hint(model, v.local, self.local)
        _hint(model, v.span, self.span)
        _hint(model, v.used, self.used)
        _hint(model, v.hosts, self.hosts)


def _hint(
    model: cp_model.CpModel, xs: Mapping[K, cp_model.IntVar], values: Mapping[K, int]
) -> None:
    for key, x in xs.items():
        model.add_hint(x, values.get(key, 0))
