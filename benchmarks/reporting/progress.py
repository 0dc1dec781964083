"""Progress for long benchmark runs: a bar on a terminal, log lines (shown with -v) otherwise.

On a terminal the bar is redrawn in place on stderr; anywhere else (CI logs, pipes) each step is
logged at INFO, so `-v` still shows where a stuck run stopped and a default run prints nothing
but its final line, as the CLI's progress does.
"""

from __future__ import annotations

import logging
import shutil
import sys
import time
from typing import TextIO

from placer.render.progress import progress_line

__all__ = ["Progress"]

log = logging.getLogger("benchmarks.reporting.progress")


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
        if self.tty:
            width = shutil.get_terminal_size().columns
            line = progress_line(self.label, "", self.done, self.total, what, elapsed, width)
            self.stream.write("\r\x1b[2K" + line)
            self.stream.flush()
        else:
            log.info("%d/%d %.0fs %s: %s", self.done, self.total, elapsed, self.label, what)

    def advance(self) -> None:
        self.done += 1

    def close(self) -> None:
        if self.enabled and self.tty:
            self.stream.write("\n")
            self.stream.flush()
