"""`placer controller`: run the in-cluster controller (or one pass of it with --once).

Exit codes:

- 0: a clean stop (SIGTERM, SIGINT), or a `--once` pass whose writes all succeeded;
- 1: leadership lost, or deposed (a newer leader claimed the placement ledger), or a write that
  still failed after its retries in `--once`;
- 2: bad flags or configuration, or an API error that no retry can fix (401, 403, a missing CRD),
  or a flag the cluster contradicts (`--default-duration CLASS=...` naming a PriorityClass it
  does not have, found after the first list): one line on stderr (through `placer.cli`);
- 3: the API server stayed unavailable (429, 5xx, connection errors) for all of `--retry-timeout`.

The controller works in a thread of its own; the main thread only waits for a signal or for the
work to end, so SIGTERM stops the process at once in every mode, even in the middle of a solve,
without waiting for the replan interval or a retry (a stop mid-cycle is safe: every write is
idempotent, see deploy/controller/README.md).
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

from placer.commands.flags.argtypes import number, whole_number
from placer.commands.flags.planning import add_solver_args, options_from_args
from placer.commands.flags.preemption import add_preemption_args
from placer.commands.flags.timing import (
    add_guard_arg,
    add_time_args,
    guard_s,
    time_policy_from_args,
)
from placer.commands.output.server_logs import add_log_format_arg, use_server_logs
from placer.model.durations import parse_go_duration
from placer.model.errors import ClusterError, InputError
from placer.model.preemption import DEFAULT_MAX_PER_DAY
from placer.model.read.files import check_input_file

__all__ = ["register", "run"]

log = logging.getLogger(__name__)

EXIT_UNAVAILABLE = 3
STOP_GRACE_S = 0.5
"""After a signal, how long the work thread may take to finish what it is doing."""


def _levels(text: str) -> tuple[str, ...]:
    levels = tuple(p.strip() for p in text.split(",") if p.strip())
    if not levels:
        raise argparse.ArgumentTypeError("expected node label keys, comma-separated")
    return levels


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "controller",
        help="run the in-cluster controller",
        description="Watch managed JobSets, plan pending ones together, and write the placement "
        "back: node affinity on gated pods (gate binding) or node labels and taints "
        "(node-labels binding).",
    )
    _add_placement_args(parser)
    add_solver_args(parser)
    add_time_args(parser, planning_instant=False)
    _add_preemption_limit(add_preemption_args(parser))
    _add_loop_args(parser.add_argument_group("loop"))
    _add_kueue_args(parser.add_argument_group("kueue"))
    _add_operation_args(parser.add_argument_group("operation"))
    parser.set_defaults(func=run)


def _add_placement_args(parser: argparse.ArgumentParser) -> None:
    """Which cluster and JobSets, how placements are bound, what a pass does."""
    parser.add_argument(
        "--kubeconfig",
        metavar="PATH",
        help="kubeconfig file (default: in-cluster config, else ~/.kube/config)",
    )
    parser.add_argument(
        "--namespace",
        metavar="NS",
        action="append",
        dest="namespaces",
        help="manage JobSets in this namespace only; repeatable (default: all)",
    )
    parser.add_argument(
        "--binding",
        choices=("gate", "node-labels"),
        default="gate",
        help="gate (default): JobSets whose pod templates carry the "
        "placer.dev/placement scheduling gate; node-labels: JobSets with the "
        "exclusive-topology and node-selector annotations",
    )
    parser.add_argument(
        "--once",
        action="store_true",
        help="run one full reconcile pass and exit (no leader election)",
    )
    parser.add_argument("--dry-run", action="store_true", help="plan and log; write nothing")
    parser.add_argument(
        "--pin-nodes",
        action="store_true",
        help="gate binding: also pin each pod to its planned node",
    )
    parser.add_argument(
        "--levels",
        metavar="KEY,KEY,...",
        type=_levels,
        help="topology levels, node label keys coarse to fine",
    )
    parser.add_argument(
        "--no-extended-resource-toleration",
        dest="extended_resource_toleration",
        action="store_false",
        help="do not model the ExtendedResourceToleration admission plugin",
    )


def _add_preemption_limit(group: argparse._ArgumentGroup) -> None:
    """The controller's own preemption flag (the others are `placer plan`'s)."""
    group.add_argument(
        "--max-preemptions-per-day",
        metavar="N",
        type=whole_number(0),
        default=DEFAULT_MAX_PER_DAY,
        help="with --preemption: a JobSet preempted N times in the last 24 hours (its "
        f"placer.dev/preempted-at stamps) is not preempted again (default {DEFAULT_MAX_PER_DAY})",
    )


def _add_loop_args(loop: argparse._ArgumentGroup) -> None:
    """When cycles run: the gather window, retries and relists, which pods are watched."""
    loop.add_argument(
        "--window",
        metavar="SECONDS",
        type=number(0),
        default=2.0,
        help="gather pending JobSets this long before planning (default 2)",
    )
    loop.add_argument(
        "--replan-interval",
        metavar="SECONDS",
        type=number(0),
        default=60.0,
        help="retry unschedulable JobSets at least this often (default 60)",
    )
    loop.add_argument(
        "--resync-interval",
        metavar="SECONDS",
        type=number(0),
        default=600.0,
        help="relist everything this often (default 600)",
    )
    loop.add_argument(
        "--pod-scope",
        choices=("all", "jobsets"),
        default="all",
        help="watch all pods (exact free capacity, default) or only JobSet pods",
    )


def _add_kueue_args(kueue: argparse._ArgumentGroup) -> None:
    """Serving Kueue's AdmissionChecks."""
    kueue.add_argument(
        "--kueue-admission-check",
        action="store_true",
        help="serve Kueue AdmissionChecks whose controllerName is placer.dev/placement: a "
        "Workload with reserved quota is admitted only with a placement (plans time-aware)",
    )
    kueue.add_argument(
        "--kueue-hold-quota",
        metavar="DURATION",
        default="5m",
        help="how long a Workload may hold reserved quota waiting for a placement before its "
        "check turns Retry, giving the quota back until its expected start (default 5m)",
    )


