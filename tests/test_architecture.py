"""Imports flow one way (model -> solver -> controller/cli); heavy clients stay in their corners.

An `ast` walk over the source, so a violation fails here rather than surfacing as an import cycle or
an accidental dependency of the model on the solver.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

FORBIDDEN: dict[str, tuple[str, ...]] = {
    "placer/model": (
        "placer.solver",
        "placer.controller",
        "placer.commands",
        "placer.render",
        "placer.cli",
        "plugins",
        "benchmarks",
    ),
    # Reading input safely is below every reader; the Kubernetes and Kueue objects below the
    # snapshots and JobSets built from them, which stay side by side.
    "placer/model/read": (
        "placer.model.kube",
        "placer.model.kueue",
        "placer.model.snapshots",
        "placer.model.jobset",
    ),
    "placer/model/kube": ("placer.model.kueue", "placer.model.snapshots", "placer.model.jobset"),
    "placer/model/kueue": ("placer.model.kube", "placer.model.snapshots", "placer.model.jobset"),
    "placer/model/snapshots": ("placer.model.jobset",),
    "placer/model/jobset": ("placer.model.snapshots",),
    "placer/solver": (
        "placer.controller",
        "placer.commands",
        "placer.render",
        "placer.cli",
        "plugins",
        "benchmarks",
    ),
    "placer/render": (
        "placer.controller",
        "placer.commands",
        "placer.cli",
        "plugins",
        "benchmarks",
    ),
    "placer/controller": ("placer.commands", "placer.cli", "benchmarks"),
    # What decides never reaches for what acts, nor for the cycle that runs both.
    "placer/controller/decide": (
        "placer.controller.act",
        "placer.controller.reconcile",
        "placer.controller.loop",
        "placer.controller.report",
        "placer.controller.metrics",
    ),
    # decide/'s phases, each importing only those below it: records, observe, review, then
    # preempting and the phase values (observed.py), plan, kueue, and the round put together.
    "placer/controller/decide/records": (
        "placer.controller.decide.observe",
        "placer.controller.decide.review",
        "placer.controller.decide.preempting",
        "placer.controller.decide.observed",
        "placer.controller.decide.plan",
        "placer.controller.decide.kueue",
        "placer.controller.decide.round",
    ),
    "placer/controller/decide/observe": (
        "placer.controller.decide.review",
        "placer.controller.decide.preempting",
        "placer.controller.decide.observed",
        "placer.controller.decide.plan",
        "placer.controller.decide.kueue",
        "placer.controller.decide.round",
    ),
    "placer/controller/decide/review": (
        "placer.controller.decide.preempting",
        "placer.controller.decide.observed",
        "placer.controller.decide.plan",
        "placer.controller.decide.kueue",
        "placer.controller.decide.round",
    ),
    "placer/controller/decide/plan": (
        "placer.controller.decide.kueue",
        "placer.controller.decide.round",
    ),
    "placer/controller/decide/kueue": ("placer.controller.decide.round",),
    "placer/controller/act": ("placer.controller.reconcile", "placer.controller.loop"),
    "plugins": ("placer.commands", "placer.cli", "benchmarks"),
    # The dispatcher imports every command; a command needing the parser tree is handed it.
    "placer/commands": ("placer.cli", "benchmarks"),
    # The benchmarks' shared parts: what a run is made of below how it is measured, both below
    # the simulations; the entry points (benchmarks/*.py) above all three.
    "benchmarks/worlds": ("benchmarks.simulate", "benchmarks.reporting"),
    "benchmarks/reporting": ("benchmarks.simulate",),
}
"""Folder -> module prefixes its files must not import."""

KUBERNETES_ALLOWED: dict[str, str] = {
    # The one Kubernetes boundary: client setup, error conversion, paged lists and watches for
    # the controller's adapter, the live snapshot loader and the extender's watch and binder.
    "placer/model/kube/client.py": "kubernetes",
    # Subclasses the client's leader elector (`_StoppableElection`, which survives a restarting
    # API server), so it imports that part of the client, and only that.
    "placer/controller/act/kube_adapter.py": "kubernetes.leaderelection",
    # Measures placer on the real control plane from outside, as its administrator (creating
    # Nodes and JobSets, reading bindings) with the client tests/cluster uses, not placer's.
    "benchmarks/cluster_throughput.py": "kubernetes",
    # Likewise, placer's Kueue check against Kueue TAS: reads Workloads, pods and nodes as the
    # cluster's administrator while both run.
    "benchmarks/kueue_admission.py": "kubernetes",
}
"""Module -> the part of the `kubernetes` client it may import; no other module imports it."""
ORTOOLS_ALLOWED_PREFIX = "placer/solver/"
ORTOOLS_ALLOWED_ELSEWHERE = {
    "benchmarks/reporting/measure.py",  # reads ortools.__version__ for the report
    # An offline model of the arrivals (how short any policy's longest wait can be), not a
    # placement: nothing in placer/solver/ builds it, so it speaks to CP-SAT itself.
    "benchmarks/pool_relaxation.py",
    "benchmarks/late_floor.py",  # the same arrivals' model, asked of the p95 wait
}


def _sources() -> list[Path]:
    return sorted(p for d in ("placer", "plugins", "benchmarks") for p in (ROOT / d).rglob("*.py"))


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


def _matches(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


@pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_respect_layers(path: Path) -> None:
    rel = path.relative_to(ROOT).as_posix()
    imported = _imports(path)
    for folder, banned in FORBIDDEN.items():
        if rel.startswith(folder + "/"):
            bad = [n for n in imported for b in banned if _matches(n, b)]
            assert not bad, f"{rel} imports {bad}, a layer above it"
    client = [n for n in imported if _matches(n, "kubernetes")]
    if client:
        assert rel in KUBERNETES_ALLOWED, f"{rel} imports the kubernetes client {client}"
        allowed = KUBERNETES_ALLOWED[rel]
        beyond = [n for n in client if not _matches(n, allowed)]
        assert not beyond, f"{rel} imports {beyond}; only {allowed} (the rest: model.kube.client)"
    if any(_matches(n, "ortools") for n in imported):
        assert rel.startswith(ORTOOLS_ALLOWED_PREFIX) or rel in ORTOOLS_ALLOWED_ELSEWHERE, rel


def _modules() -> list[str]:
    paths = (ROOT / "placer").rglob("*.py")
    return [".".join(p.relative_to(ROOT).with_suffix("").parts) for p in paths]


@pytest.mark.parametrize("module", sorted(_modules()))
def test_public_surface_is_declared(module: str) -> None:
    """Every name in `__all__` exists, so the declared surface cannot rot."""
    mod = importlib.import_module(module)
    declared = getattr(mod, "__all__", None)
    if declared is None:
        assert module.endswith("__init__") or module.endswith("__main__"), (
            f"{module} declares no __all__"
        )
        return
    missing = [n for n in declared if not hasattr(mod, n)]
    assert not missing, f"{module}.__all__ names missing attributes {missing}"
    assert len(set(declared)) == len(declared), f"{module}.__all__ repeats a name"


CPSAT = "placer.solver.cpsat"


@pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(ROOT)))
def test_cpsat_internals_stay_inside_cpsat(path: Path) -> None:
    """Outside placer/solver/cpsat/ only the package's public surface (`__all__` of its
    `__init__`) is imported: `from placer.solver.cpsat import build_model`, never a module of it.
    (The package's own tests may test its modules.)"""
    rel = path.relative_to(ROOT).as_posix()
    if rel.startswith("placer/solver/cpsat/"):
        return
    inside = [n for n in _imports(path) if n.startswith(CPSAT + ".")]
    assert not inside, f"{rel} imports CP-SAT internals {inside}; use {CPSAT}'s public surface"
    public = set(importlib.import_module(CPSAT).__all__)
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module == CPSAT:
            private = [a.name for a in node.names if a.name not in public]
            assert not private, f"{rel} imports {private} from {CPSAT}, not in its __all__"
    text = path.read_text()
    assert f'"{CPSAT}.' not in text and f"'{CPSAT}." not in text, f"{rel} names a cpsat module"


def test_cpsat_public_surface_is_small_and_declared() -> None:
    import placer.solver.cpsat as cpsat

    assert sorted(cpsat.__all__) == sorted(set(cpsat.__all__))
    assert {"CpSatSolver", "build_model", "make_solver", "aggregate"} <= set(cpsat.__all__)
    assert len(cpsat.__all__) <= 20


def _class_definitions() -> dict[str, list[str]]:
    where: dict[str, list[str]] = {}
    for path in sorted(p for d in ("placer", "plugins") for p in (ROOT / d).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.ClassDef):
                rel = path.relative_to(ROOT).as_posix()
                where.setdefault(node.name, []).append(f"{rel}:{node.lineno}")
    return where


def test_no_class_name_is_defined_twice() -> None:
    """One name per concept: two classes of one name (two `Ledger`, two `Assignment`) make a
    reader guess which one a file means, private ones included."""
    twice = {name: sites for name, sites in _class_definitions().items() if len(sites) > 1}
    assert not twice, f"class names defined more than once: {twice}"


FOLDER_MODULES_AT_MOST = {
    "placer/controller": 15,
    "placer/controller/decide": 5,
    "placer/render": 10,
    "placer/solver": 10,
}
"""Folder -> how many modules may sit directly in it: a flat folder of mixed concerns hides the
design; past this, a concern gets a folder of its own."""


@pytest.mark.parametrize("folder", sorted(FOLDER_MODULES_AT_MOST))
def test_folders_stay_small(folder: str) -> None:
    modules = sorted(p.name for p in (ROOT / folder).glob("*.py"))
    assert len(modules) <= FOLDER_MODULES_AT_MOST[folder], f"{folder} holds {modules}"


def test_solvers_are_assembled_in_one_place() -> None:
    """`TimeAwareSolver` is constructed only where solvers are assembled (`registry`), so the
    CLI, the controller, the explanations and the benchmarks cannot wrap a solver differently."""
    home = "placer/solver/registry.py"
    wrapping = []
    for path in _sources():
        rel = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "TimeAwareSolver"
                and rel != home
            ):
                wrapping.append(f"{rel}:{node.lineno}")
    assert not wrapping, f"TimeAwareSolver constructed outside {home}: {wrapping}"


