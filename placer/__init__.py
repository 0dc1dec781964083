"""placer: plans pending Kubernetes JobSets jointly with CP-SAT, one topology domain per child Job.

The public surface is small: load a cluster snapshot and JobSets, pick a solver, solve, check.
Everything else lives in the subpackages (model, solver, controller) and is reached through them.
"""

from placer.model.errors import ClusterError, InputError, PlacerError
from placer.model.jobset.parse import load_jobsets
from placer.model.options import SolveOptions
from placer.model.plan import Plan
from placer.model.snapshots.load import load_snapshot
from placer.solver.check.checker import check
from placer.solver.registry import SOLVER_NAMES, get_solver

__all__ = [
    "SOLVER_NAMES",
    "ClusterError",
    "InputError",
    "PlacerError",
    "Plan",
    "SolveOptions",
    "check",
    "get_solver",
    "load_jobsets",
    "load_snapshot",
]
