"""`placer` command line: a thin dispatcher over one module per subcommand in placer/commands/.

Each command module exposes `register(subparsers)` (which sets `func`) and returns an exit code.
Errors the user can fix are `PlacerError`s: printed as one line, exit 2, no traceback.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

from placer.model.errors import PlacerError

__all__ = ["main"]

COMMANDS = ("plan", "explain", "capacity", "prepare", "controller", "extender")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="placer", description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        module = importlib.import_module(f"placer.commands.{name}")
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        code: int = args.func(args)
    except PlacerError as e:
        print(f"placer: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return code


if __name__ == "__main__":
    sys.exit(main())
