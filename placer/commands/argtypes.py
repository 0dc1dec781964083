"""Argument types for numeric and list flags, shared by every subcommand.

argparse calls a flag's `type` with the raw text; these factories give each flag its range in one
line (`type=whole_number(1, 100_000)`), so every command refuses a bad value with the same
wording: `argument --seed: must be at most 2147483647, got 9e99`.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

__all__ = ["PORT", "label_keys", "number", "whole_number"]


def whole_number(lo: int, hi: int | None = None) -> Callable[[str], int]:
    """An integer in [lo, hi] (no upper end when hi is None)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        if value < lo:
            raise argparse.ArgumentTypeError(f"must be >= {lo}, got {text}")
        if hi is not None and value > hi:
            raise argparse.ArgumentTypeError(f"must be at most {hi}, got {text}")
        return value

    return parse


def number(lo: float, hi: float | None = None, *, above: bool = False) -> Callable[[str], float]:
    """A finite number in [lo, hi], or in (lo, hi] with `above`."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
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
    """`KEY,KEY,...`: node label keys, coarse to fine."""
    keys = tuple(part.strip() for part in text.split(",") if part.strip())
    if not keys:
        raise argparse.ArgumentTypeError("expected node label keys, comma-separated")
    return keys
