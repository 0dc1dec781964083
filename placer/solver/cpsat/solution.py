"""A solution of the planner's model in class terms: one type from hint to materialization.

The greedy plan becomes one (`hints.solution_from_plan`) to hint the first stage; each stage's
answer is one (`Solution.read`) and hints the next; a coarse answer spread onto finer classes is
one (`hints.spread_counts`), completed over the fine model to hint it (`hints.complete`); and
materialization turns one into a plan. Its families are `Variables`' (`variables.Families`), so a
typo in a variable name cannot silently read a zero.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol, TypeVar

from ortools.sat.python import cp_model

from placer.solver.cpsat.problem import AggregatedProblem
from placer.solver.cpsat.variables import FAMILIES, Families, Variables

__all__ = ["Solution", "ValueSource"]

K = TypeVar("K")


class ValueSource(Protocol):
    """What a solved CP-SAT solver offers: the value of a variable in its best solution."""

    def value(self, expression: cp_model.LinearExprT) -> int: ...


@dataclass(frozen=True)
class Solution(Families[int]):
    """Values of the planner's variables (missing keys mean 0)."""

    @classmethod
    def read(cls, solver: ValueSource, v: Variables) -> Solution:
        """Every planner variable's value in the solver's best solution."""

        def values(xs: Mapping[K, cp_model.IntVar]) -> dict[K, int]:
            return {k: int(solver.value(x)) for k, x in xs.items()}

        return cls(**{name: values(getattr(v, name)) for name in FAMILIES})

    @property
    def admitted(self) -> frozenset[str]:
        return frozenset(k for k, x in self.admit.items() if x)

    @property
    def evicted(self) -> frozenset[str]:
        return frozenset(k for k, x in self.evict.items() if x)

    @property
    def shared_pods(self) -> dict[tuple[int, str], int]:
        """(shared JobClass, node group or domain class) -> its pods there, where there are any."""
        both = (*self.shared_in_group.items(), *self.shared_in_class.items())
        return {k: n for k, n in both if n}

    def enclosing(self, problem: AggregatedProblem) -> dict[int, str]:
        """Shared JobClass with a required topology -> id of the domain chosen for its pods."""
        classes = problem.ctx.job_classes
        return {
            i: parent
            for (i, level, parent), x in self.local.items()
            if x and classes[i].rjob.required_topology == level and not classes[i].exclusive_key
        }

    def hint(self, model: cp_model.CpModel, v: Variables) -> None:
        """Replace the model's hint with this solution, complete over the planner's variables
        (a complete hint is a solution CP-SAT starts from; a partial one it may fail to repair)."""
        model.clear_hints()  # type: ignore[no-untyped-call]  # unannotated in OR-Tools
        for name in FAMILIES:
            values: Mapping[object, int] = getattr(self, name)
            for key, x in getattr(v, name).items():
                model.add_hint(x, values.get(key, 0))
