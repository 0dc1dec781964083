"""Placement map at fleet scale: how long building and writing the map take; files to look at.

Generates a fleet (the scaling benchmark's TPU pool fleet, or the mixed TPU/H100/GB200 `hetero`
scenario), plans it with a greedy policy (the map, not the solver, is measured), then times the
three steps `--map` adds to a command: the layout (`build_fleet_map`), the HTML and the PNG.
The files are kept in `--out` so a person can judge readability; figures go to stdout as a
Markdown table row and, with `--results FILE`, are appended to that file.

    python -m benchmarks.map_render --fleet tpu --nodes 10000 --out /tmp/placer-map
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from benchmarks.reporting.measure import machine_info
from benchmarks.scaling import HOSTS_PER_POOL
from benchmarks.worlds.kubectl_export import write_scenario
from benchmarks.worlds.scenarios import build_tpu_pool_fleet, hetero
from placer.model.jobset.parse import load_jobsets
from placer.model.options import SolveOptions
from placer.model.snapshots.load import load_snapshot
from placer.render.maps.fleet_map import build_fleet_map
from placer.render.maps.html import render_map_html
from placer.render.maps.png import write_map_png
from placer.solver.registry import get_solver

__all__ = ["main"]

T = TypeVar("T")

HETERO_NODES_PER_SIZE = 284
"""Nodes of `hetero(seed, 1)`; the scenario scales linearly with its size."""


def _generate(fleet: str, nodes: int, seed: int, root: Path) -> tuple[Path, Path]:
    if fleet == "tpu":
        sc = build_tpu_pool_fleet(seed, max(3, round(nodes / HOSTS_PER_POOL)), nodes // 30)
    else:
        sc = hetero(seed, nodes / HETERO_NODES_PER_SIZE)
    return write_scenario(sc.cluster, sc.queue, root / f"{fleet}-{nodes}")


class _Timer:
    """Wall and CPU seconds per step; CPU time is the steadier figure on a shared machine."""

    def __init__(self) -> None:
        self.wall: dict[str, float] = {}
        self.cpu: dict[str, float] = {}

    def run(self, name: str, step: Callable[[], T]) -> T:
        wall, cpu = time.perf_counter(), time.process_time()
        result = step()
        self.wall[name] = time.perf_counter() - wall
        self.cpu[name] = time.process_time() - cpu
        return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.map_render")
    parser.add_argument("--fleet", choices=("tpu", "hetero"), default="tpu")
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=4)
    parser.add_argument("--solver", default="largest-first")
    parser.add_argument("--out", type=Path, required=True, help="directory for inputs and maps")
    parser.add_argument("--results", type=Path, help="append the Markdown row to this file")
    args = parser.parse_args(argv)

    cluster, jobsets = _generate(args.fleet, args.nodes, args.seed, args.out)
    snapshot = load_snapshot([str(cluster)])
    requests = load_jobsets([str(jobsets)], priorities=snapshot.priorities)
    plan = get_solver(args.solver).solve(snapshot, requests, SolveOptions())
    keys = [r.exclusive_key for js in requests for r in js.replicated_jobs if r.exclusive_key]

    import matplotlib  # noqa: F401  imported before timing: the PNG step should not pay for it

    html_path = args.out / f"{args.fleet}-{args.nodes}.html"
    png_path = args.out / f"{args.fleet}-{args.nodes}.png"
    title = f"placer plan --solver {args.solver}: {args.fleet} fleet, seed {args.seed}"
    timer = _Timer()
    fleet = timer.run("layout", lambda: build_fleet_map(snapshot, plan, keys=keys, title=title))
    timer.run("html", lambda: html_path.write_text(render_map_html(fleet), encoding="utf-8"))
    timer.run("png", lambda: write_map_png(fleet, png_path))

    info = machine_info()
    cells = " | ".join(
        f"{timer.wall[k]:.2f} / {timer.cpu[k]:.2f}" for k in ("layout", "html", "png")
    )
    row = (
        f"| {args.fleet} | {len(snapshot.nodes)} | {fleet.domains} | {len(fleet.blocks)} | "
        f"{len(fleet.jobsets)} | {cells} | {html_path.stat().st_size / 1e6:.1f} | "
        f"{png_path.stat().st_size / 1e6:.2f} |"
    )
    print(f"machine: {info.get('cpu')}, nproc {info.get('nproc')}; files in {args.out}")
    print(row)
    if args.results:
        with open(args.results, "a") as f:
            f.write(row + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
