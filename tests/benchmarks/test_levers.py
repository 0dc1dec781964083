"""The lever diffs in `benchmarks/levers/` apply to the commits their README names, so the
figures RESULTS-backfill cites for them can be reproduced. Each touched file is read from that
commit (`git show`) into a temporary folder and the diff checked there: the repository itself is
never written. Skipped outside a git checkout with its whole history (a source archive, a shallow
clone)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LEVERS = ROOT / "benchmarks" / "levers"
ROW = re.compile(r"^\| `(?P<file>[\w.-]+\.patch)` \| (?P<commit>[0-9a-f]{7,40}) \|", re.M)


def _rows() -> list[tuple[str, str]]:
    return [(m["file"], m["commit"]) for m in ROW.finditer((LEVERS / "README.md").read_text())]


def _git(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)


def test_every_lever_diff_is_listed_with_its_commit() -> None:
    listed = {f for f, _ in _rows()}
    assert listed and listed == {p.name for p in LEVERS.glob("*.patch")}


@pytest.mark.parametrize(("name", "commit"), _rows())
def test_a_lever_diff_applies_to_its_commit(name: str, commit: str, tmp_path: Path) -> None:
    shallow = _git("rev-parse", "--is-shallow-repository")
    if shutil.which("git") is None or shallow.returncode or shallow.stdout.strip() == "true":
        pytest.skip(
            "not a git checkout with its whole history (a source archive or a shallow clone)"
        )
    assert _git("cat-file", "-e", f"{commit}^{{commit}}").returncode == 0, f"no commit {commit}"
    patch = LEVERS / name
    touched = re.findall(r"^diff --git a/(\S+) b/", patch.read_text(), re.M)
    assert touched, f"{name} touches no file"
    for path in touched:
        shown = _git("show", f"{commit}:{path}")
        assert shown.returncode == 0, shown.stderr
        target = tmp_path / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(shown.stdout)
    checked = _git("apply", "--check", str(patch), cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr
