"""`placer extender` as a user runs it: a subprocess serving a plan file, and the layering rules
that keep the command thin."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from placer.cli import main
from plugins.extender.service import ServiceOptions
from tests.extender.builders import plain_pod, post, serving_url, write_inputs

ROOT = Path(__file__).resolve().parents[2]


def test_cli_serves_a_plan_file(tmp_path: Path) -> None:
    plan, cluster = write_inputs(tmp_path)
    command = [
        sys.executable,
        "-m",
        "placer.cli",
        "extender",
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        "--plan",
        str(plan),
        "--cluster",
        str(cluster),
    ]
    proc = subprocess.Popen(command, cwd=ROOT, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        url = serving_url(proc.stderr)
        assert url.startswith("http://127.0.0.1:"), url
        status, answer = post(url, "filter", {"Pod": plain_pod(), "NodeNames": ["n2", "n3"]})
        assert status == 200
        assert answer["NodeNames"] == ["n3"]
        assert answer["FailedAndUnresolvableNodes"] == {"n2": "reserved for ml/train"}
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_cli_logs_what_it_loaded_at_info_as_json_when_asked(tmp_path: Path) -> None:
    """As the controller and the webhook do: a server's INFO lines are its record (here, what the
    plan file holds; in watch mode, every pod it binds), not dropped as a batch command's are."""
    plan, cluster = write_inputs(tmp_path)
    command = [sys.executable, "-m", "placer.cli", "extender", "--host", "127.0.0.1"]
    command += ["--port", "0", "--plan", str(plan), "--cluster", str(cluster)]
    proc = subprocess.Popen(
        [*command, "--log-format", "json"], cwd=ROOT, stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stderr is not None
        entry = json.loads(proc.stderr.readline())
        assert (entry["level"], entry["logger"]) == ("info", "plugins.extender.sources")
        assert entry["msg"].startswith(f"plan {plan}: ")
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_cli_bad_plan_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "plan.json"
    bad.write_text('{"jobsets": []}', encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "placer.cli", "extender", "--port", "0", "--plan", str(bad)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr == f"placer: error: {bad}: solver: not a placer plan: Field required\n"


def _imports(path: Path) -> list[tuple[str, bool]]:
    """(module, at module level) for every import in a file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top = {id(node) for node in tree.body}
    found: list[tuple[str, bool]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(a.name, id(node) in top) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.append((node.module, id(node) in top))
    return found


def test_placer_imports_the_extender_only_lazily() -> None:
    for path in (ROOT / "placer").rglob("*.py"):
        for module, top_level in _imports(path):
            if module.startswith("plugins"):
                assert not top_level, f"{path} imports {module} at module level"


def test_the_extender_reaches_kubernetes_only_through_the_boundary() -> None:
    """No extender module imports the client; only `kube_source` (lazily imported by `service`)
    uses placer's Kubernetes boundary, so `--plan` mode never loads the client."""
    for path in (ROOT / "plugins" / "extender").glob("*.py"):
        modules = [m for m, _ in _imports(path)]
        uses_client = any(m == "kubernetes" or m.startswith("kubernetes.") for m in modules)
        assert not uses_client, path.name
        top_level = {m for m, top in _imports(path) if top}
        uses_boundary = "placer.model.kube.client" in top_level
        assert uses_boundary == (path.name == "kube_source.py"), path.name


def test_every_extender_module_declares_all() -> None:
    for path in (ROOT / "plugins" / "extender").glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {
            t.id
            for n in tree.body
            if isinstance(n, ast.Assign)
            for t in n.targets
            if isinstance(t, ast.Name)
        }
        assert "__all__" in names, path.name


@pytest.mark.parametrize(
    ("argv", "env", "expected"),
    [
        pytest.param([], {"POD_NAMESPACE": "ops"}, "ops", id="pod-namespace"),
        pytest.param([], {}, "placer-system", id="outside-a-pod"),
        pytest.param(["--ledger-namespace", "ml"], {"POD_NAMESPACE": "ops"}, "ml", id="flag"),
        pytest.param(["--plan", "plan.json"], {"POD_NAMESPACE": "ops"}, None, id="plan-file"),
    ],
)
def test_watch_mode_watches_the_ledger_where_the_controller_keeps_it_by_default(
    argv: list[str],
    env: dict[str, str],
    expected: str | None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without the flag the watch uses the controller's default namespace ($POD_NAMESPACE, the
    service account's, else placer-system), so reservations are never silently unwatched; a
    plan file carries its own reservations."""
    import placer.controller.act.lease as lease
    import plugins.extender.service as service

    monkeypatch.delenv("POD_NAMESPACE", raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(lease, "_SA_NAMESPACE", Path("/nonexistent/namespace"))
    seen: list[ServiceOptions] = []
    monkeypatch.setattr(service, "serve", lambda options, announce: seen.append(options))
    assert main(["extender", *argv]) == 0
    assert seen[0].ledger_namespace == expected


def test_ledger_namespace_with_a_plan_file_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["extender", "--plan", "p.json", "--ledger-namespace", "ml"]) == 2
    assert "--ledger-namespace: --ledger-namespace is for watch mode" in capsys.readouterr().err