def _add_operation_args(ha: argparse._ArgumentGroup) -> None:
    """Running in a cluster: leader election, the ledger, retries, metrics, logs."""
    ha.add_argument(
        "--leader-elect",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="elect a leader on a Lease before reconciling (default on; off with --once)",
    )
    ha.add_argument("--lease-name", default="placer-controller", help="Lease name")
    ha.add_argument(
        "--ledger-namespace",
        metavar="NS",
        help="namespace of the placement ledger (ConfigMap placer-ledger), the same for every "
        "controller of the cluster (default: $POD_NAMESPACE or the pod's namespace, else "
        "placer-system)",
    )
    ha.add_argument(
        "--retry-timeout",
        metavar="SECONDS",
        type=number(0),
        default=30.0,
        help="keep retrying a first list that meets temporary API errors (429, 5xx, connection "
        "errors) this long before exiting 3 (default 30)",
    )
    ha.add_argument(
        "--lease-namespace",
        metavar="NS",
        help="Lease namespace (default: $POD_NAMESPACE or the pod's namespace)",
    )
    ha.add_argument("--identity", help="this replica's name in the Lease (default: hostname)")
    ha.add_argument(
        "--metrics-port",
        metavar="PORT",
        type=int,
        default=8080,
        help="serve Prometheus /metrics on this port; 0 disables (default 8080)",
    )
    ha.add_argument("--metrics-address", default="0.0.0.0", help="metrics bind address")
    ha.add_argument(
        "--extender-port",
        metavar="PORT",
        type=int,
        default=0,
        help="also serve the scheduler extender on this port (reads this cache)",
    )
    ha.add_argument(
        "--extender-address",
        metavar="A",
        default="0.0.0.0",
        help="the embedded extender's bind address",
    )
    add_guard_arg(ha)
    add_log_format_arg(ha)


def _config(args: argparse.Namespace, identity: str) -> Any:
    from placer.controller.act.lease import default_namespace
    from placer.controller.reconcile import ControllerConfig

    options = _options(args)
    if args.kueue_admission_check and options.preemption.active:
        raise InputError(
            "cannot be combined with --kueue-admission-check: under Kueue, Kueue preempts (by "
            "quota) and placer frees the domains of what it evicts",
            field="--preemption",
            code="usage",
        )
    return ControllerConfig(
        binding=args.binding,
        namespaces=tuple(sorted(set(args.namespaces or ()))),
        pin_nodes=args.pin_nodes,
        dry_run=args.dry_run,
        solver=args.solver,
        options=options,
        window_s=args.window,
        replan_s=args.replan_interval,
        resync_s=args.resync_interval,
        all_pods=args.pod_scope == "all",
        identity=identity,
        lease=f"{args.lease_namespace or default_namespace()}/{args.lease_name}",
        ledger_namespace=args.ledger_namespace or default_namespace(),
        list_retry_s=args.retry_timeout,
        kueue_admission_check=args.kueue_admission_check,
        kueue_hold_quota_s=parse_go_duration(args.kueue_hold_quota, field="--kueue-hold-quota"),
        max_preemptions_per_day=args.max_preemptions_per_day,
    )


