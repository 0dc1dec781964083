"""`placer explain`: why a JobSet is not placed, what collides, and what would make it fit.

Plans the same snapshot and queue as `placer plan` (same flags, same solver), then explains one
JobSet: counts by reason per replicated job, a minimal set of conflicting requirements (CP-SAT
assumptions) and remedies, each checked by planning again. With --kubeconfig the cluster's pending
JobSets join the queue (model/jobset/live_queue.py) and a JobSet that Kueue has not given quota yet
is said to wait for Kueue, with when it would start once it has. Exit 0 with an explanation (placed
or not); exit 2 on bad input, through `PlacerError` in `placer.cli`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from placer.commands.flags.argtypes import whole_number
from placer.commands.flags.map import add_map_arg, check_map_arg, draw_map
from placer.commands.flags.planning import (
    add_cluster_args,
    add_solver_args,
    load_inputs,
    load_live_queue_args,
    options_from_args,
)
from placer.commands.flags.preemption import add_preemption_args
from placer.commands.flags.timing import add_time_args, time_policy_from_args
from placer.commands.flags.whatif import add_whatif_args, apply_whatif_args
from placer.commands.output.reports import add_output_arg, as_yaml, output_width, progress_for
from placer.model.errors import InputError
from placer.model.messages import echo, printable_lines
from placer.model.options import TimePolicy
from placer.model.preemption import PreemptionPolicy
from placer.model.workload import JobSetRequest
from placer.render.explain import render_explanation, render_explanation_json

if TYPE_CHECKING:  # the live queue imports the Kubernetes client: only when live
    from placer.model.jobset.live_queue import LiveQueue

__all__ = ["register", "run"]

FORMATS = ("table", "wide", "json", "yaml")
KUEUE_NO_PREEMPTION = (
    "--preemption off: the JobSet is Kueue's, and Kueue owns preemption (placer never preempts "
    "for a Kueue-managed Workload)"
)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "explain",
        help="why a JobSet is not placed, and what would make it fit",
        description="Plan the queue as `placer plan` would, then explain one JobSet: domains by "
        "reason per replicated job, a minimal set of conflicting requirements, and remedies "
        "checked by re-planning.",
    )
    add_cluster_args(parser)
    add_solver_args(parser)
    add_whatif_args(parser)
    add_time_args(parser)
    add_preemption_args(parser)
    add_map_arg(parser)
    add_output_arg(
        parser,
        FORMATS,
        "table (default; repeated reasons grouped, lines cut to the terminal), wide (lines not "
        "cut), or json/yaml: every reason, conflict and remedy",
    )
    parser.add_argument(
        "--no-remedies",
        dest="remedies",
        action="store_false",
        help="skip the search for remedies (it re-plans the queue several times)",
    )
    parser.add_argument(
        "--replans",
        metavar="N",
        type=whole_number(0),
        default=24,
        help="most re-plans the remedy search may run (default 24)",
    )
    parser.add_argument(
        "jobsets",
        metavar="JOBSETS",
        nargs="*",
        help="JobSet manifest files or directories: the queue, as for `placer plan`",
    )
    parser.add_argument(
        "target",
        metavar="NAMESPACE/NAME",
        help="the JobSet to explain (pending in JOBSETS or, with --kubeconfig, in the "
        "cluster; or running on the cluster)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from placer.solver.explain import ExplainSettings, explain_jobset, find_key, find_target

    check_map_arg(args)
    _check_target(args.target)
    with progress_for(args) as progress:
        progress.phase("load")
        snapshot, jobsets = load_inputs(args)
        policy = time_policy_from_args(args, snapshot.priority_classes)
        kueue = ""
        if args.kubeconfig:
            jobsets, queue = load_live_queue_args(args, snapshot, jobsets)
            refused = find_key(queue.unplannable, args.target)
            if refused is not None and find_target(jobsets, args.target) is None:
                raise queue.unplannable[refused]  # why it can never run: its manifest's error
            jobsets, kueue, policy = _as_kueue_has_it(args.target, jobsets, queue, policy)
        snapshot, jobsets, notes = apply_whatif_args(args, snapshot, jobsets)
        options = options_from_args(args).model_copy(update={"time": policy})
        if kueue and options.preemption.active:
            options = options.model_copy(update={"preemption": PreemptionPolicy()})
            notes = [*notes, KUEUE_NO_PREEMPTION]
        explanation = explain_jobset(
            snapshot,
            jobsets,
            args.target,
            options,
            settings=ExplainSettings(
                solver=args.solver, remedies=args.remedies, replan_budget=args.replans
            ),
            whatif=notes,
            progress=progress,
        )
        if kueue:
            explanation = explanation.model_copy(update={"kueue": kueue})
    title = f"placer explain {explanation.jobset}: {explanation.status}"
    draw_map(args, snapshot, explanation.plan, jobsets, title=title, highlight=explanation.jobset)
    if args.format == "json":
        sys.stdout.write(render_explanation_json(explanation))
    elif args.format == "yaml":
        sys.stdout.write(as_yaml(render_explanation_json(explanation)))
    else:
        sys.stdout.write(
            printable_lines(render_explanation(explanation, width=output_width(args.format)))
        )
    return 0


def _as_kueue_has_it(
    target: str, jobsets: list[JobSetRequest], queue: LiveQueue, policy: TimePolicy
) -> tuple[list[JobSetRequest], str, TimePolicy]:
    """The queue as placer's Kueue admission check plans it: JobSets whose Workload has no
    quota yet start only once Kueue says, so they are left out, all but the target (explained
    as if its quota were reserved now); what Kueue still owes the target; and, when Kueue
    manages it, time-aware planning as the controller runs it under --kueue-admission-check
    (`--reservations head` unless asked otherwise), so the expected start is the check's."""
    kept = [js for js in jobsets if js.key == target or js.key not in queue.quota_waiting]
    kueue = queue.kueue.get(target, "")
    if kueue and not policy.active:
        policy = policy.model_copy(update={"reservations": "head"})
    return kept, kueue, policy


def _check_target(target: str) -> None:
    """A forgotten NAMESPACE/NAME leaves the last JobSet path in its place: say so."""
    if Path(target).exists():
        raise InputError(
            f"the JobSet to explain is missing: {echo(target)} is a file or directory; give "
            "NAMESPACE/NAME after the JobSet files",
            field="NAMESPACE/NAME",
            code="usage",
        )
