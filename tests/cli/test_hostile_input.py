"""Hostile input, round two (issue 22), through `placer.cli.main` in process: each input class an
exit 2 with one line naming the file, the object and the field, nothing written outside the
directories named, no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from placer.cli import main
from tests.cli.inputs import jobset_manifest, write_cluster, write_jobsets

FAST = ["--workers", "1", "--time-limit", "5"]


def run(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str]:
    code = main([str(a) for a in argv])
    return code, capsys.readouterr().err


def _tree(top: Path) -> list[str]:
    return sorted(p.relative_to(top).as_posix() for p in top.rglob("*"))


@pytest.mark.parametrize(
    ("namespace", "name"),
    [
        pytest.param("../../victim", "x", id="namespace-climbs"),
        pytest.param("default", "x/../../../victim2/pwn", id="name-climbs"),
    ],
)
def test_emit_never_writes_outside_its_directory(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, namespace: str, name: str
) -> None:
    inputs = tmp_path / "in"
    inputs.mkdir()
    cluster = write_cluster(inputs)
    jobsets = write_jobsets(inputs, jobset_manifest(name, namespace=namespace))
    emit = tmp_path / "a" / "b" / "emit"
    emit.mkdir(parents=True)
    before = _tree(tmp_path)
    code, err = run(capsys, "plan", "--cluster", cluster, *FAST, "--emit", emit, jobsets)
    assert code == 2
    assert len(err.splitlines()) == 1 and err.startswith("placer: error: ")
    assert _tree(tmp_path) == before
