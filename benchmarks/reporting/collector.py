"""The garbage collector around a timed call, as placer's entry points run it.

`placer plan`, `explain` and `capacity` pause Python's cyclic collector for the whole command,
and the controller for each reconcile cycle (`placer.runtime`). A benchmark that times a bare
call into the solver runs with the collector on unless it says otherwise, and so times
collections the product does not make (RESULTS-preemption, round 52: the same plans with it on
and paused). `timed_call` pauses it as the product
does by default, and says what the collection owed after the call costs, beside the call, so
that nothing is left out of sight: a controller pays it between cycles, a batch command never
(it ends without the interpreter's teardown).
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

from placer.runtime import collector_paused

__all__ = ["COLLECTOR_MODES", "CollectorMode", "Timed", "add_collector_argument", "timed_call"]

CollectorMode = Literal["paused", "running"]
COLLECTOR_MODES: tuple[CollectorMode, ...] = ("paused", "running")

T = TypeVar("T")


@dataclass(frozen=True)
class Timed(Generic[T]):
    value: T
    wall_s: float
    """The call's wall time."""
    collect_s: float | None
    """With the collector paused, a full collection right after the call (what the paused
    call left to collect); None with it running (its collections are inside `wall_s`)."""


def add_collector_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--collector",
        choices=COLLECTOR_MODES,
        default="paused",
        help="Python's cyclic garbage collector during each timed call: paused, as placer's "
        "commands and controller run it (default), or running, as benchmarks before round 52 "
        "did; paused, a full collection after the call is timed apart",
    )


def timed_call(call: Callable[[], T], collector: CollectorMode) -> Timed[T]:
    """`call()` timed with the collector `paused` or `running` (see the module doc)."""
    if collector == "running":
        started = time.perf_counter()
        value = call()
        return Timed(value, time.perf_counter() - started, None)
    with collector_paused():
        started = time.perf_counter()
        value = call()
        wall = time.perf_counter() - started
    started = time.perf_counter()
    gc.collect()
    return Timed(value, wall, time.perf_counter() - started)
