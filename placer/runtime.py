"""Process-level tuning of Python's cyclic garbage collector, applied only at entry points.

Why it pays: a 50,000-node plan builds millions of long-lived objects (the snapshot, the per-shape
index, the plan), and each allocation burst triggers collections that rescan everything built so
far, although almost nothing placer builds holds a reference cycle (reference counting frees it).
Measured in benchmarks/RESULTS-speed.md ("garbage collector at the entry points"): `placer plan`
on 50,000 nodes used 16.2 s of CPU with the collector running, 13.5 s with it paused.

The model and solver layers never touch the collector; the callers that own a process decide:

- `placer plan`, `explain`, `capacity`, `prepare` (short batch runs): `collector_paused()` around
  the whole command;
- the controller: `collector_paused()` around each reconcile cycle, and `freeze_long_lived()`
  after each relist, so its watch cache stays out of full collections;
- the extender: `freeze_long_lived()` once everything is loaded, before serving.

A finished batch command also ends its process without the interpreter's teardown
(`end_batch_process`), which would otherwise visit and free every object still alive.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import os
import sys
from collections.abc import Iterator
from typing import NoReturn

__all__ = ["collector_paused", "end_batch_process", "freeze_long_lived"]


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic collections inside; re-enabled on exit only if it was enabled on entry, so
    nesting is harmless. Reference counting keeps freeing everything without cycles."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def freeze_long_lived(*, collect_first: bool = True) -> None:
    """Move every object alive now out of the collector's sight (`gc.freeze`), at O(1) cost.

    For state that lives as long as the process (loaded modules, a watch cache, a loaded plan):
    full collections would otherwise walk all of it again and again. Objects frozen and dropped
    later are still freed by reference counting; only a reference cycle among them is never
    collected. `collect_first` collects the garbage there is before freezing (costs one full
    collection; skip it where a caller freezes often)."""
    if collect_first:
        gc.collect()
    gc.freeze()


def end_batch_process(code: int) -> NoReturn:
    """End the process of a finished batch command now, with exit status `code`.

    The interpreter's own shutdown collects and frees every object still alive, module by module
    (OR-Tools, pandas, the Kubernetes client): 0.3-0.5 s of CPU after a 10,000-node plan, about
    1 s after a 50,000-node one (benchmarks/RESULTS-speed.md, "exit"), while the operating system
    takes the memory back at once. `atexit` handlers run and the standard streams are flushed
    first, so whatever else a normal exit does for others still happens; only the teardown is
    skipped.
    """
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        # a closed pipe or stream: nothing more to deliver
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)
