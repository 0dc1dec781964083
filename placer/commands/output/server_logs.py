"""How the long-running servers log (controller, webhook, extender): one rule for all three.

A server's log is the record of what it decided (a placement, a pod bound, a watch relisted), so
it logs at INFO, DEBUG with `-v`; batch commands stay at WARNING. `--log-format json` writes one
JSON object per line for log pipelines (controller/logs.py).
"""

from __future__ import annotations

import argparse
import logging

__all__ = ["add_log_format_arg", "use_server_logs"]


def add_log_format_arg(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    parser.add_argument(
        "--log-format",
        choices=("text", "json"),
        default="text",
        help="json: one structured object per line",
    )


def use_server_logs(args: argparse.Namespace) -> None:
    level = logging.DEBUG if args.verbose else logging.INFO
    if args.log_format == "json":
        from placer.controller.logs import use_json_logs

        use_json_logs(level)
    else:
        logging.getLogger().setLevel(level)
