"""Command-line pieces shared by the commands that plan: cluster and solver flags, input loading.

`plan`, `explain` and `capacity` all read a cluster and JobSets and run a solver; keeping the
flags and the loading here means they spell every flag the same way, and every input problem
becomes one `InputError` line (exit 2) instead of a traceback. Typical use in a command module:

    add_cluster_args(parser); add_solver_args(parser); add_jobset_args(parser)
    ...
    snapshot, jobsets = load_inputs(args)
    plan = run_solver(args, snapshot, jobsets)
"""

from __future__ import annotations

import argparse
import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import yaml
from pydantic import ValidationError

from placer.commands.flags.argtypes import label_keys, number, whole_number
from placer.commands.flags.preemption import preemption_from_args
from placer.model.cluster import ClusterSnapshot
from placer.model.errors import InputError
from placer.model.options import SolveOptions
from placer.model.plan import Plan
from placer.model.read.files import check_input_file
from placer.model.read.limits import MAX_WORKERS, SEED_MAX
from placer.model.workload import JobSetRequest
from placer.solver.registry import SOLVER_NAMES

if TYPE_CHECKING:  # the live queue imports the Kubernetes client: only when live
    from placer.model.jobset.live_queue import LiveQueue

__all__ = [
    "LOAD_PHASE",
    "add_cluster_args",
    "add_jobset_args",
    "add_solver_args",
    "load_cluster",
    "load_inputs",
    "load_live_queue_args",
    "options_from_args",
    "run_solver",
]

log = logging.getLogger(__name__)

LOAD_PHASE = "load"
"""Name of the phase `run_solver` adds to the solver report: reading the cluster and the JobSets."""

_DEFAULTS = SolveOptions()

T = TypeVar("T")


def add_cluster_args(parser: argparse.ArgumentParser) -> None:
    """Where the cluster comes from (exactly one of --cluster / --kubeconfig) and how to read it.

    Sets `args.cluster` (list of paths, from a repeatable flag, or None), `args.kubeconfig`
    (path or None), `args.levels` (tuple or None) and `args.extended_resource_toleration` (bool).
    """
    group = parser.add_argument_group("cluster")
    source = group.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--cluster",
        metavar="PATH",
        action="append",
        help="cluster snapshot file, repeatable: `kubectl get nodes,pods,priorityclasses,jobsets "
        "-A -o json` output (nodes, pods and PriorityClasses may be separate files) or placer's "
        "compact cluster description",
    )
    source.add_argument(
        "--kubeconfig",
        metavar="PATH",
        help="read a live cluster through this kubeconfig instead of --cluster",
    )
    group.add_argument(
        "--levels",
        metavar="KEY,KEY,...",
        type=label_keys,
        help="topology levels, node label keys coarse to fine (default: the snapshot's, else the "
        "JobSets' exclusive and locality keys, then kubernetes.io/hostname)",
    )
    group.add_argument(
        "--no-extended-resource-toleration",
        dest="extended_resource_toleration",
        action="store_false",
        help="do not model the ExtendedResourceToleration admission plugin (pods then need "
        "explicit tolerations for accelerator taints such as google.com/tpu)",
    )


def add_search_args(group: argparse._ArgumentGroup) -> None:
    """CP-SAT's budget and workers, for every command that runs the CP-SAT planner."""
    group.add_argument(
        "--time-limit",
        metavar="SECONDS",
        type=number(0, above=True),
        default=_DEFAULTS.time_limit_s,
        help="wall-clock budget of the whole CP-SAT solve, model building included; search "
        "stops when it is spent and the best plan found is returned (default "
        f"{_DEFAULTS.time_limit_s:g})",
    )
    group.add_argument(
        "--workers",
        metavar="N",
        type=whole_number(0, MAX_WORKERS),
        default=_DEFAULTS.workers,
        help="CP-SAT search workers; 0 = CP-SAT's portfolio of 8 whatever the cores (default)",
    )


def add_solver_args(parser: argparse.ArgumentParser) -> None:
    """Which solver and its settings; defaults come from `SolveOptions`, so they live once."""
    group = parser.add_argument_group("solver")
    group.add_argument(
        "--solver",
        choices=SOLVER_NAMES,
        default="cpsat",
        help="cpsat (default, joint optimum), first-fit (upstream JobSet), "
        "best-fit (Kueue TAS BestFit), largest-first (strong greedy)",
    )
    add_search_args(group)
    group.add_argument(
        "--seed",
        metavar="N",
        type=whole_number(0, SEED_MAX),
        default=_DEFAULTS.seed,
        help=f"CP-SAT random seed (default {_DEFAULTS.seed})",
    )
    group.add_argument(
        "--queue",
        choices=("priority", "strict-fifo"),
        default=_DEFAULTS.queue,
        help="strict-fifo admits a JobSet only if every earlier one of its priority "
        "tier is admitted (default priority)",
    )
    group.add_argument(
        "--export-model",
        metavar="PATH",
        dest="export_model",
        help="write each CP-SAT stage's model, objective included, to PATH with the stage "
        "before the extension (model.pbtxt -> model.01-tier-0.pbtxt, ...; *txt = text proto); "
        "with --schedule cpsat the schedule's model first, as model.00-schedule.pbtxt",
    )


def add_jobset_args(parser: argparse.ArgumentParser) -> None:
    """The JobSet manifests to plan, as `args.jobsets`."""
    parser.add_argument(
        "jobsets",
        metavar="JOBSETS",
        nargs="+",
        help="JobSet manifest files or directories (multi-document YAML and `kind: List` accepted)",
    )


