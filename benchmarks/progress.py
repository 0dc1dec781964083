"""A one-line progress display on stderr for long benchmark runs (no dependency needed).

On a terminal the line is redrawn in place; in CI logs (not a tty) each step is its own line, so
a stuck run still shows where it stopped.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

__all__ = ["Progress"]


class Progress:
    def __init__(
        self, total: int, *, label: str = "", stream: TextIO | None = None, enabled: bool = True
    ) -> None:
        self.total = max(total, 1)
        self.done = 0
        self.label = label
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.start = time.perf_counter()
        self.tty = self.stream.isatty()

    def step(self, what: str) -> None:
        """Announce the step about to run (so a long step shows what it is)."""
        if not self.enabled:
            return
        elapsed = time.perf_counter() - self.start
        width = 24
        filled = int(width * self.done / self.total)
        bar = "#" * filled + "." * (width - filled)
        line = f"[{bar}] {self.done}/{self.total} {elapsed:6.0f}s {self.label}: {what}"
        if self.tty:
            self.stream.write("\r" + line[:150].ljust(150))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def advance(self) -> None:
        self.done += 1

    def close(self) -> None:
        if self.enabled and self.tty:
            self.stream.write("\n")
            self.stream.flush()
