"""`placer plan`: read a cluster and pending JobSets, plan them, print the plan, emit patches.

Exit 0 whenever a plan was made, even if some JobSets are unschedulable (that is a result, not an
error); exit 2 on bad input, through `PlacerError` in `placer.cli`.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from placer.commands.flags.map import add_map_arg, check_map_arg, draw_map
from placer.commands.flags.planning import (
    add_cluster_args,
    add_jobset_args,
    add_solver_args,
    load_inputs,
    run_solver,
)
from placer.commands.flags.preemption import add_preemption_args
from placer.commands.flags.timing import add_time_args
from placer.commands.output.reports import TABLE_ROWS, add_output_arg, output_width, progress_for
from placer.model.errors import InputError
from placer.model.messages import printable_lines
from placer.render.document import render_json, render_yaml
from placer.render.emit import emit_files, write_files
from placer.render.table import render_table

__all__ = ["register", "run"]

FORMATS = ("table", "wide", "json", "yaml")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "plan",
        help="plan pending JobSets onto a cluster",
        description="Plan pending JobSets onto a cluster snapshot: exclusive domains per "
        "child Job, all-or-nothing per JobSet, priority first.",
    )
    add_cluster_args(parser)
    add_solver_args(parser)
    add_time_args(parser)
    add_preemption_args(parser)
    add_output_arg(
        parser,
        FORMATS,
        "table (default; summarized beyond 40 JobSets, lines cut to the terminal), wide (every "
        "row, nothing cut), or json/yaml: the plan document other tools read",
    )
    parser.add_argument(
        "--emit",
        metavar="DIR",
        help="write per child Job node-affinity patches (and node labels/taints "
        "for the node-selector strategy) under DIR",
    )
    add_map_arg(parser)
    add_jobset_args(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    check_map_arg(args)
    started = time.perf_counter()
    with progress_for(args) as progress:
        progress.phase("load")
        snapshot, jobsets = load_inputs(args)
        progress.phase(f"solve ({args.solver}, {len(jobsets)} JobSets)")
        plan = run_solver(args, snapshot, jobsets, load_seconds=time.perf_counter() - started)
    draw_map(args, snapshot, plan, jobsets, title="placer plan")
    if args.emit:
        root = Path(args.emit)
        try:
            written = write_files(root, emit_files(plan, jobsets, snapshot))
        except OSError as e:
            raise InputError(
                f"cannot write patches: {e.strerror or e}",
                source=str(root),
                field="--emit",
                code="emit",
            ) from e
        print(f"placer: wrote {len(written)} files under {root}", file=sys.stderr)
    if args.format == "json":
        sys.stdout.write(render_json(plan))
    elif args.format == "yaml":
        sys.stdout.write(render_yaml(plan))
    else:
        width = output_width(args.format)
        rows = TABLE_ROWS if width is not None else None
        sys.stdout.write(printable_lines(render_table(plan, jobsets, width=width, max_rows=rows)))
    return 0
