"""Argument types for numeric and list flags, shared by every subcommand.

argparse calls a flag's `type` with the raw text; these factories give each flag its range in one
line (`type=whole_number(1, 100_000)`), so every command refuses a bad value with the same
wording: `argument --seed: must be at most 2147483647, got 9e99`.
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable

from placer.model.errors import InputError
from placer.model.messages import echo
from placer.model.read.names import check_levels, qualified_name_problem

__all__ = [
    "PORT",
    "interval_s",
    "label_key",
    "label_keys",
    "number",
    "rfc3339",
    "whole_number",
]

_INTEGER = re.compile(r"[+-]?[0-9]{1,30}")
_DECIMAL = re.compile(r"[+-]?([0-9]{1,30}(\.[0-9]{0,30})?|\.[0-9]{1,30})([eE][+-]?[0-9]{1,4})?")
"""Numbers as flags take them: ASCII digits only (`int` and `float` also read Arabic or
full-width digits and `1_000`), and of a sane length."""


def whole_number(lo: int, hi: int | None = None) -> Callable[[str], int]:
    """An integer in [lo, hi] (no upper end when hi is None)."""

    def parse(text: str) -> int:
        if not _INTEGER.fullmatch(text):
            raise argparse.ArgumentTypeError(f"not a whole number: {echo(text)}")
        value = int(text)
        if value < lo:
            raise argparse.ArgumentTypeError(f"must be >= {lo}, got {text}")
        if hi is not None and value > hi:
            raise argparse.ArgumentTypeError(f"must be at most {hi}, got {text}")
        return value

    return parse


def number(lo: float, hi: float | None = None, *, above: bool = False) -> Callable[[str], float]:
    """A finite number in [lo, hi], or in (lo, hi] with `above`."""

    def parse(text: str) -> float:
        if text.strip().lower() in ("inf", "+inf", "-inf", "infinity", "nan"):
            raise argparse.ArgumentTypeError(
                f"must be a finite number, got {echo(text, quote=False)}"
            )
        if not _DECIMAL.fullmatch(text):
            raise argparse.ArgumentTypeError(f"not a number: {echo(text)}")
        value = float(text)
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"must be a finite number, got {text}")
        if above and not value > lo:
            raise argparse.ArgumentTypeError(f"must be > {lo:g}, got {text}")
        if value < lo:
            raise argparse.ArgumentTypeError(f"must be >= {lo:g}, got {text}")
        if hi is not None and value > hi:
            raise argparse.ArgumentTypeError(f"must be at most {hi:g}, got {text}")
        return value

    return parse


PORT = whole_number(0, 65535)


def label_keys(text: str) -> tuple[str, ...]:
    """`KEY,KEY,...`: node label keys, coarse to fine; each a qualified name, none empty, none
    twice."""
    parts = [part.strip() for part in text.split(",")]
    if not any(parts):
        raise argparse.ArgumentTypeError("expected node label keys, comma-separated")
    try:
        return check_levels(parts)
    except InputError as e:
        raise argparse.ArgumentTypeError(e.message) from None


def label_key(text: str) -> str:
    """One node label key (a qualified name), such as `cloud.google.com/gke-nodepool`."""
    problem = qualified_name_problem(text)
    if problem:
        raise argparse.ArgumentTypeError(f"node label key {echo(text)} {problem}")
    return text


def interval_s(most_s: float) -> Callable[[str], float]:
    """Seconds between checks: 0 (never) or from 1 to `most_s`; a shorter interval would only
    spin a core."""
    seconds = number(0, most_s)

    def parse(text: str) -> float:
        value = seconds(text)
        if 0 < value < 1:
            raise argparse.ArgumentTypeError(f"must be 0 (never) or at least 1, got {text}")
        return value

    return parse


def rfc3339(text: str) -> str:
    """An RFC 3339 instant, checked when the flag is read (`--now ''` is no instant); the text
    is kept, and turned into a time where it is used."""
    from placer.model.durations import parse_rfc3339

    try:
        parse_rfc3339(text)
    except InputError as e:
        raise argparse.ArgumentTypeError(e.message) from None
    return text
