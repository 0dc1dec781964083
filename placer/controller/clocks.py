"""How the controller reads time: one value holding its clocks, so tests and simulations can
pass their own, and the stamp its writes carry.

Three clocks, because they answer different questions: the monotonic one measures windows,
retries and phases (it never jumps); `sleep` is the wait between retried API calls (a test
passes one that returns at once); the wall clock dates what the plan compares with the cluster's
times (the planning instant of time-aware planning, reservations' times) and the events and check
states the controller writes (`rfc3339`), so a round has one instant: a simulation that passes
its own wall clock sees its writes dated on it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

__all__ = ["Clocks", "rfc3339"]


@dataclass(frozen=True)
class Clocks:
    """How the controller reads time and waits; tests and simulations pass their own."""

    monotonic: Callable[[], float] = time.monotonic
    """Windows, retries and phase timing."""
    sleep: Callable[[float], None] = time.sleep
    """Backoff between retried API calls."""
    wall: Callable[[], float] = time.time
    """Epoch seconds: the planning instant of time-aware planning, and reservations' times."""


def rfc3339(epoch_s: float) -> str:
    """An instant of the wall clock as writes and events carry it (RFC 3339, seconds, UTC)."""
    return datetime.fromtimestamp(epoch_s, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
