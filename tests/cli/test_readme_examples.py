"""The READMEs' worked examples are what placer prints: each `$ placer ...` block of the top README
and of deploy/*/README.md, run beside the repository's examples/, must begin with the lines the
README shows (the README may stop early; a `...` line skips to the lines the output ends with).
Servers (`placer webhook`, `extender`, `controller`) do not run offline to an end: their sessions
are checked in tests/deploy/test_readmes.py."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _examples(readme: Path) -> list[tuple[str, list[str]]]:
    """(command, shown output) for every indented `$ placer` block."""
    lines = readme.read_text().splitlines()
    blocks: list[tuple[str, list[str]]] = []
    i = 0
    while i < len(lines):
        if not lines[i].startswith("    $ placer "):
            i += 1
            continue
        command = lines[i][6:]
        i += 1
        while command.endswith("\\"):
            command = command[:-1] + " " + lines[i].strip()
            i += 1
        shown = []
        while i < len(lines) and lines[i].startswith("    "):
            shown.append(lines[i][4:].rstrip())
            i += 1
        blocks.append((command, shown))
    return blocks


SERVERS = ("controller", "extender", "webhook")
"""Subcommands that serve until stopped: no `$ placer` block of theirs runs here."""

DEPLOY_READMES = sorted((ROOT / "deploy").glob("*/README.md"))

EXAMPLES = [
    pytest.param(command, shown, id=f"{readme.relative_to(ROOT)}:{command[7:60]}")
    for readme in [ROOT / "README.md", *DEPLOY_READMES]
    for command, shown in _examples(readme)
    if shown and shlex.split(command)[1] not in SERVERS
]


def test_the_readme_has_worked_examples() -> None:
    assert len(EXAMPLES) >= 4


def test_the_deploy_readmes_have_worked_examples() -> None:
    """Guards the glob: deploy/controller/README.md shows `placer prepare` output."""
    assert any(isinstance(p.id, str) and p.id.startswith("deploy/controller/") for p in EXAMPLES)


@pytest.mark.parametrize(("command", "shown"), EXAMPLES)
def test_a_readme_example_prints_what_the_readme_shows(
    command: str, shown: list[str], tmp_path: Path
) -> None:
    argv = shlex.split(command)
    assert argv[0] == "placer"
    (tmp_path / "examples").symlink_to(ROOT / "examples")  # files an example writes land here
    run = subprocess.run(
        [sys.executable, "-m", "placer", *argv[1:]],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
        timeout=300,
    )
    printed = [line.rstrip() for line in (run.stdout + run.stderr).splitlines()]
    head, tail = _split_at_ellipsis(shown)
    assert printed[: len(head)] == head, f"exit {run.returncode}: {run.stderr[-400:]}"
    assert printed[len(printed) - len(tail) :] == tail


def _split_at_ellipsis(shown: list[str]) -> tuple[list[str], list[str]]:
    """The lines the output starts with, and those it ends with (none when there is no `...`)."""
    if "..." not in shown:
        return shown, []
    at = shown.index("...")
    return shown[:at], shown[at + 1 :]
