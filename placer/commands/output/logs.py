"""What the command line prints of its logs: printable, bounded lines, repeats summarized.

Warnings quote their input (`x.yaml: skipping ConfigMap default/cm-17`), and an input can make a
warning come back thousands of times: 20,000 documents that are not JobSets would print 20,000
lines. `placer.cli` installs this on its stderr handler:

- each message is made printable (control characters escaped) and cut at `LINE_LIMIT` characters
  (`placer.model.messages`), so a log line cannot drive the terminal or run to megabytes;
- a warning of one kind (the same logger, level and message template) is shown `REPEATS_SHOWN`
  times; the rest are counted, and `summary()` gives one line per kind at the end of the run
  (`... and 19995 more like "%s: skipping %s"`). Debug logging (`-v`) shows every record.
"""

from __future__ import annotations

import logging
from collections import Counter

from placer.model.messages import LINE_LIMIT, clip, echo, printable

__all__ = ["REPEATS_SHOWN", "RepeatLimit", "SafeFormatter"]

REPEATS_SHOWN = 5
"""Records of one kind shown before the rest are only counted."""


class SafeFormatter(logging.Formatter):
    """The standard formatter, then the line made printable and cut."""

    def format(self, record: logging.LogRecord) -> str:
        return clip(printable(super().format(record)), LINE_LIMIT)


class RepeatLimit(logging.Filter):
    """Lets `REPEATS_SHOWN` records of each kind through, counts the others."""

    def __init__(self, shown: int = REPEATS_SHOWN) -> None:
        super().__init__()
        self.shown = shown
        self.seen: Counter[tuple[str, int, str]] = Counter()

    def filter(self, record: logging.LogRecord) -> bool:
        kind = (record.name, record.levelno, str(record.msg))
        self.seen[kind] += 1
        return self.seen[kind] <= self.shown

    def summary(self) -> list[str]:
        """One line per kind of record that was cut short, in the order first seen."""
        lines = []
        for (name, level, template), count in self.seen.items():
            hidden = count - self.shown
            if hidden > 0:
                lines.append(
                    f"{logging.getLevelName(level)} {name}: ... and {hidden} more like "
                    f"{echo(template)} (not shown)"
                )
        return lines
