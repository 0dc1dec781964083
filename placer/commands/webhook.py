"""`placer webhook`: serve the mutating admission webhook that gates opted-in JobSets' pods.

A thin flag parser. The server lives in `plugins/webhook/` and is imported inside `run`, so the
`placer` package does not depend on `plugins` (or aiohttp) at import time and other commands never
load it. See deploy/webhook/README.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from placer.commands.flags.argtypes import PORT, interval_s, whole_number
from placer.commands.output.server_logs import add_log_format_arg, use_server_logs

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "webhook",
        help="serve the admission webhook that gates opted-in JobSets' pods",
        description="Serve a mutating admission webhook (AdmissionReview v1 over HTTPS) that adds "
        "the placer.dev/placement scheduling gate to the pods of JobSets in opted-in namespaces, "
        "so `placer controller` places them without `placer prepare`. "
        "See deploy/webhook/README.md.",
    )
    parser.add_argument(
        "--tls-cert-file",
        metavar="FILE",
        required=True,
        help="PEM server certificate (chain) for the HTTPS port, e.g. a cert-manager Secret's "
        "tls.crt; reloaded when it changes",
    )
    parser.add_argument(
        "--tls-private-key-file", metavar="FILE", required=True, help="PEM private key (tls.key)"
    )
    parser.add_argument("--host", default="0.0.0.0", help="HTTPS address (0.0.0.0)")
    parser.add_argument("--port", type=PORT, default=9443, help="HTTPS port (9443)")
    parser.add_argument(
        "--metrics-port",
        type=PORT,
        default=8080,
        help="plain-HTTP port for /healthz, /readyz and /metrics; 0 disables (8080)",
    )
    parser.add_argument("--metrics-address", default="0.0.0.0", help="metrics bind address")
    parser.add_argument(
        "--tls-reload-interval",
        metavar="SECONDS",
        type=interval_s(86400),
        default=60.0,
        help="check the certificate files for renewal this often, at least 1; 0 never (60)",
    )
    parser.add_argument(
        "--max-body-bytes",
        type=whole_number(1),
        default=8 * 1024 * 1024,
        help="largest AdmissionReview accepted; bigger ones are refused with 413 (8 MiB; a pod "
        "is at most about 1.5 MiB)",
    )
    parser.add_argument(
        "--max-in-flight",
        type=whole_number(1),
        default=32,
        help="reviews answered at once; more get 503 at once, which the API server treats as a "
        "webhook failure (32)",
    )
    add_log_format_arg(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from placer.serving import ServingLimits
    from plugins.webhook.server import WebhookOptions, serve

    use_server_logs(args)
    options = WebhookOptions(
        cert_file=Path(args.tls_cert_file),
        key_file=Path(args.tls_private_key_file),
        host=args.host,
        port=args.port,
        metrics_host=args.metrics_address,
        metrics_port=args.metrics_port or None,
        reload_interval_s=args.tls_reload_interval,
        limits=ServingLimits(
            max_body_bytes=args.max_body_bytes,
            max_in_flight=args.max_in_flight,
            max_in_flight_bytes=max(32 * 1024 * 1024, args.max_body_bytes),
            shutdown_timeout_s=10.0,
        ),
    )
    serve(options, announce=lambda line: print(line, file=sys.stderr, flush=True))
    return 0
