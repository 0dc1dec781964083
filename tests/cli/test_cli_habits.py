"""kubectl-style habits: --version, python -m placer, the kubectl plugin name, -v after the
subcommand, -o as an alias of --format, shell completion."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from placer.cli import build_parser, main, placer_version, prog_name
from tests.cli.inputs import jobset_manifest, write_cluster, write_jobsets

REPO = Path(__file__).resolve().parents[2]
FAST = ["--workers", "1", "--time-limit", "5"]


@pytest.fixture
def inputs(tmp_path: Path) -> list[str]:
    cluster = write_cluster(tmp_path, pools=3)
    jobsets = write_jobsets(tmp_path, jobset_manifest("a", replicas=2))
    return ["--cluster", str(cluster), *FAST, str(jobsets)]


def test_version_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out == f"placer {placer_version()}\n"


def test_python_dash_m_placer_runs_the_cli() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "placer", "--version"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("placer ")


def test_kubectl_plugin_entry_point_and_name() -> None:
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["kubectl-placer"] == scripts["placer"] == "placer.cli:run"
    assert prog_name("/usr/local/bin/kubectl-placer") == "kubectl placer"
    assert prog_name("/usr/local/bin/placer") == "placer"
    assert build_parser("kubectl placer").format_usage().startswith("usage: kubectl placer ")


def test_errors_carry_the_plugin_name(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setattr(sys, "argv", ["/usr/bin/kubectl-placer"])
    code = main(["plan", "--cluster", str(tmp_path / "missing.json"), str(tmp_path)])
    assert code == 2
    assert capsys.readouterr().err.startswith("kubectl placer: error: ")


@pytest.mark.parametrize(
    ("argv", "verbose"),
    [
        pytest.param(["-v", "plan"], True, id="before"),
        pytest.param(["plan", "-v"], True, id="after"),
        pytest.param(["plan", "--verbose"], True, id="after-long"),
        pytest.param(["plan"], False, id="none"),
    ],
)
def test_global_flags_before_or_after_the_subcommand(argv: list[str], verbose: bool) -> None:
    args = build_parser().parse_args([*argv, "--cluster", "c.json", "js.yaml"])
    assert args.verbose is verbose


def test_output_flag_is_an_alias_of_format(
    capsys: pytest.CaptureFixture[str], inputs: list[str]
) -> None:
    assert main(["plan", "-o", "json", *inputs]) == 0
    short = json.loads(capsys.readouterr().out)
    assert main(["plan", "--format", "json", *inputs]) == 0
    long = json.loads(capsys.readouterr().out)
    assert short["jobsets"] == long["jobsets"]
    assert main(["plan", "-o", "wide", *inputs]) == 0
    assert capsys.readouterr().out.startswith("JOBSET ")
    assert main(["explain", "-o", "yaml", *inputs, "default/a"]) == 0
    assert "jobset: default/a" in capsys.readouterr().out


def test_explain_without_a_name_says_the_name_is_missing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    cluster = write_cluster(tmp_path, pools=1)
    jobsets = write_jobsets(tmp_path, jobset_manifest("a"))
    assert main(["explain", "--cluster", str(cluster), str(jobsets)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "the JobSet to explain is missing" in err and "NAMESPACE/NAME" in err


def test_extender_pinned_needs_a_plan(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["extender", "--pinned", "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert err == (
        "placer: error: --pinned: holds pods to the nodes of a plan file: give --plan PLAN.json\n"
    )


def test_completion_scripts(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["completion", "bash"]) == 0
    bash_script = capsys.readouterr().out
    assert main(["completion", "zsh"]) == 0
    zsh_script = capsys.readouterr().out
    assert "bashcompinit" in zsh_script and bash_script in zsh_script
    if shutil.which("bash") is None:
        pytest.skip("no bash to run the script")

    def complete(*words: str) -> list[str]:
        probe = (
            f"{bash_script}\nCOMP_WORDS=({' '.join(repr(w) for w in words)}); "
            f"COMP_CWORD={len(words) - 1}; _placer_complete; printf '%s\\n' \"${{COMPREPLY[@]}}\""
        )
        done = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, check=True)
        return done.stdout.split()

    assert "plan" in complete("placer", "pl")
    assert complete("placer", "plan", "--solver", "") == [
        "cpsat",
        "first-fit",
        "best-fit",
        "largest-first",
    ]
    assert set(complete("placer", "explain", "-o", "")) == {"table", "wide", "json", "yaml"}
    assert "--time-limit" in complete("placer", "capacity", "--time")


def test_unreachable_cluster_is_one_line_without_retry_warnings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'http://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
    )
    jobsets = write_jobsets(tmp_path, jobset_manifest("a"))
    assert main(["plan", "--kubeconfig", str(kubeconfig), str(jobsets)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("placer: error: listing nodes failed: cannot connect to 127.0.0.1:1: ")
    assert err.count("\n") == 1
    assert not [r for r in caplog.records if r.name.startswith("urllib3")]
