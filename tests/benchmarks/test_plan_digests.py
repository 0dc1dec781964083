"""`benchmarks.plan_digests`: a usage question writes nothing; a run writes one digest per plan."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from benchmarks.plan_digests import main
from benchmarks.worlds.scenarios import STATIC_BUILDERS
from placer.solver.registry import SOLVER_NAMES


def test_help_prints_usage_and_writes_no_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stopped:
        main(["--help"])
    assert stopped.value.code == 0
    assert "OUT.json" in capsys.readouterr().out
    assert list(tmp_path.iterdir()) == []


def test_a_run_writes_each_scenarios_plan_for_every_solver(tmp_path: Path) -> None:
    out = tmp_path / "digests.json"
    assert main([str(out)]) == 0
    # it silences the solvers' warnings while it runs, and only then (tests read logs after it)
    assert logging.root.manager.disable == logging.NOTSET
    digests = json.loads(out.read_text())
    assert len(digests) == (len(STATIC_BUILDERS) + 3) * len(SOLVER_NAMES)
    assert all(len(digest) == 12 for _, digest in digests.values())
