"""`--map FILE` on `plan`, `explain` and `capacity`: the file is written, bad requests fail fast."""

from __future__ import annotations

import importlib.util
import json
import re
from importlib.machinery import ModuleSpec
from pathlib import Path

import pytest

from tests.helpers.cli import run_cli

ROOT = Path(__file__).resolve().parents[2]
CLUSTERS = ROOT / "examples" / "clusters"
JOBSETS = ROOT / "examples" / "jobsets"
FAST = ["--workers", "1", "--time-limit", "10"]


_run = run_cli


def _cells(html: str) -> dict[str, str]:
    """host name -> its `data-g` (JobSet, `others`, or state)."""
    return {
        tip.split("\n", 1)[0]: group
        for group, tip in re.findall(
            r'<rect class="h"[^>]* data-g="([^"]+)" data-t="([^"]+)"', html
        )
    }


def test_plan_writes_an_html_map_beside_its_table(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    target = tmp_path / "out" / "map.html"
    code, out, err = _run(
        capsys,
        "plan",
        *FAST,
        "--cluster",
        CLUSTERS / "tpu-v5e-v6e.yaml",
        "--map",
        target,
        JOBSETS / "queue",
    )
    assert code == 0, err
    assert "JOBSET" in out
    assert f"wrote map {target}" in err
    cells = _cells(target.read_text())
    assert len(cells) == 36
    assert cells["gke-tpu-v5e-2x4-pool-2-host-1"] == "notready"
    assert cells["gke-tpu-v6e-4x4-pool-4-host-2"] == "cordoned"
    assert cells["gke-tpu-v5e-2x4-pool-0-host-0"] == "research/finetune-v5e"


def test_explain_map_colors_the_explained_jobset_first(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    target = tmp_path / "explain.html"
    code, out, err = _run(
        capsys,
        "explain",
        *FAST,
        "--no-remedies",
        "--format",
        "json",
        "--cluster",
        CLUSTERS / "tpu-v5e-v6e.yaml",
        "--map",
        target,
        JOBSETS / "queue",
        "prod/llm-sft",
    )
    assert code == 0, err
    html = target.read_text()
    assert "placer explain prod/llm-sft: placed" in html
    first = re.search(r'<div class="legend"><h2>JobSets</h2><div data-g="([^"]+)"', html)
    assert first is not None and first.group(1) == "prod/llm-sft"
    document = json.loads(out)
    assert document["jobset"] == "prod/llm-sft" and "plan" not in document


def test_capacity_map_marks_the_hosts_the_count_found_stranded(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    target = tmp_path / "capacity.html"
    code, out, err = _run(
        capsys,
        "capacity",
        *FAST,
        "--format",
        "json",
        "--cluster",
        CLUSTERS / "h100-h200.yaml",
        "--map",
        target,
        JOBSETS / "h100-training.yaml",
    )
    assert code == 0, err
    cells = _cells(target.read_text())
    stranded = [name for name, group in cells.items() if group == "stranded"]
    report = json.loads(out)
    assert "mix_plan" not in report
    rows = {row["type"]: row for row in report["domain_types"]}
    assert all("stranded_nodes" not in row for row in rows.values())
    # 8 GPUs per H100 host, all free on the stranded ones; the H200 hosts all mismatch the shape
    assert sum(1 for n in stranded if "a3mega" in n) * 8 == rows["a3-megagpu-8g x4"]["stranded"]
    assert rows["a3-megagpu-8g x4"]["stranded"] > 0
    assert all(cells[n] in ("stranded", "cordoned", "notready") for n in cells if "a3ultra" in n)


def test_capacity_map_is_refused_with_cheapest(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = _run(
        capsys,
        "capacity",
        "--cheapest",
        "--catalog",
        ROOT / "examples" / "catalog.yaml",
        "--map",
        tmp_path / "m.html",
        JOBSETS / "queue",
    )
    assert code == 2
    assert err.count("\n") == 1 and "--map: not available with --cheapest" in err


@pytest.mark.parametrize("name", ["map.svg", "map", "map.PNGX"])
def test_unknown_map_format_is_one_line_exit_2_before_any_work(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str
) -> None:
    # the cluster does not exist: the map check must come first to be the error reported
    code, out, err = _run(
        capsys, "plan", "--cluster", tmp_path / "missing.yaml", "--map", tmp_path / name, "x.yaml"
    )
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and "unknown map format" in err and "Traceback" not in err


def test_png_without_matplotlib_is_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, package: str | None = None) -> ModuleSpec | None:
        return None if name == "matplotlib" else real(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    code, _, err = _run(
        capsys,
        "plan",
        "--cluster",
        CLUSTERS / "tpu-v5e-v6e.yaml",
        "--map",
        tmp_path / "map.png",
        JOBSETS / "tpu-v5e-multislice.yaml",
    )
    assert code == 2
    assert err.count("\n") == 1 and "pip install 'placer[map]'" in err
    assert not (tmp_path / "map.png").exists()


def test_plan_writes_a_png_map(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    target = tmp_path / "map.png"
    code, _, err = _run(
        capsys,
        "plan",
        *FAST,
        "--cluster",
        CLUSTERS / "gb200-nvl72.yaml",
        "--map",
        target,
        JOBSETS / "gb200-training.yaml",
    )
    assert code == 0, err
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
