"""Bounded messages (issue 22, item 6): warnings printable and cut, repeats summarized."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

from placer.commands.output.logs import REPEATS_SHOWN, RepeatLimit, SafeFormatter
from tests.cli.inputs import jobset_manifest, write_cluster

REPO = Path(__file__).resolve().parents[2]


def _record(message: str, *args: object, name: str = "placer.x") -> logging.LogRecord:
    return logging.LogRecord(name, logging.WARNING, __file__, 1, message, args, None)


def test_formatter_escapes_control_characters_and_cuts_long_lines() -> None:
    formatter = SafeFormatter("%(levelname)s %(name)s: %(message)s")
    line = formatter.format(_record("%s: skipping %s", "f.yaml", "cm\x1b[2J\nforged line"))
    assert line == "WARNING placer.x: f.yaml: skipping cm\\x1b[2J\\nforged line"
    long = formatter.format(_record("%s", "x" * 100_000))
    assert len(long) < 2100 and long.endswith("more characters]")


def test_repeats_are_counted_past_the_first_few() -> None:
    limit = RepeatLimit()
    passed = [limit.filter(_record("%s: skipping %s", "f.yaml", i)) for i in range(20_000)]
    other = limit.filter(_record("something else"))
    assert sum(passed) == REPEATS_SHOWN and other
    assert limit.summary() == [
        f"WARNING placer.x: ... and {20_000 - REPEATS_SHOWN} more like '%s: skipping %s' "
        "(not shown)"
    ]


def test_twenty_thousand_skipped_documents_print_a_bounded_number_of_lines(
    tmp_path: Path,
) -> None:
    import yaml

    docs = [{"kind": "ConfigMap", "metadata": {"name": f"cm-{i}"}} for i in range(20_000)]
    path = tmp_path / "many.yaml"
    path.write_text(yaml.safe_dump_all([*docs, jobset_manifest("a")]))
    cluster = write_cluster(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "placer", "plan", "--cluster", str(cluster), "--workers", "1",
         "--time-limit", "5", "-o", "json", str(path)],
        cwd=REPO, capture_output=True, text=True, timeout=300,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == REPEATS_SHOWN + 1
    assert lines[-1] == (
        f"WARNING placer.model.jobset.parse: ... and {20_000 - REPEATS_SHOWN} more like "
        "'%s: skipping %s (not a JobSet)' (not shown)"
    )
