"""How the controller reads time: one value holding its clocks, so tests and simulations can
pass their own, and the stamp its writes carry.

Three clocks, because they answer different questions: the monotonic one measures windows,
retries and phases (it never jumps); `sleep` is the wait between retried API calls (a test
passes one that returns at once); the wall clock dates what the plan compares with the cluster's
times (the planning instant of time-aware planning, reservations' times) and the events and check
states the controller writes (`model.durations.format_rfc3339` of its reading), so a round has
one instant: a simulation that passes its own wall clock sees its writes dated on it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Clocks"]


@dataclass(frozen=True)
class Clocks:
    """How the controller reads time and waits; tests and simulations pass their own."""

    monotonic: Callable[[], float] = time.monotonic
    """Windows, retries and phase timing."""
    sleep: Callable[[float], None] = time.sleep
    """Backoff between retried API calls."""
    wall: Callable[[], float] = time.time
    """Epoch seconds: the planning instant of time-aware planning, and reservations' times."""
