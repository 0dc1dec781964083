"""`--map FILE.html|FILE.png` for `plan`, `explain` and `capacity`: the flag and the drawing.

Kept apart from the command modules so each needs three lines: `add_map_arg(parser)`, then
`check_map_arg(args)` before any work (a wrong extension or missing matplotlib fails in a
moment, not after a solve) and `draw_map(...)` once the plan is made.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Collection, Sequence

from placer.model.cluster import ClusterSnapshot
from placer.model.plan import Plan
from placer.model.workload import JobSetRequest
from placer.render.maps.file import check_map_path, write_map
from placer.render.maps.fleet_map import build_fleet_map

__all__ = ["add_map_arg", "check_map_arg", "draw_map"]


def add_map_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--map",
        metavar="FILE",
        help="also draw the fleet with the plan to FILE.html (self-contained) or FILE.png "
        "(needs the `map` extra: matplotlib)",
    )


def check_map_arg(args: argparse.Namespace) -> None:
    """Fail now, with one line, if `--map` names a file placer cannot draw."""
    path = getattr(args, "map", None)
    if path:
        check_map_path(path)


def draw_map(
    args: argparse.Namespace,
    snapshot: ClusterSnapshot,
    plan: Plan | None,
    jobsets: Sequence[JobSetRequest],
    *,
    title: str,
    stranded: Collection[str] | None = None,
    highlight: str | None = None,
) -> None:
    """Write the map `--map` asks for (nothing without the flag); a note goes to stderr."""
    path = getattr(args, "map", None)
    if not path:
        return
    keys = [r.exclusive_key for js in jobsets for r in js.replicated_jobs if r.exclusive_key]
    fleet = build_fleet_map(
        snapshot,
        plan,
        levels=tuple(getattr(args, "levels", None) or ()),
        keys=keys,
        stranded=stranded,
        title=title,
        highlight=highlight,
    )
    written = write_map(fleet, path)
    print(
        f"placer: wrote map {written} ({fleet.hosts} hosts, {len(fleet.jobsets)} JobSets)",
        file=sys.stderr,
    )
