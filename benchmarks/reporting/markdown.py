"""Markdown tables as the generated RESULTS.md writes them: one cell format for every figure.

Used by `benchmarks.report` and the sections it assembles (`scaling_section`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["cell", "table"]


def cell(x: Any, digits: int = 2) -> str:
    """One table cell: `-` for a missing figure, floats to `digits` places."""
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    return str(x)


def table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return [*out, ""]
