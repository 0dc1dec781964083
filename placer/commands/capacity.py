"""`placer capacity`: how many more copies fit, the largest mix, stranded accelerators; or, with
`--cheapest --catalog FILE`, the cheapest node pools on which every JobSet given fits at once.

The JobSets given are shapes: counted on the snapshot's free capacity, not planned first. What-if
flags apply to the snapshot before counting. Exit 0 with a report; exit 2 on bad input, through
`PlacerError` in `placer.cli`.
"""

from __future__ import annotations

import argparse
import sys

from placer.commands.flags.map import add_map_arg, check_map_arg, draw_map
from placer.commands.flags.planning import (
    add_cluster_args,
    add_jobset_args,
    add_solver_args,
    load_cluster,
    load_inputs,
    options_from_args,
)
from placer.commands.flags.whatif import add_whatif_args, apply_whatif_args
from placer.commands.output.reports import (
    add_output_arg,
    as_yaml,
    clip_lines,
    output_width,
    progress_for,
)
from placer.model.errors import InputError
from placer.model.messages import printable_lines
from placer.model.priorities import PriorityClasses
from placer.render.capacity import (
    render_capacity,
    render_cheapest,
    render_report_json,
)

__all__ = ["register", "run"]

FORMATS = ("table", "wide", "json", "yaml")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "capacity",
        help="how many more JobSets fit, stranded accelerators, cheapest node pools",
        description="For each JobSet shape: how many more copies fit now and what stops one "
        "more; the largest mix of the shapes that fits together; free and stranded accelerators "
        "per domain type. With --cheapest --catalog FILE: the cheapest node pools on which every "
        "JobSet fits at once (on top of --cluster, if given), and the plan on them.",
    )
    add_cluster_args(parser)
    # --cheapest may start from no cluster at all; load_cluster still insists otherwise
    for group in parser._mutually_exclusive_groups:
        group.required = False
    add_solver_args(parser)
    add_whatif_args(parser)
    add_map_arg(parser)
    parser.add_argument(
        "--cheapest",
        action="store_true",
        help="buy: the cheapest node pools from --catalog on which every JobSet fits at once",
    )
    parser.add_argument(
        "--catalog",
        metavar="FILE",
        help="node-pool catalogue (kind: NodePoolCatalog) for --cheapest",
    )
    add_output_arg(
        parser,
        FORMATS,
        "table (default; lines cut to the terminal), wide (lines not cut), or json/yaml",
    )
    add_jobset_args(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if getattr(args, "export_model", None):
        raise InputError(
            "capacity writes no CP-SAT model; --export-model is for plan and explain",
            field="--export-model",
            code="usage",
        )
    options = options_from_args(args)
    check_map_arg(args)
    if args.cheapest and args.map:
        raise InputError("not available with --cheapest", field="--map", code="usage")
    if args.cheapest:
        return _cheapest(args)
    if args.catalog:
        raise InputError("--catalog is only used with --cheapest", field="--catalog", code="usage")
    from placer.solver.capacity import capacity_report

    with progress_for(args) as progress:
        progress.phase("load")
        snapshot, jobsets = load_inputs(args)
        snapshot, jobsets, notes = apply_whatif_args(args, snapshot, jobsets)
        report = capacity_report(
            snapshot, jobsets, options, solver=args.solver, whatif=notes, progress=progress
        )
    stranded = [n for row in report.domain_types for n in row.stranded_nodes]
    draw_map(
        args,
        snapshot,
        report.mix_plan,
        jobsets,
        title="placer capacity: the largest mix (planned) and stranded hosts",
        stranded=stranded,
    )
    if args.format == "json":
        sys.stdout.write(render_report_json(report))
    elif args.format == "yaml":
        sys.stdout.write(as_yaml(render_report_json(report)))
    else:
        sys.stdout.write(
            printable_lines(clip_lines(render_capacity(report), output_width(args.format)))
        )
    return 0


def _cheapest(args: argparse.Namespace) -> int:
    from placer.model.jobset.parse import load_jobsets
    from placer.solver.capacity.catalog import load_catalog
    from placer.solver.capacity.cheapest import cheapest_pools

    if not args.catalog:
        raise InputError("--cheapest needs --catalog FILE", field="--catalog", code="usage")
    catalog = load_catalog([_existing(args.catalog, "--catalog")])
    base = None
    if args.cluster or args.kubeconfig:
        base = load_cluster(args)
    classes = {**catalog.priorityClasses, **(base.priority_classes if base else {})}
    paths = [_existing(p, "JOBSETS") for p in args.jobsets]
    default = base.default_priority_class if base else None
    never = frozenset(base.non_preempting_classes if base else ())
    jobsets = load_jobsets(paths, priorities=PriorityClasses(classes, default, never))
    notes: list[str] = []
    if base is not None:
        base, jobsets, notes = apply_whatif_args(args, base, jobsets)
    elif getattr(args, "whatifs", None):
        raise InputError(
            "what-if flags need --cluster", field="--drain/--add-pool/--remove", code="usage"
        )
    with progress_for(args) as progress:
        progress.phase(f"cheapest pools for {len(jobsets)} JobSets")
        report = cheapest_pools(
            catalog, jobsets, options_from_args(args), base=base, solver=args.solver, whatif=notes
        )
    if args.format == "json":
        sys.stdout.write(render_report_json(report))
    elif args.format == "yaml":
        sys.stdout.write(as_yaml(render_report_json(report)))
    else:
        width = output_width(args.format)
        sys.stdout.write(printable_lines(clip_lines(render_cheapest(report, jobsets), width)))
    return 0


def _existing(path: str, what: str) -> str:
    from pathlib import Path

    if not Path(path).exists():
        raise InputError(f"no such file or directory ({what})", source=path, code="missing-file")
    return path
