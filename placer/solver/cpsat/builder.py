"""The one CP-SAT model builder: the planner, capacity counting, explain and cheapest all call it.

`build_model(problem, mode, guards)` is a flat list of rules, one constraint family per call
(constraints.py). The mode says what admission means (variables.py): a 0/1 per JobSet for the
planner and explain, a copy count for capacity, nothing at all for cheapest (which adds its own
purchase variables to place what the cluster cannot). `guards` puts one JobSet's requirements
behind literals, so explain can ask CP-SAT which of them conflict. No objective is set here: each
caller states its own question (the planner's stages in solve.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from ortools.sat.python import cp_model

from placer.solver.cpsat import constraints
from placer.solver.cpsat.problem import AggregatedProblem
from placer.solver.cpsat.variables import Guards, ModelMode, Variables, create_variables

__all__ = ["BuiltModel", "build_model"]


@dataclass(frozen=True)
class BuiltModel:
    model: cp_model.CpModel
    variables: Variables
    problem: AggregatedProblem
    mode: ModelMode

    def literals(self) -> dict[str, cp_model.IntVar]:
        """Requirement id (`replicas:<rjob>`, `locality:<rjob>`, `admitted:<key>`) -> literal."""
        return self.variables.literals(self.problem)


def build_model(
    problem: AggregatedProblem, mode: ModelMode = "admission", guards: Guards | None = None
) -> BuiltModel:
    """The model as a list of rules (guards apply in `admission` mode only)."""
    if guards is not None and mode != "admission":
        raise ValueError(f"guards need admission mode, not {mode}")
    model = cp_model.CpModel()
    v = create_variables(model, problem, mode, guards)
    if mode != "partial":
        constraints.add_all_or_nothing(model, v, problem)
    constraints.add_domain_exclusivity(model, v, problem)
    constraints.add_overlapping_domains(model, v, problem)
    constraints.add_shared_fit(model, v, problem)
    if mode == "admission":
        constraints.add_eviction(model, v, problem)
        constraints.add_locality(model, v, problem)
        constraints.add_podset_groups(model, v, problem)
        constraints.add_domains_used(model, v, problem)
        constraints.add_hosts_used(model, v, problem)
        constraints.add_strict_fifo(model, v, problem)
    elif mode == "copies":
        constraints.add_copy_locality(model, v, problem)
    if mode != "partial":
        constraints.add_impossible(model, v, problem)
    constraints.add_admitted_guards(model, v, problem)
    return BuiltModel(model=model, variables=v, problem=problem, mode=mode)