def _options(args: argparse.Namespace) -> Any:
    """Solver options with the time-aware planning flags. The controller knows no PriorityClass
    before its first list, so `--default-duration CLASS=DURATION` stays by class name here (its
    durations checked now) and each cycle resolves it against the classes it lists."""
    options = options_from_args(args)
    return options.model_copy(update={"time": time_policy_from_args(args, None)})


def _summary(report: Any) -> str:
    executed = report.executed
    failed = len(executed.failed) if executed else 0
    dry = " (dry run)" if executed is None and report.writes else ""
    return (
        f"managed {len(report.managed)}, placed {len(report.planned.placed)}, "
        f"in force {len(report.review.in_force)}, "
        f"unschedulable {len(report.planned.unschedulable)}, "
        f"writes {len(report.writes)}{dry}, failed {failed}"
    )


def _work_in_thread(work: Callable[[threading.Event], Any], stop: threading.Event) -> None:
    """Run `work(stop)` in a daemon thread; return once it ends or `stop` is set (by a signal),
    giving it `STOP_GRACE_S` to finish. The main thread stays free to handle signals, even while
    the work is inside a long solver call."""
    done = threading.Event()

    def target() -> None:
        try:
            work(stop)
        finally:
            done.set()

    threading.Thread(target=target, daemon=True, name="controller").start()
    while not done.is_set() and not stop.is_set():
        done.wait(0.1)
    done.wait(STOP_GRACE_S)


def run(args: argparse.Namespace) -> int:
    if args.pin_nodes and args.binding != "gate":
        raise InputError("--pin-nodes needs --binding gate", field="--pin-nodes", code="usage")
    guard = guard_s(args)
    use_server_logs(args)
    from placer.controller.act.kube_adapter import KubeAdapter
    from placer.controller.act.leader import LeaderSettings, default_identity, run_elected
    from placer.controller.decide.records.ledger import Deposed
    from placer.controller.metrics import Metrics
    from placer.controller.reconcile import Controller

    identity = args.identity or default_identity()
    config = _config(args, identity)  # bad flags exit 2 before any connection
    if args.kubeconfig:
        check_input_file(args.kubeconfig, field="--kubeconfig")
    adapter = KubeAdapter.from_config(args.kubeconfig)
    metrics = Metrics()
    controller = Controller(adapter, config, metrics=metrics)
    if args.once:
        try:
            report = controller.run_once()
        except ClusterError as e:
            if not e.temporary:
                raise
            print(f"placer: error: the API server stayed unavailable: {e}", file=sys.stderr)
            return EXIT_UNAVAILABLE
        except Deposed as e:  # pragma: no cover - --once holds no fence
            print(f"placer: error: {e}", file=sys.stderr)
            return 1
        print(f"placer controller: {_summary(report)}")
        return 1 if report.executed and report.executed.failed else 0
    if args.metrics_port:
        metrics.serve(args.metrics_port, args.metrics_address)
    if args.extender_port:
        try:
            from plugins.extender.embedded import serve as serve_extender
        except ImportError as e:
            raise InputError(
                "the scheduler extender is not available in this build",
                field="--extender-port",
                code="usage",
            ) from e
        serve_extender(controller, args.extender_port, host=args.extender_address, guard_s=guard)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    if not args.leader_elect:
        _work_in_thread(controller.run, stop)
        if controller.misconfigured is not None:
            raise controller.misconfigured
        return 1 if controller.deposed else 0
    settings = LeaderSettings(
        lease=args.lease_name,
        identity=identity,
        **({"namespace": args.lease_namespace} if args.lease_namespace else {}),
    )
    outcome: list[bool] = []
    _work_in_thread(
        lambda s: outcome.append(run_elected(adapter, settings, controller.run_leading, s)), stop
    )
    if controller.misconfigured is not None:
        raise controller.misconfigured
    lost = bool(outcome and outcome[0]) or controller.deposed
    print(
        "placer controller: lost leadership" if lost else "placer controller: stopped",
        file=sys.stderr,
    )
    return 1 if lost else 0