def options_from_args(args: argparse.Namespace) -> SolveOptions:
    """SolveOptions from parsed flags; flags a command did not register keep their defaults."""
    levels = getattr(args, "levels", None)
    return SolveOptions(
        time_limit_s=getattr(args, "time_limit", _DEFAULTS.time_limit_s),
        workers=getattr(args, "workers", _DEFAULTS.workers),
        seed=getattr(args, "seed", _DEFAULTS.seed),
        queue=getattr(args, "queue", _DEFAULTS.queue),
        extended_resource_toleration=getattr(args, "extended_resource_toleration", True),
        levels=tuple(levels) if levels else (),
        export_model_path=getattr(args, "export_model", None),
        preemption=preemption_from_args(args),
    )


def _check_paths(paths: Sequence[str], what: str) -> list[str]:
    """Fail early, naming the path, so parsers never turn a typo into a traceback."""
    for p in paths:
        if not Path(p).exists():
            raise InputError(f"no such file or directory ({what})", source=p, code="missing-file")
    return [str(p) for p in paths]


def _guarded(load: Callable[[], T], sources: Sequence[str]) -> T:
    """Run a loader, converting stray third-party errors into one-line InputErrors.

    The loaders raise InputError themselves; this is the safety net at the CLI boundary for what
    slips through (an unreadable file, a YAML error, a model validation error).
    """
    where = ", ".join(sources)
    try:
        return load()
    except InputError:
        raise
    except yaml.YAMLError as e:
        first = " ".join(str(e).split())
        raise InputError(f"invalid YAML: {first}", source=where, code="yaml") from e
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read: {e}", source=where, code="read") from e
    except ValidationError as e:
        errs = e.errors()
        loc = ".".join(str(x) for x in errs[0]["loc"]) if errs else ""
        msg = errs[0]["msg"] if errs else str(e)
        raise InputError(msg, source=where, field=loc, code="invalid") from e


def load_cluster(args: argparse.Namespace) -> ClusterSnapshot:
    """The snapshot named by --cluster, or the live cluster behind --kubeconfig."""
    kubeconfig = getattr(args, "kubeconfig", None)
    if kubeconfig:
        check_input_file(kubeconfig, field="--kubeconfig")
        # the kubernetes client: imported only when live
        from placer.model.snapshots.live import load_live_snapshot

        return _guarded(lambda: load_live_snapshot(kubeconfig), [kubeconfig])
    paths = _check_paths(getattr(args, "cluster", None) or [], "cluster snapshot")
    if not paths:
        raise InputError(
            "give a cluster with --cluster PATH or --kubeconfig PATH",
            field="--cluster",
            code="usage",
        )
    from placer.model.snapshots.load import load_snapshot

    return _guarded(lambda: load_snapshot(paths), paths)


def load_live_queue_args(
    args: argparse.Namespace, snapshot: ClusterSnapshot, jobsets: Sequence[JobSetRequest]
) -> tuple[list[JobSetRequest], LiveQueue]:
    """With --kubeconfig: the JobSets given, then the cluster's pending ones not given (files win),
    numbered on in queue order; and what Kueue still owes each (model/jobset/live_queue.py)."""
    from placer.model.jobset.live_queue import load_live_queue
    from placer.model.whatif import running_jobsets

    kubeconfig = str(args.kubeconfig)
    queue = _guarded(
        lambda: load_live_queue(
            kubeconfig,
            running_jobsets(snapshot),
            snapshot.priorities,
        ),
        [kubeconfig],
    )
    given = {js.key for js in jobsets}
    extra = [js for js in queue.jobsets if js.key not in given]
    merged = [
        *jobsets,
        *(js.model_copy(update={"order": len(jobsets) + i}) for i, js in enumerate(extra)),
    ]
    return merged, queue


def load_inputs(args: argparse.Namespace) -> tuple[ClusterSnapshot, list[JobSetRequest]]:
    """Read the cluster, then the JobSets (priority classes resolve through the snapshot's)."""
    jobset_paths = _check_paths(getattr(args, "jobsets", None) or [], "JobSet manifests")
    snapshot = load_cluster(args)
    from placer.model.jobset.parse import load_jobsets

    jobsets = _guarded(
        lambda: load_jobsets(jobset_paths, priorities=snapshot.priorities),
        jobset_paths,
    )
    from placer.model.kueue.annotations import check_topology_levels

    check_topology_levels(jobsets, getattr(args, "levels", None) or snapshot.levels)
    return snapshot, list(jobsets)


def run_solver(
    args: argparse.Namespace,
    snapshot: ClusterSnapshot,
    jobsets: Sequence[JobSetRequest],
    *,
    load_seconds: float | None = None,
) -> Plan:
    """Solve with the solver named by --solver; `load_seconds` is recorded as the `load` phase."""
    from placer.commands.flags.timing import time_policy_from_args
    from placer.solver.registry import get_solver

    options = options_from_args(args).model_copy(
        update={"time": time_policy_from_args(args, snapshot.priority_classes)}
    )
    solver = get_solver(
        getattr(args, "solver", "cpsat"), time_policy=options.time, never_check=True
    )
    started = time.perf_counter()
    plan = solver.solve(snapshot, jobsets, options)
    log.debug("solver %s returned in %.3f s", solver.name, time.perf_counter() - started)
    if options.preemption.active and solver.name != "cpsat":
        note = f"--preemption: {solver.name} never preempts (only cpsat chooses victims)"
        plan = plan.model_copy(
            update={"solver": plan.solver.model_copy(update={"notes": [*plan.solver.notes, note]})}
        )
    if load_seconds is None:
        return plan
    phases = {LOAD_PHASE: round(load_seconds, 6), **plan.solver.phases}
    return plan.model_copy(update={"solver": plan.solver.model_copy(update={"phases": phases})})
