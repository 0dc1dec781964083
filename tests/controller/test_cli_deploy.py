"""The commands (`placer controller --once`, `placer prepare`) end to end, the deploy manifests'
consistency with the code, and the controller's layering (only the adapter imports kubernetes)."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path
from typing import Any

import pytest
import yaml

import placer.controller
from placer.cli import build_parser, main
from placer.controller.decide.records.ledger import LEDGER_NAME
from placer.controller.reconcile import ControllerConfig
from placer.model.assignment import PLACEMENT_GATE
from tests.controller.apiserver import ApiServer, kubeconfig
from tests.controller.builders import add_jobset, gated, jobset_pods, record, tpu_cluster

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy" / "controller"


def test_controller_once_over_a_kubeconfig(tmp_path: Path, capsys: Any) -> None:
    with ApiServer(tpu_cluster(blocks=3)) as api:
        add_jobset(api.cluster, "train", jobs=2)
        code = main(
            [
                "controller",
                "--once",
                "--kubeconfig",
                str(kubeconfig(tmp_path, api.url)),
                "--solver",
                "best-fit",
            ]
        )
        assert code == 0
        assert "placed 1" in capsys.readouterr().out
        assert record(api.cluster, "train") is not None
        assert not any(gated(p) for p in jobset_pods(api.cluster, "train"))


def test_controller_once_dry_run_writes_nothing(tmp_path: Path, capsys: Any) -> None:
    with ApiServer(tpu_cluster(blocks=3)) as api:
        add_jobset(api.cluster, "train", jobs=2)
        assert (
            main(
                [
                    "controller",
                    "--once",
                    "--dry-run",
                    "--solver",
                    "best-fit",
                    "--kubeconfig",
                    str(kubeconfig(tmp_path, api.url)),
                ]
            )
            == 0
        )
        assert "(dry run)" in capsys.readouterr().out
        assert record(api.cluster, "train") is None


def test_controller_usage_errors_are_one_line(capsys: Any) -> None:
    assert main(["controller", "--once", "--binding", "node-labels", "--pin-nodes"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        pytest.param(
            ["--preemption", "lower-priority", "--kueue-admission-check"],
            "--preemption",
            id="preemption-under-kueue",
        ),
        pytest.param(["--max-preemptions-per-day", "-1"], "--max-preemptions-per-day", id="neg"),
        pytest.param(["--max-preemptions-per-day", "two"], "--max-preemptions-per-day", id="nan"),
        pytest.param(["--restart-cost", "soon"], "--restart-cost", id="restart-cost"),
        pytest.param(["--preempt-after=-1h"], "--preempt-after", id="preempt-after"),
    ],
)
def test_controller_preemption_flag_errors_are_one_line(
    flags: list[str], named: str, capsys: Any
) -> None:
    try:
        code: int | str | None = main(["controller", "--once", *flags])
    except SystemExit as e:  # argparse's own refusals
        code = e.code
    assert code == 2
    err = capsys.readouterr().err
    assert named in err and err.count("\n") == 1


@pytest.mark.parametrize(("limit", "evicted"), [(2, True), (0, False)])
def test_controller_once_preempts_over_http(
    tmp_path: Path, capsys: Any, limit: int, evicted: bool
) -> None:
    """The real adapter suspends the victim (one merge patch) through the API server stand-in;
    `--max-preemptions-per-day 0` protects every JobSet."""
    from benchmarks.simulate import cluster_sim as sim

    with ApiServer(tpu_cluster(blocks=2)) as api:
        add_jobset(api.cluster, "low", jobs=2, priority=0)
        config = str(kubeconfig(tmp_path, api.url))
        assert main(["controller", "--once", "--solver", "best-fit", "--kubeconfig", config]) == 0
        sim.schedule(api.cluster)
        add_jobset(api.cluster, "high", jobs=1, priority=100)
        flags = ["--preemption", "lower-priority", "--max-preemptions-per-day", str(limit)]
        assert main(["controller", "--once", *flags, "--workers", "1", "--kubeconfig", config]) == 0
        low = api.cluster.get("jobsets", "low", namespace="default")
        assert bool(low["spec"].get("suspend")) is evicted
        assert (record(api.cluster, "high") is not None) is evicted
        assert (record(api.cluster, "low") is None) is evicted
        capsys.readouterr()


def test_unreachable_cluster_is_one_line(tmp_path: Path, capsys: Any) -> None:
    code = main(
        [
            "controller",
            "--once",
            "--retry-timeout",
            "0",
            "--kubeconfig",
            str(kubeconfig(tmp_path, "http://127.0.0.1:9")),
        ]
    )
    assert code == 3  # unavailable (after --retry-timeout); 2 is for errors no retry fixes
    err = capsys.readouterr().err
    assert err.startswith("placer: error:") and err.count("\n") == 1


def test_prepare_prints_gated_manifests(tmp_path: Path, capsys: Any) -> None:
    src = tmp_path / "js.yaml"
    from benchmarks.simulate.cluster_sim import jobset_object

    src.write_text(
        yaml.safe_dump_all(
            [
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}},
                jobset_object("t", gate=False),
            ]
        )
    )
    assert main(["prepare", str(src)]) == 0
    docs = list(yaml.safe_load_all(capsys.readouterr().out))
    assert docs[0]["kind"] == "ConfigMap"
    pod = docs[1]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    assert pod["schedulingGates"] == [{"name": PLACEMENT_GATE}]


def test_prepare_missing_file_is_one_line(capsys: Any) -> None:
    assert main(["prepare", "/nonexistent.yaml"]) == 2
    assert "no such file" in capsys.readouterr().err


def manifests() -> dict[tuple[str, str], dict[str, Any]]:
    docs: dict[tuple[str, str], dict[str, Any]] = {}
    for path in sorted(DEPLOY.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc.get("kind") != "Kustomization":
                docs[(doc["kind"], doc["metadata"]["name"])] = doc
    return docs


def rules(docs: dict[Any, dict[str, Any]], kind: str, name: str) -> set[tuple[str, str]]:
    return {
        (res, verb)
        for rule in docs[(kind, name)]["rules"]
        for res in rule["resources"]
        for verb in rule["verbs"]
    }


def test_deployment_runs_two_elected_replicas_with_a_valid_command() -> None:
    docs = manifests()
    deployment = docs[("Deployment", "placer-controller")]
    assert deployment["spec"]["replicas"] == 2
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    args = build_parser().parse_args(container["args"])
    assert args.command == "controller" and args.leader_elect and not args.once
    assert args.binding == "gate" and args.metrics_port == 8080
    assert container["ports"][0]["containerPort"] == args.metrics_port
    assert container["env"][0]["name"] == "POD_NAMESPACE"
    sa = deployment["spec"]["template"]["spec"]["serviceAccountName"]
    assert ("ServiceAccount", sa) in docs


def test_rbac_is_exactly_what_the_adapter_calls() -> None:
    docs = manifests()
    assert rules(docs, "ClusterRole", "placer-controller") == {
        ("jobsets", "get"),
        ("jobsets", "list"),
        ("jobsets", "watch"),
        ("jobsets", "patch"),
        ("pods", "list"),
        ("pods", "watch"),
        ("nodes", "list"),
        ("nodes", "watch"),
        ("priorityclasses", "list"),
        ("topologies", "list"),
        ("events", "create"),
    }
    assert rules(docs, "ClusterRole", "placer-controller-gate") == {
        ("pods", "get"),
        ("pods", "patch"),
    }
    assert rules(docs, "ClusterRole", "placer-controller-node-labels") == {
        ("nodes", "get"),
        ("nodes", "patch"),
    }
    assert rules(docs, "Role", "placer-controller-leader-election") == {
        ("leases", "get"),
        ("leases", "create"),
        ("leases", "update"),
    }
    ledger = docs[("Role", "placer-controller-ledger")]
    assert rules(docs, "Role", "placer-controller-ledger") == {
        ("configmaps", "list"),
        ("configmaps", "watch"),
        ("configmaps", "create"),
        ("configmaps", "get"),
        ("configmaps", "patch"),
    }
    by_name = [r for r in ledger["rules"] if "resourceNames" in r]
    assert by_name == [
        {
            "apiGroups": [""],
            "resources": ["configmaps"],
            "resourceNames": [LEDGER_NAME],
            "verbs": ["get", "patch"],
        }
    ]
    assert ledger["metadata"]["namespace"] == ControllerConfig().ledger_namespace
    assert ("RoleBinding", "placer-controller-ledger") in docs
    kustomization = yaml.safe_load((DEPLOY / "kustomization.yaml").read_text())
    assert "rbac-gate.yaml" in kustomization["resources"]
    assert all((DEPLOY / r).exists() for r in kustomization["resources"])


def controller_modules() -> list[str]:
    return sorted(
        m.name
        for m in pkgutil.walk_packages(placer.controller.__path__, "placer.controller.")
        if not m.ispkg
    )


@pytest.mark.parametrize("module", controller_modules())
def test_only_the_adapter_imports_kubernetes(module: str) -> None:
    tree = ast.parse(Path(importlib.import_module(module).__file__ or "").read_text())
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    imported |= {
        (node.module or "").split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
    }
    assert ("kubernetes" in imported) == (module == "placer.controller.act.kube_adapter")
    assert "ortools" not in imported
    mod = importlib.import_module(module)
    assert sorted(mod.__all__) == sorted(set(mod.__all__))
    assert all(hasattr(mod, name) for name in mod.__all__)
