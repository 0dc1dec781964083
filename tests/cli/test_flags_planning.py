"""The shared CLI helpers: flags to SolveOptions, the load phase, input errors at the boundary."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

import pytest

from placer.commands.flags import planning
from placer.commands.flags.timing import add_time_args
from placer.model.cluster import ClusterSnapshot
from placer.model.errors import InputError
from placer.model.options import SolveOptions
from placer.model.plan import Plan, SolverReport
from placer.model.workload import JobSetRequest


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    planning.add_cluster_args(parser)
    planning.add_solver_args(parser)
    add_time_args(parser)
    planning.add_jobset_args(parser)
    return parser.parse_args(list(argv))


def test_defaults_are_solve_options_defaults() -> None:
    args = parse("--cluster", "c.json", "j.yaml")
    assert planning.options_from_args(args) == SolveOptions()
    assert args.solver == "cpsat"
    assert args.cluster == ["c.json"]
    assert args.jobsets == ["j.yaml"]


def test_every_flag_reaches_solve_options() -> None:
    args = parse(
        "--cluster",
        "a.json",
        "--cluster",
        "b.json",
        "--levels",
        "block, pool",
        "--no-extended-resource-toleration",
        "--solver",
        "best-fit",
        "--time-limit",
        "2.5",
        "--workers",
        "3",
        "--seed",
        "7",
        "--queue",
        "strict-fifo",
        "--export-model",
        "m.pb",
        "j1.yaml",
        "j2.yaml",
    )
    assert args.cluster == ["a.json", "b.json"]
    assert args.jobsets == ["j1.yaml", "j2.yaml"]
    assert planning.options_from_args(args) == SolveOptions(
        time_limit_s=2.5,
        workers=3,
        seed=7,
        queue="strict-fifo",
        extended_resource_toleration=False,
        levels=("block", "pool"),
        export_model_path="m.pb",
    )


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["--time-limit", "0"], id="zero-time"),
        pytest.param(["--time-limit", "x"], id="nan-time"),
        pytest.param(["--workers", "-1"], id="negative-workers"),
        pytest.param(["--levels", ","], id="empty-levels"),
        pytest.param(["--solver", "magic"], id="unknown-solver"),
        pytest.param([], id="no-cluster"),
    ],
)
def test_bad_flags_are_usage_errors(argv: list[str]) -> None:
    cluster = [] if argv == [] else ["--cluster", "c.json"]
    with pytest.raises(SystemExit) as e:
        parse(*cluster, *argv, "j.yaml")
    assert e.value.code == 2


def test_options_from_args_tolerates_commands_without_solver_flags() -> None:
    assert planning.options_from_args(argparse.Namespace()) == SolveOptions()


def test_load_inputs_names_the_missing_file_first(tmp_path: Path) -> None:
    args = parse("--cluster", str(tmp_path / "c.json"), str(tmp_path / "j.yaml"))
    with pytest.raises(InputError) as e:
        planning.load_inputs(args)
    assert e.value.source == str(tmp_path / "j.yaml")
    assert e.value.code == "missing-file"


def test_stray_yaml_error_becomes_an_input_error(tmp_path: Path) -> None:
    import yaml

    def boom() -> None:
        yaml.safe_load("a: [")

    with pytest.raises(InputError) as e:
        planning._guarded(boom, ["x.yaml"])
    assert e.value.source == "x.yaml"
    assert e.value.code == "yaml"
    assert "\n" not in str(e.value)


class _FakeSolver:
    name = "fake"

    def __init__(self) -> None:
        self.seen: SolveOptions | None = None

    def solve(
        self, snapshot: ClusterSnapshot, jobsets: Sequence[JobSetRequest], options: SolveOptions
    ) -> Plan:
        self.seen = options
        return Plan(
            solver=SolverReport(name="fake", status="HEURISTIC", phases={"solve": 0.5}), jobsets=[]
        )


def test_run_solver_records_the_load_phase_first(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _FakeSolver()
    monkeypatch.setattr("placer.solver.registry._named", lambda name: fake)
    args = parse("--cluster", "c.json", "--seed", "4", "j.yaml")
    plan = planning.run_solver(args, ClusterSnapshot(nodes=()), [], load_seconds=0.25)
    phases = plan.solver.phases
    assert list(phases) == ["load", "solve", "check"] and phases["solve"] == 0.5
    assert fake.seen is not None and fake.seen.seed == 4


def test_reservations_wrap_the_solver_and_time_its_phases(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _FakeSolver()
    monkeypatch.setattr("placer.solver.registry._named", lambda name: fake)
    args = parse("--cluster", "c.json", "--reservations", "head", "j.yaml")
    plan = planning.run_solver(args, ClusterSnapshot(nodes=()), [], load_seconds=0.25)
    phases = plan.solver.phases
    assert next(iter(phases)) == "load" and phases["solve"] == 0.5
    assert {"timeline", "reserve", "estimate"} <= set(phases)
    assert fake.seen is not None and fake.seen.time.reservations == "head"
