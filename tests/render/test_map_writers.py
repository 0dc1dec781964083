"""The placement map written for the bundled examples: one offline HTML file, and a PNG."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from placer.model.jobset.parse import load_jobsets
from placer.model.snapshots.load import load_snapshot
from placer.render.maps.fleet_map import FleetMap, build_fleet_map, tint
from placer.render.maps.html import render_map_html
from tests.strategies import solve_checked

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = [
    pytest.param("tpu-v5e-v6e.yaml", "queue", id="tpu-queue"),
    pytest.param("tpu-kubectl.json", "tpu-v5e-multislice.yaml", id="tpu-kubectl"),
    pytest.param("gb200-nvl72.yaml", "gb200-training.yaml", id="gb200"),
    pytest.param("h100-h200.yaml", "h100-training.yaml", id="h100-h200"),
]


def _example_map(cluster: str, jobsets: str) -> tuple[FleetMap, int]:
    snapshot = load_snapshot([str(ROOT / "examples" / "clusters" / cluster)])
    requests = load_jobsets(
        [str(ROOT / "examples" / "jobsets" / jobsets)], priorities=snapshot.priorities
    )
    plan = solve_checked("largest-first", snapshot, requests)
    keys = [r.exclusive_key for js in requests for r in js.replicated_jobs if r.exclusive_key]
    placed = {o.key for o in plan.jobsets if o.status != "unschedulable"}
    running = {js for n in snapshot.nodes for js in n.jobsets}
    fleet = build_fleet_map(snapshot, plan, keys=keys, title=f"{cluster} {jobsets}")
    assert set(fleet.jobsets) == placed | running
    assert placed, "every example plans something"
    return fleet, len(snapshot.nodes)


@pytest.mark.parametrize(("cluster", "jobsets"), EXAMPLES)
def test_html_is_one_offline_file_with_a_cell_per_host(cluster: str, jobsets: str) -> None:
    fleet, nodes = _example_map(cluster, jobsets)
    html = render_map_html(fleet)
    assert html.startswith("<!DOCTYPE html>")
    assert not re.search(r"https?://", html), "no network reference of any kind"
    assert not re.search(r"<script[^>]*\bsrc=|<link\b|@import|url\((?!#)", html)
    assert html.count('class="h"') == nodes
    legend = html.split('<div class="legend">', 1)[1].split("</div></div>", 1)[0]
    for js in fleet.jobsets:
        assert js in legend, js


@pytest.mark.parametrize(("cluster", "jobsets"), EXAMPLES)
def test_html_draws_running_solid_and_planned_hatched(cluster: str, jobsets: str) -> None:
    fleet, _ = _example_map(cluster, jobsets)
    html = render_map_html(fleet)
    cells = re.findall(r'<rect class="h"[^>]* fill="([^"]+)" data-g="([^"]+)"', html)
    kinds = {e.label: e for e in fleet.legend}
    running = {fill for fill, group in cells if group in kinds and kinds[group].kind == "running"}
    planned = {fill for fill, group in cells if group in kinds and kinds[group].kind == "planned"}
    assert planned and all(f.startswith("url(#p") for f in planned)
    assert all(f.startswith("#") for f in running)
    assert not running & planned
    for pattern in planned:
        pid = pattern[5:-1]
        assert re.search(rf'<pattern id="{pid}"[^>]*><rect [^>]*fill="#[0-9a-f]{{6}}"/>', html)


def test_planned_tint_is_lighter_than_its_color() -> None:
    assert tint("#1f77b4") != "#1f77b4"
    assert all(
        int(tint("#1f77b4")[i : i + 2], 16) > int("#1f77b4"[i : i + 2], 16) for i in (1, 3, 5)
    )


@pytest.mark.parametrize(("cluster", "jobsets"), EXAMPLES[:1] + EXAMPLES[2:3])
def test_png_is_a_valid_image_with_the_jobset_colors(
    cluster: str, jobsets: str, tmp_path: Path
) -> None:
    pytest.importorskip("matplotlib")
    from PIL import Image

    from placer.render.maps.png import write_map_png

    fleet, _ = _example_map(cluster, jobsets)
    path = write_map_png(fleet, tmp_path / "map.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with Image.open(path) as image:
        width, height = image.size
        assert 600 <= width <= 4000 and 300 <= height <= 4000
        pixels = {rgb for _, rgb in image.convert("RGB").getcolors(maxcolors=1 << 24) or []}
    running = [e.color for e in fleet.legend if e.kind == "running"]
    for color in running:
        rgb = tuple(int(color[i : i + 2], 16) for i in (1, 3, 5))
        assert rgb in pixels, f"running color {color} drawn"
