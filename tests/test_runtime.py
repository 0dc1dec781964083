"""Garbage-collector tuning at the entry points: handed back as found, batch commands only."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from placer import cli
from placer.runtime import collector_paused, freeze_long_lived

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def collector_state() -> Iterator[None]:
    was = gc.isenabled()
    yield
    gc.enable() if was else gc.disable()
    gc.unfreeze()


@pytest.mark.parametrize("enabled", [True, False])
def test_collector_paused_restores_the_collector(enabled: bool, collector_state: None) -> None:
    gc.enable() if enabled else gc.disable()
    with pytest.raises(RuntimeError), collector_paused():
        assert not gc.isenabled()
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled(), "an inner pause does not end the outer one"
        raise RuntimeError("boom")
    assert gc.isenabled() is enabled


def test_freeze_moves_live_objects_out_of_sight(collector_state: None) -> None:
    gc.unfreeze()
    kept = [[i] for i in range(1000)]
    freeze_long_lived()
    assert gc.get_freeze_count() >= len(kept)


def test_batch_commands_pause_the_collector_and_long_running_ones_do_not(
    monkeypatch: pytest.MonkeyPatch, collector_state: None
) -> None:
    seen: dict[str, bool] = {}

    def record(name: str) -> None:
        def run(args: object) -> int:
            seen[name] = gc.isenabled()
            return 0

        monkeypatch.setattr(f"placer.commands.{name}.run", run)

    gc.enable()
    for name in ("plan", "controller", "extender"):
        record(name)
    assert cli.main(["plan", "--cluster", "c.json", "j.yaml"]) == 0
    assert cli.main(["controller", "--once"]) == 0
    assert cli.main(["extender"]) == 0
    assert seen == {"plan": False, "controller": True, "extender": True}
    assert gc.isenabled(), "the collector is back after the command"


def test_a_batch_process_ends_with_its_output_and_exit_handlers() -> None:
    """The teardown is skipped, nothing else: buffered output is written and `atexit` handlers
    run (benchmarks.rsswrap reports peak memory from one), with the command's exit status."""
    script = (
        "import atexit, sys\n"
        "from placer.runtime import end_batch_process\n"
        "atexit.register(lambda: print('handler ran'))\n"
        "sys.stdout.write('plan written; ')\n"
        "end_batch_process(3)\n"
        "print('never')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False, cwd=ROOT
    )
    assert (done.returncode, done.stdout) == (3, "plan written; handler ran\n")


def test_placer_plan_as_a_process_writes_the_whole_plan(tmp_path: Path) -> None:
    cluster = ROOT / "examples" / "clusters" / "tpu-v5e-v6e.yaml"
    jobsets = ROOT / "examples" / "jobsets" / "queue"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "placer",
            "plan",
            "--cluster",
            str(cluster),
            "-o",
            "json",
            str(jobsets),
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert len(plan["jobsets"]) == len(list(jobsets.glob("*.yaml")))
