"""`placer extender`: serve the kube-scheduler extender that enforces placer's plan for every pod.

A thin flag parser. The service lives in `plugins/extender/` and is imported inside `run`, so the
`placer` package does not depend on `plugins` at import time (plugins sit above placer in the
layering) and other commands never load it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from placer.commands.flags.argtypes import PORT, whole_number
from placer.commands.flags.timing import add_guard_arg, guard_s
from placer.commands.output.server_logs import add_log_format_arg, use_server_logs
from placer.model.errors import InputError
from placer.model.read.files import check_input_file

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "extender",
        help="serve the kube-scheduler extender (filter, prioritize, bind)",
        description="Serve the kube-scheduler extender protocol: planned pods only on their "
        "domains, every other pod kept off reserved domains. See deploy/scheduler/README.md.",
    )
    parser.add_argument("--host", default="0.0.0.0", help="address to listen on (0.0.0.0)")
    parser.add_argument("--port", type=PORT, default=8888, help="port to listen on (8888)")
    parser.add_argument(
        "--plan",
        metavar="PLAN.json",
        help="enforce this `placer plan --format json` result instead of watching the cluster",
    )
    parser.add_argument(
        "--cluster",
        metavar="SNAPSHOT",
        action="append",
        default=[],
        help="with --plan: snapshot file(s) giving node labels, so every node of a reserved "
        "domain is known (repeatable)",
    )
    parser.add_argument(
        "--kubeconfig",
        metavar="FILE",
        help="client configuration for watching JobSets and Nodes (without --plan) and for "
        "--bind; default: in-cluster, then ~/.kube/config",
    )
    parser.add_argument(
        "--pinned",
        action="store_true",
        help="with --plan: hold each planned pod to its planned node, not just its domain",
    )
    parser.add_argument(
        "--bind",
        action="store_true",
        help="serve the bind verb: create each pod's Binding through the pods/binding API",
    )
    parser.add_argument(
        "--max-body-bytes",
        type=whole_number(1, 2**40),
        default=8 * 1024 * 1024,
        help="largest request body accepted; bigger ones get 413 (8 MiB: node names for "
        "about 250,000 nodes with nodeCacheCapable: true, or about 900 full Node objects)",
    )
    parser.add_argument(
        "--max-in-flight",
        type=whole_number(1, 2**40),
        default=32,
        help="requests decided at once; more get 503 at once (32; /healthz is never refused)",
    )
    add_guard_arg(parser)
    parser.add_argument(
        "--ledger-namespace",
        metavar="NS",
        help="watch mode: the namespace of the controller's placement ledger (ConfigMap "
        "placer-ledger), watched for reservations; needs list and watch on that ConfigMap "
        "(default: $POD_NAMESPACE or the pod's namespace, else placer-system, as the "
        "controller's --ledger-namespace)",
    )
    parser.add_argument("--tls-cert-file", metavar="PEM", help="serve HTTPS with this certificate")
    parser.add_argument("--tls-key-file", metavar="PEM", help="the key of --tls-cert-file")
    add_log_format_arg(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.pinned and not args.plan:
        raise InputError(
            "holds pods to the nodes of a plan file: give --plan PLAN.json",
            field="--pinned",
            code="usage",
        )
    if args.ledger_namespace and args.plan:
        raise InputError(
            "--ledger-namespace is for watch mode; a plan file carries its own reservations",
            field="--ledger-namespace",
            code="usage",
        )
    if args.kubeconfig:
        check_input_file(args.kubeconfig, field="--kubeconfig")
    use_server_logs(args)
    from plugins.extender.service import ServiceOptions, serve

    ledger_namespace = None
    if not args.plan:
        # The controller's default, so an extender next to it finds its ledger without the flag.
        from placer.controller.act.lease import default_namespace

        ledger_namespace = args.ledger_namespace or default_namespace()
    options = ServiceOptions(
        host=args.host,
        port=args.port,
        plan=Path(args.plan) if args.plan else None,
        cluster=tuple(Path(p) for p in args.cluster),
        kubeconfig=args.kubeconfig,
        pinned=args.pinned,
        reservation_guard_s=guard_s(args),
        ledger_namespace=ledger_namespace,
        bind=args.bind,
        max_body_bytes=args.max_body_bytes,
        max_in_flight=args.max_in_flight,
        tls_cert_file=Path(args.tls_cert_file) if args.tls_cert_file else None,
        tls_key_file=Path(args.tls_key_file) if args.tls_key_file else None,
    )
    serve(options, announce=lambda line: print(line, file=sys.stderr, flush=True))
    return 0
