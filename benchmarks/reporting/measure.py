"""Wall time and memory of one measured call, the same way for every policy and phase; the machine.

The machine facts (cores, CPU model, memory, versions, git commit) go into every report header.

Memory is the process's peak resident set (VmHWM) during the call, reset just before it through
/proc/self/clear_refs, so it includes what OR-Tools allocates in C++ (tracemalloc would miss that
and slow Python down). We report the peak minus the resident set before the call: what the call
itself needed on top of the inputs already in memory. Where /proc cannot be reset, the peak falls
back to getrusage's lifetime maximum and is marked as such.
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
import re
import resource
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from benchmarks.worlds.records import quantity

__all__ = [
    "Measured",
    "cpu_model",
    "machine_info",
    "measure",
    "peak_rss_mb",
    "reset_peak",
    "rss_mb",
]

T = TypeVar("T")
_STATUS = Path("/proc/self/status")


def _status_kb(field: str) -> float | None:
    try:
        m = re.search(rf"^{field}:\s+(\d+) kB", _STATUS.read_text(), re.MULTILINE)
    except OSError:
        return None
    return float(m.group(1)) if m else None


def rss_mb() -> float:
    kb = _status_kb("VmRSS")
    return kb / 1024 if kb is not None else 0.0


def reset_peak() -> bool:
    """Reset VmHWM to the current RSS; False where the kernel does not allow it."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def peak_rss_mb() -> float:
    kb = _status_kb("VmHWM")
    if kb is None:
        kb = float(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    return kb / 1024


@dataclass(frozen=True)
class Measured(Generic[T]):
    value: T
    wall_s: float
    peak_mb: float
    """Peak RSS during the call minus RSS before it."""
    peak_abs_mb: float
    """Peak RSS of the process during the call."""
    exact_peak: bool


def measure(fn: Callable[[], T]) -> Measured[T]:
    before = rss_mb()
    exact = reset_peak()
    t0 = time.perf_counter()
    value = fn()
    wall = time.perf_counter() - t0
    peak = peak_rss_mb()
    return Measured(value, wall, max(peak - before, 0.0), peak, exact)


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo, else what `platform` knows ("" if nothing):
    every report names it, since figures from two CPU models are not comparable."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_info() -> dict[str, Any]:
    cpu = cpu_model()
    mem_gb = 0.0
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem_gb = float(quantity(line.split()[1] + "Ki")) / 2**30
    except OSError:
        pass
    try:
        ortools_version = importlib.metadata.version("ortools")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover
        ortools_version = "n/a"
    root = Path(__file__).resolve().parents[2]
    git = (
        subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=root,
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        or "unknown"
    )
    return {
        "nproc": os.cpu_count(),
        "cpu": cpu or "unknown",
        "memory_gb": round(mem_gb, 1),
        "python": platform.python_version(),
        "ortools": ortools_version,
        "git": git,
        "platform": platform.platform(),
    }
