"""`--export-model`: every stage's model written with its objective, loadable offline; refusals
(greedy solvers, paths that cannot be written, capacity) are one-line usage errors, exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from google.protobuf import text_format
from ortools.sat import cp_model_pb2
from ortools.sat.python import cp_model

from placer.cli import main
from placer.model.cluster import ClusterSnapshot
from placer.model.errors import InputError
from placer.model.options import SolveOptions
from placer.model.workload import JobSetRequest
from placer.solver.cpsat.export import stage_path
from tests.strategies import cluster, jobset, pool, rjob, solve_checked


def _inputs() -> tuple[ClusterSnapshot, list[JobSetRequest]]:
    snapshot = cluster(*(pool(f"p{i}", 2) for i in range(3)))
    jobsets = [
        jobset("high", rjob(replicas=2), priority=100),
        jobset("low", rjob(replicas=2), order=1),
    ]
    return snapshot, jobsets


def _load(path: Path) -> cp_model_pb2.CpModelProto:
    model: cp_model_pb2.CpModelProto  # protobuf's parsers are untyped (they return Any)
    if path.name.endswith("txt"):
        model = text_format.Parse(path.read_text(), cp_model_pb2.CpModelProto())
    else:
        model = cp_model_pb2.CpModelProto.FromString(path.read_bytes())
    return model


@pytest.mark.parametrize("name", ["model.pbtxt", "model.pb"])
def test_each_stage_is_written_with_its_objective(tmp_path: Path, name: str) -> None:
    snapshot, jobsets = _inputs()
    options = SolveOptions(workers=1, time_limit_s=5, export_model_path=str(tmp_path / name))
    plan = solve_checked("cpsat", snapshot, jobsets, options)
    stem, _, suffix = name.partition(".")
    expected = [
        f"{stem}.01-tier-100.{suffix}",
        f"{stem}.02-tier-0.{suffix}",
        f"{stem}.03-queue-order.{suffix}",
        f"{stem}.04-packing.{suffix}",
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == expected
    protos = [_load(tmp_path / f) for f in expected]
    assert all(p.HasField("objective") for p in protos)
    assert [p.name for p in protos] == ["tier 100", "tier 0", "queue order", "packing"]
    # the stage after tier 100 carries tier 100's optimum as a constraint: one more constraint
    assert len(protos[1].constraints) == len(protos[0].constraints) + 1
    # solved offline, the first stage proves what the plan reports for its tier
    model = cp_model.CpModel()
    model.proto.parse_text_format(text_format.MessageToString(protos[0]))
    assert model.has_objective()
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    assert solver.solve(model) == cp_model.OPTIMAL
    high = sum(o.accelerators for o in plan.jobsets if o.priority == 100 and o.status == "placed")
    assert round(solver.objective_value) == high == 16


def test_stage_path_inserts_the_stage_before_the_extension() -> None:
    assert stage_path("out/m.pbtxt", 3, "queue order") == "out/m.03-queue-order.pbtxt"
    assert stage_path("m", 1, "tier -5") == "m.01-tier--5"  # not tier 5


def test_greedy_solvers_refuse_to_export() -> None:
    snapshot, jobsets = _inputs()
    options = SolveOptions(export_model_path="m.pbtxt")
    with pytest.raises(InputError, match="builds no CP-SAT model"):
        solve_checked("best-fit", snapshot, jobsets, options)


def _files(tmp_path: Path) -> tuple[Path, Path]:
    c = tmp_path / "cluster.yaml"
    c.write_text(
        yaml.safe_dump(
            {
                "kind": "ClusterDescription",
                "pools": [
                    {
                        "name": "tpu-{i}",
                        "count": 2,
                        "hosts": 2,
                        "labels": {"cloud.google.com/gke-nodepool": "tpu-{i}"},
                        "allocatable": {"cpu": 8, "google.com/tpu": 4, "pods": 110},
                    }
                ],
            }
        )
    )
    j = tmp_path / "js.yaml"
    j.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "jobset.x-k8s.io/v1alpha2",
                "kind": "JobSet",
                "metadata": {
                    "name": "a",
                    "namespace": "ns",
                    "annotations": {
                        "alpha.jobset.sigs.k8s.io/exclusive-topology": (
                            "cloud.google.com/gke-nodepool"
                        )
                    },
                },
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": "w",
                            "replicas": 1,
                            "template": {
                                "spec": {
                                    "parallelism": 2,
                                    "completions": 2,
                                    "template": {
                                        "spec": {
                                            "containers": [
                                                {
                                                    "name": "c",
                                                    "resources": {
                                                        "requests": {"google.com/tpu": 4},
                                                        "limits": {"google.com/tpu": 4},
                                                    },
                                                }
                                            ]
                                        }
                                    },
                                }
                            },
                        }
                    ]
                },
            }
        )
    )
    return c, j


@pytest.mark.parametrize(
    "command, export, fragment",
    [
        pytest.param("plan", "best-fit", "builds no CP-SAT model", id="greedy"),
        pytest.param("plan", "nodir", "no such directory", id="missing-dir"),
        pytest.param("plan", "file", "no such directory", id="parent-is-a-file"),
        pytest.param("capacity", "ok", "capacity writes no CP-SAT model", id="capacity"),
    ],
)
def test_refusals_exit_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, export: str, fragment: str
) -> None:
    cluster_file, jobsets_file = _files(tmp_path)
    target = {
        "nodir": tmp_path / "missing" / "m.pbtxt",
        "file": cluster_file / "m.pbtxt",
    }.get(export, tmp_path / "m.pbtxt")
    solver = ["--solver", "best-fit"] if export == "best-fit" else []
    argv = [command, "--cluster", str(cluster_file), *solver, "--workers", "1"]
    code = main([*argv, "--export-model", str(target), str(jobsets_file)])
    err = capsys.readouterr().err
    assert code == 2
    assert fragment in err and "--export-model" in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not list(tmp_path.glob("m*")) and not (tmp_path / "missing").exists()


def test_plan_command_writes_the_stages(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cluster_file, jobsets_file = _files(tmp_path)
    target = tmp_path / "out" / "m.pbtxt"
    target.parent.mkdir()
    argv = ["plan", "--cluster", str(cluster_file), "--workers", "1", "--export-model"]
    assert main([*argv, str(target), str(jobsets_file)]) == 0
    written = sorted(p.name for p in target.parent.iterdir())
    assert written == ["m.01-tier-0.pbtxt", "m.02-queue-order.pbtxt", "m.03-packing.pbtxt"]
    assert all(_load(target.parent / f).HasField("objective") for f in written)
