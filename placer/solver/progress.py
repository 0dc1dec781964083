"""A progress hook the long-running engines report through, so they never print.

`explain` (re-plans), `capacity` (copies per shape) and the commands' own phases call `phase` and
`step`; what is shown, where and when is the caller's business (the CLI draws a line on a terminal
after a couple of seconds: `placer.render.progress`). The default, `SILENT`, ignores every call.
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["SILENT", "ProgressHook", "SilentProgress"]


class ProgressHook(Protocol):
    """Receives what a long run is doing; must be cheap, it is called from inside the engines."""

    def phase(self, name: str) -> None:
        """A named phase starts (`plan`, `count`, `remedies`, ...); it ends when the next starts."""

    def step(self, done: int, total: int, what: str) -> None:
        """`done` of `total` units of the current phase are finished; `what` runs next."""


class SilentProgress:
    """The hook that shows nothing: the default everywhere, and what tests and libraries get."""

    def phase(self, name: str) -> None:
        return None

    def step(self, done: int, total: int, what: str) -> None:
        return None


SILENT: ProgressHook = SilentProgress()
