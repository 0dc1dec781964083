"""Progress on a terminal: one line on stderr, redrawn in place, only for runs longer than ~2 s.

Implements `placer.solver.progress.ProgressHook` for the CLI (and the benchmark runner). Nothing
is written unless the stream is a terminal, and nothing before `delay_s` has passed, so pipes, CI
logs, tests and quick runs see no output at all. A daemon thread redraws the line a few times a
second, so a single long phase (a CP-SAT solve) still shows its elapsed time; the line is erased
when the run ends, leaving stdout's output unmixed.
"""

from __future__ import annotations

import shutil
import sys
import threading
import time
from types import TracebackType
from typing import TextIO

__all__ = ["DELAY_S", "TerminalProgress", "progress_line"]

DELAY_S = 2.0
"""Runs shorter than this show nothing."""
REDRAW_S = 0.25
BAR_WIDTH = 20


def progress_line(
    label: str, phase: str, done: int, total: int, what: str, elapsed_s: float, width: int
) -> str:
    """`placer explain: remedies [#####.....] 5/24 fewer replicas  12 s`, cut to `width`."""
    parts = [f"{label}: {phase}" if phase else label]
    if total > 0:
        filled = min(BAR_WIDTH, BAR_WIDTH * done // total)
        parts.append(f"[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {done}/{total}")
    if what:
        parts.append(what)
    parts.append(f"{elapsed_s:.0f} s")
    line = " ".join(parts)
    return line if len(line) < width else line[: max(width - 4, 0)] + "..."


class TerminalProgress:
    """A `ProgressHook` drawing on `stream` when it is a terminal; use as a context manager."""

    def __init__(
        self, label: str, *, stream: TextIO | None = None, delay_s: float = DELAY_S
    ) -> None:
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.delay_s = delay_s
        self.enabled = _isatty(self.stream)
        self._started = time.monotonic()
        self._phase = ""
        self._done = 0
        self._total = 0
        self._what = ""
        self._drawn = False
        self._last = ""
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> TerminalProgress:
        if self.enabled:
            self._thread = threading.Thread(target=self._tick, name="progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def phase(self, name: str) -> None:
        with self._lock:
            self._phase, self._done, self._total, self._what = name, 0, 0, ""

    def step(self, done: int, total: int, what: str) -> None:
        with self._lock:
            self._done, self._total, self._what = done, total, what

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        with self._lock:
            if self._drawn:
                self.stream.write("\r\x1b[2K")
                self.stream.flush()
                self._drawn = False

    def _tick(self) -> None:
        while not self._stop.wait(REDRAW_S):
            elapsed = time.monotonic() - self._started
            if elapsed < self.delay_s:
                continue
            width = shutil.get_terminal_size().columns
            with self._lock:
                line = progress_line(
                    self.label, self._phase, self._done, self._total, self._what, elapsed, width
                )
                if line != self._last:  # redrawn when something (at least the seconds) changed
                    self.stream.write("\r\x1b[2K" + line)
                    self.stream.flush()
                    self._last = line
                    self._drawn = True


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