FUNCTION_LINES_AT_MOST = 100
MANY_PARAMETERS = 8
"""A function taking this many parameters threads state a frozen value should carry."""
MANY_PARAMETERS_AT_MOST = 2
"""In placer/ and plugins/ together; none in placer/controller/."""


def _functions() -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    found = []
    for path in sorted(p for d in ("placer", "plugins") for p in (ROOT / d).rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                found.append((rel, node))
    return found


def _parameters(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    a = node.args
    named = [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    return len([n for n in named if n not in ("self", "cls")]) + bool(a.vararg) + bool(a.kwarg)


def test_functions_stay_short() -> None:
    long = [
        f"{rel}:{node.lineno} {node.name} ({lines} lines)"
        for rel, node in _functions()
        if (lines := (node.end_lineno or node.lineno) - node.lineno + 1) > FUNCTION_LINES_AT_MOST
    ]
    assert not long, f"functions over {FUNCTION_LINES_AT_MOST} lines: {long}"


def test_few_functions_take_many_parameters() -> None:
    many = {
        f"{rel}:{node.name}" for rel, node in _functions() if _parameters(node) >= MANY_PARAMETERS
    }
    controller = sorted(m for m in many if m.startswith("placer/controller/"))
    assert not controller, f"controller functions with {MANY_PARAMETERS}+ parameters: {controller}"
    assert len(many) <= MANY_PARAMETERS_AT_MOST, (
        f"functions with {MANY_PARAMETERS}+ parameters: {sorted(many)}; pass one value instead"
    )
