"""Run `placer` in process, as a user would from a shell, and capture what it printed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from placer.cli import main

__all__ = ["command", "run_cli"]

Result = tuple[int, str, str]
"""(exit code, stdout, stderr)"""


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> Result:
    """`placer ARGV...`: its exit code and what it wrote to stdout and stderr."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def command(name: str) -> Callable[..., Result]:
    """`run_cli` for one subcommand: `plan = command("plan")`, then `plan(capsys, "--cluster",
    path, ...)`."""

    def run(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> Result:
        return run_cli(capsys, name, *argv)

    return run
