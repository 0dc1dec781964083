"""Bounded, printable messages: what placer echoes of its input never floods or drives a terminal.

An error quotes the value it refuses, and a value comes from a file anyone may have written: a
200 KB duration, a name full of escape sequences. Everything placer shows of such a value goes
through here:

- `echo(value)`: the value quoted (`repr`, so control characters come out escaped) and cut at
  `ECHO_LIMIT` characters with a marker saying how long it was;
- `printable(text)`: control and other non-printing characters escaped (`\\x1b`, `\\u202e`), so
  text from input cannot move the cursor, recolour or rewrite a line;
- `clip(text, limit)`: a whole line cut with a marker.

`InputError` passes its message through `printable` and `clip`, so even a message that forgot to
`echo` stays one bounded line; the CLI's log handler does the same for warnings.
"""

from __future__ import annotations

import reprlib

__all__ = ["ECHO_LIMIT", "LINE_LIMIT", "clip", "echo", "printable", "printable_lines"]

ECHO_LIMIT = 80
"""Characters of a refused value quoted in a message."""
LINE_LIMIT = 2000
"""Characters of one message line; past this it is cut (a marker says how much was left out)."""

_BIG_INT_BITS = 4000
"""Integers this long are described, not printed: `repr` of one over 4,300 digits raises."""


class _Repr(reprlib.Repr):
    def repr_int(self, x: int, level: int) -> str:
        if x.bit_length() > _BIG_INT_BITS:
            digits = int(x.bit_length() * 0.30103) + 1
            return f"<an integer of about {digits} digits>"
        return super().repr_int(x, level)


_REPR = _Repr()
_REPR.maxlevel = 3
_REPR.maxdict = _REPR.maxlist = _REPR.maxtuple = _REPR.maxset = 6
_REPR.maxlong = 40
_REPR.maxother = ECHO_LIMIT


def echo(value: object, *, limit: int = ECHO_LIMIT, quote: bool = True) -> str:
    """`value` as a message quotes it: `repr` (or, with `quote=False` for a string, the text
    escaped), at most `limit` characters of it, then `... (N characters)` when cut."""
    if isinstance(value, str):
        head = value[:limit]
        shown = repr(head) if quote else printable(head)
        if len(value) > limit:
            return f"{shown}... ({len(value)} characters)"
        return shown
    _REPR.maxstring = limit
    return clip(_REPR.repr(value), limit * 2)


def printable(text: str) -> str:
    """`text` with every character that is not printable escaped (newlines and tabs too: a
    message is one line)."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else _escape(ch) for ch in text)


def printable_lines(text: str) -> str:
    """A report for the terminal: each line `printable`, the line breaks kept."""
    if text.isprintable() or all(line.isprintable() for line in text.split("\n")):
        return text
    return "\n".join(printable(line) for line in text.split("\n"))


_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(ch: str) -> str:
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def clip(text: str, limit: int = LINE_LIMIT) -> str:
    """`text`, cut after `limit` characters with a marker saying how many were left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... [{len(text) - limit} more characters]"
