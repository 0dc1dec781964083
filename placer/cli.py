"""`placer` command line: a thin dispatcher over one module per subcommand in placer/commands/.

Each command module exposes `register(subparsers)` (which sets `func`) and returns an exit code.
Errors the user can fix are `PlacerError`s: printed as one line, exit 2, no traceback.

The same entry point serves `placer`, `python -m placer` and `kubectl-placer` (so `kubectl placer
plan ...` works as a kubectl plugin); the program name in usage lines follows argv[0]. Global flags
(`-v`) are accepted before and after the subcommand.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import logging
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import NoReturn

from placer.commands.output.logs import RepeatLimit, SafeFormatter
from placer.model.errors import PlacerError
from placer.model.messages import clip, printable
from placer.runtime import collector_paused, end_batch_process

__all__ = ["OneLineParser", "build_parser", "main", "placer_version", "prog_name", "run"]

DESCRIPTION = (
    "Plan pending Kubernetes JobSets jointly with CP-SAT: one topology domain per child Job, "
    "all-or-nothing per JobSet, priority first."
)
COMMANDS = (
    "plan",
    "explain",
    "defrag",
    "capacity",
    "prepare",
    "controller",
    "extender",
    "webhook",
    "completion",
)
LONG_RUNNING = frozenset({"controller", "extender", "webhook"})
"""Commands that serve until stopped: the collector is theirs to tune, and they exit normally."""


def placer_version() -> str:
    """The installed distribution's version, or `unknown` when run from a bare tree."""
    try:
        return version("placer")
    except PackageNotFoundError:
        return "unknown"


def prog_name(argv0: str | None = None) -> str:
    """`kubectl placer` when run as the kubectl plugin `kubectl-placer`, else `placer`."""
    name = Path(argv0 if argv0 is not None else sys.argv[0]).name
    return "kubectl placer" if name.startswith("kubectl-placer") else "placer"


def _add_global_flags(parser: argparse.ArgumentParser, *, top: bool) -> None:
    """The flags every command takes; on subcommands they default to SUPPRESS so a value given
    before the subcommand is not reset by the subparser."""
    default: object = False if top else argparse.SUPPRESS
    parser.add_argument(
        "-v", "--verbose", action="store_true", default=default, help="debug logging on stderr"
    )


class OneLineParser(argparse.ArgumentParser):
    """argparse, with a usage error said in one line and a pointer to `--help`, instead of the
    usage block and then the line (subcommands' parsers are of this class too: argparse makes
    them with the class of the parser they hang from)."""

    def error(self, message: str) -> NoReturn:
        text = clip(printable(f"{self.prog}: error: {message}"))
        self.exit(2, f"{text} (see '{self.prog} --help')\n")


def build_parser(prog: str | None = None) -> argparse.ArgumentParser:
    parser = OneLineParser(prog=prog or prog_name(), description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"%(prog)s {placer_version()}")
    _add_global_flags(parser, top=True)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        module = importlib.import_module(f"placer.commands.{name}")
        module.register(sub)
    for subparser in sub.choices.values():
        _add_global_flags(subparser, top=False)
    # the whole tree, for a command that describes it (`completion`): handed down, not imported
    parser.set_defaults(root_parser=parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command line; the exit status. (`run` is the process entry point.)"""
    parser = build_parser()
    return _execute(parser, parser.parse_args(argv))


def run() -> None:
    """The process entry point (console scripts, `python -m placer`): `main`, then a batch
    command ends the process without the interpreter's teardown (see `placer.runtime`)."""
    parser = build_parser()
    args = parser.parse_args()
    code = _execute(parser, args)
    if args.command in LONG_RUNNING:
        sys.exit(code)
    end_batch_process(code)


def _configure_logging(args: argparse.Namespace) -> RepeatLimit | None:
    """Log to stderr in printable, bounded lines (`placer.commands.output.logs`); for a batch
    command without `-v`, repeated warnings are summarized at the end. None when logging was
    already configured (an embedding program, a test runner): then it is left as it is."""
    root = logging.getLogger()
    had = list(root.handlers)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    if not args.verbose:
        # the Kubernetes client's transport logs each retry; the failure is reported once, below
        logging.getLogger("urllib3").setLevel(logging.ERROR)
    ours = [h for h in root.handlers if h not in had]
    limit = None if args.verbose or args.command in LONG_RUNNING else RepeatLimit()
    for handler in ours:
        handler.setFormatter(SafeFormatter("%(levelname)s %(name)s: %(message)s"))
        if limit is not None:
            handler.addFilter(limit)
    return limit if ours else None


def _execute(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    limit = _configure_logging(args)
    # A batch command runs with the cyclic collector paused (see placer.runtime).
    tuning = contextlib.nullcontext() if args.command in LONG_RUNNING else collector_paused()
    try:
        with tuning:
            code: int = args.func(args)
    except PlacerError as e:
        print(clip(printable(f"{parser.prog}: error: {e}")), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    finally:
        for line in limit.summary() if limit is not None else ():
            print(line, file=sys.stderr)
    return code


if __name__ == "__main__":
    run()
