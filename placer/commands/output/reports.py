"""Output habits shared by the commands that print reports: `-o`, the line width, progress.

- `-o json|yaml|wide|table` is an alias of `--format` (kubectl's spelling); `wide` is the table with
  every row and no line cut.
- The table's width: the terminal's when stdout is one; 200 columns when stdout is a pipe or file
  (the `COLUMNS` environment variable overrides both). `-o wide` never cuts.
- Progress goes to stderr through `placer.render.progress.TerminalProgress`: only on a terminal,
  only after about 2 s.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from collections.abc import Sequence

import yaml

from placer.render.progress import TerminalProgress
from placer.render.table import fit_lines

__all__ = [
    "PIPE_WIDTH",
    "TABLE_ROWS",
    "add_output_arg",
    "as_yaml",
    "clip_lines",
    "output_width",
    "progress_for",
]

PIPE_WIDTH = 200
"""Line width when stdout is not a terminal (and COLUMNS is not set)."""
TABLE_ROWS = 40
"""A plan with more JobSets than this is summarized in the table (`-o wide` shows them all)."""


def add_output_arg(parser: argparse.ArgumentParser, formats: Sequence[str], help_text: str) -> None:
    """`-o/--output/--format FORMAT` into `args.format` (default `table`)."""
    parser.add_argument(
        "-o",
        "--output",
        "--format",
        dest="format",
        metavar="FORMAT",
        choices=tuple(formats),
        default="table",
        help=f"{help_text} (one of: {', '.join(formats)})",
    )


def output_width(fmt: str) -> int | None:
    """Columns a table line may take, or None for no limit (`-o wide`)."""
    if fmt == "wide":
        return None
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    if sys.stdout.isatty():
        return shutil.get_terminal_size().columns
    return PIPE_WIDTH


def clip_lines(text: str, width: int | None) -> str:
    """A report laid out without a width made to fit one: rows cut, prose wrapped."""
    return "\n".join(fit_lines(text.split("\n"), width))


def progress_for(args: argparse.Namespace) -> TerminalProgress:
    """A progress line for this command on stderr (shown only on a terminal, after ~2 s)."""
    return TerminalProgress(f"placer {getattr(args, 'command', '') or ''}".strip())


def as_yaml(json_text: str) -> str:
    """A JSON document (as the renderers print it) as YAML, for `-o yaml`."""
    return yaml.safe_dump(json.loads(json_text), sort_keys=False, allow_unicode=True)
