"""What a command loads before it reads its input.

`build_parser` imports every command module to register its flags, so whatever those modules
import at their top is paid by every command, `placer --help` included. CP-SAT (with numpy) and
networkx belong to the commands that solve: loaded before `placer plan` read its snapshot, they
sat under the snapshot's own peak and raised `placer plan`'s at 50,000 nodes from 650 MB to
708 MB (benchmarks/RESULTS-speed.md, round 34). Each case runs in a fresh interpreter, since
this test session has loaded them all long ago.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.cli.inputs import jobset_manifest, write_cluster, write_jobsets

HEAVY = ("ortools", "numpy", "networkx", "kubernetes", "aiohttp")
"""Libraries no command needs in order to parse its flags."""

_PARSER = f"""
import json, sys
import placer.cli
placer.cli.build_parser()
print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))
"""

_PLAN = f"""
import json, sys
import placer.model.snapshots.load as loading
from placer.cli import main

seen = {{}}
read = loading.load_snapshot

def load_snapshot(paths):
    seen["before"] = [m for m in {HEAVY!r} if m in sys.modules]
    return read(paths)

loading.load_snapshot = load_snapshot
code = main(sys.argv[1:])
print(json.dumps({{"code": code, "loaded before the snapshot": seen["before"],
                  "loaded by the plan": "ortools" in sys.modules}}), file=sys.stderr)
"""


def _run(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, check=True
    )


def test_building_the_parser_loads_no_solver_or_client_library() -> None:
    assert json.loads(_run(_PARSER).stdout) == []


def test_plan_reads_its_snapshot_before_loading_the_solver(tmp_path: Path) -> None:
    cluster = write_cluster(tmp_path, pools=2)
    jobsets = write_jobsets(tmp_path, jobset_manifest("a", replicas=1))
    done = _run(
        _PLAN, "plan", "--cluster", str(cluster), "--workers", "1", "--format", "json", str(jobsets)
    )
    report = json.loads(done.stderr.strip().splitlines()[-1])
    assert report == {
        "code": 0,
        "loaded before the snapshot": [],
        "loaded by the plan": True,
    }
    assert json.loads(done.stdout)["jobsets"][0]["status"] == "placed"


def test_a_greedy_plan_never_loads_the_cp_sat_library(tmp_path: Path) -> None:
    """The time-aware wrapper imports its CP-SAT schedule only for `--schedule cpsat`: a greedy
    plan without it ran in 0.39 s and 49 MB where it had taken 0.82 s and 118 MB on the bundled
    example (benchmarks/RESULTS-speed.md, round 36)."""
    cluster = write_cluster(tmp_path, pools=2)
    jobsets = write_jobsets(tmp_path, jobset_manifest("a", replicas=1))
    done = _run(_PLAN, "plan", "--cluster", str(cluster), "--solver", "best-fit", str(jobsets))
    report = json.loads(done.stderr.strip().splitlines()[-1])
    assert report == {"code": 0, "loaded before the snapshot": [], "loaded by the plan": False}
