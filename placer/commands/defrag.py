"""`placer defrag`: the fewest, cheapest moves of running JobSets that let blocked ones start.

Offline, on a snapshot and a queue. Running JobSets become movable by being given among the
JobSets (their manifests say how to place them again); a move restarts one whole in other free
domains now. The CP-SAT planner chooses (`--preemption` mode `defrag` of the model): blocked
JobSets started per priority tier first, then the fewest moves, then the cheapest (work lost
since the last checkpoint plus `--restart-cost`); a move that starts nothing is never made.
Exit 0 whenever a plan was made; exit 2 on bad input.
"""

from __future__ import annotations

import argparse
import sys
import time

from placer.commands.flags.argtypes import rfc3339
from placer.commands.flags.planning import (
    add_cluster_args,
    add_jobset_args,
    add_search_args,
    load_inputs,
    run_solver,
)
from placer.commands.flags.preemption import add_restart_cost_arg
from placer.commands.output.reports import add_output_arg, progress_for
from placer.render.defrag import render_defrag
from placer.render.document import render_json, render_yaml

__all__ = ["register", "run"]

FORMATS = ("table", "json", "yaml")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "defrag",
        help="the fewest, cheapest moves of running JobSets that let blocked ones start",
        description="Plan the queue allowing moves: a running JobSet given among JOBSETS may "
        "be restarted whole in other free domains now, when that lets blocked JobSets start. "
        "Blocked JobSets started (per priority tier) first, then the fewest moves, then the "
        "cheapest; a move that starts nothing is never proposed.",
    )
    add_cluster_args(parser)
    group = parser.add_argument_group("solver")
    add_search_args(group)
    add_restart_cost_arg(group, "a moved")
    group.add_argument(
        "--now",
        metavar="RFC3339",
        type=rfc3339,
        help="the instant the cost of a move is counted at (default: the wall clock)",
    )
    add_output_arg(
        parser, FORMATS, "table (default), or json/yaml: the plan document with the moves"
    )
    add_jobset_args(parser)
    parser.set_defaults(func=run, preemption="defrag", solver="cpsat")


def run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    with progress_for(args) as progress:
        progress.phase("load")
        snapshot, jobsets = load_inputs(args)
        progress.phase(f"solve (defrag, {len(jobsets)} JobSets)")
        plan = run_solver(args, snapshot, jobsets, load_seconds=time.perf_counter() - started)
    if args.format == "json":
        sys.stdout.write(render_json(plan))
    elif args.format == "yaml":
        sys.stdout.write(render_yaml(plan))
    else:
        sys.stdout.write(render_defrag(plan))
    return 0
