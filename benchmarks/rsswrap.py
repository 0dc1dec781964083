"""`python -m benchmarks.rsswrap MODULE ARGS...`: run MODULE as `python -m MODULE ARGS...` would,
then print this process's peak resident set on stderr.

Why a wrapper: on Linux a child's `ru_maxrss` (getrusage, wait4) starts from its parent's at exec,
so a benchmark process that has grown to gigabytes would hide the real peak of the `placer plan`
it spawns. VmHWM in /proc/self/status belongs to the new address space only. The module runs in
this same process, unchanged, so wall time and memory are those of `python -m MODULE`.
"""

from __future__ import annotations

import atexit
import re
import runpy
import sys
from pathlib import Path

__all__ = ["MARKER", "main"]

MARKER = "PLACER_BENCH_VMHWM_KB="


def _report() -> None:
    try:
        text = Path("/proc/self/status").read_text()
    except OSError:
        return
    m = re.search(r"^VmHWM:\s+(\d+) kB", text, re.MULTILINE)
    if m:
        sys.stderr.write(f"\n{MARKER}{m.group(1)}\n")
        sys.stderr.flush()


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit("usage: python -m benchmarks.rsswrap MODULE [ARGS...]")
    module = sys.argv[1]
    sys.argv = [module, *sys.argv[2:]]
    atexit.register(_report)
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
