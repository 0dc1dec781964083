"""How the controller reads time: one value holding its clocks, so tests and simulations can
pass their own, and the stamp its writes carry.

Three clocks, because they answer different questions: the monotonic one measures windows,
retries and phases (it never jumps); `sleep` is the wait between retried API calls (a test
passes one that returns at once); the wall clock dates what the plan compares with the cluster's
times (the planning instant of time-aware planning, reservations' times). The RFC 3339 stamp on
writes and events (`rfc3339_now`) reads the system clock, not `Clocks.wall`: it dates the
events and check states the controller writes, when they were written.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

__all__ = ["Clocks", "rfc3339_now"]


@dataclass(frozen=True)
class Clocks:
    """How the controller reads time and waits; tests and simulations pass their own."""

    monotonic: Callable[[], float] = time.monotonic
    """Windows, retries and phase timing."""
    sleep: Callable[[float], None] = time.sleep
    """Backoff between retried API calls."""
    wall: Callable[[], float] = time.time
    """Epoch seconds: the planning instant of time-aware planning, and reservations' times."""


def rfc3339_now() -> str:
    """The wall time stamped on writes and events (RFC 3339, seconds, UTC)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
