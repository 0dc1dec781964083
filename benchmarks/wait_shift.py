"""Whose waits a change moved: `python -m benchmarks.wait_shift --before A*.json --after B*.json`.

A change to the time-aware pass moves a cell's p95 and max, and over several seeds the two
policies' figures move together; the next question is which JobSets wait longer and which less.
`benchmarks.who_waits --dump FILE` writes every JobSet's wait in one cell; run it on the tree
before and after the change (a clone of each, the same seeds), then this sets the files side by
side, seed by seed (the files in the order given, the same JobSets in each pair): per seed the
p95, the longest and the mean wait, and over all seeds the mean wait of each kind of JobSet
(`who_waits.group`: child shape, one child Job or more, locality). Round 45 of issue 21
(benchmarks/RESULTS-backfill.md) used it to find that two changes to the racks the pass gives
child Jobs of 16 hosts lengthened the waits of wide JobSets of that shape.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.reporting.stats import percentile
from benchmarks.worlds.simworld import HOUR

__all__ = ["GroupShift", "SeedShift", "main", "render", "shifts"]


@dataclass(frozen=True)
class SeedShift:
    """One seed's p95, longest and mean wait (seconds), before and after."""

    command: str
    before: tuple[float, float, float]
    after: tuple[float, float, float]


@dataclass(frozen=True)
class GroupShift:
    """One kind of JobSet over every seed: how many, and their mean wait before and after."""

    group: str
    count: int
    before_s: float
    after_s: float


def _summary(waits: Sequence[float]) -> tuple[float, float, float]:
    return percentile(waits, 95), max(waits, default=0.0), sum(waits) / max(len(waits), 1)


def shifts(
    pairs: Sequence[tuple[dict[str, Any], dict[str, Any]]], policy: str
) -> tuple[list[SeedShift], list[GroupShift]]:
    """Per pair of dumps (before, after; `who_waits.dump`), `policy`'s p95, max and mean; and
    per kind of JobSet over all pairs, its mean wait before and after, by kind's name."""
    seeds: list[SeedShift] = []
    totals: dict[str, list[float]] = {}
    for before, after in pairs:
        names = [j["name"] for j in before["jobsets"]]
        if names != [j["name"] for j in after["jobsets"]]:
            raise ValueError(f"not the same JobSets: {before['command']!r}, {after['command']!r}")
        if policy not in before["waits_s"] or policy not in after["waits_s"]:
            raise ValueError(f"no waits of {policy!r} in {before['command']!r}")
        was, now = before["waits_s"][policy], after["waits_s"][policy]
        seeds.append(SeedShift(before["command"], _summary(was), _summary(now)))
        for j, w0, w1 in zip(before["jobsets"], was, now, strict=True):
            t = totals.setdefault(j["group"], [0, 0.0, 0.0])
            t[0] += 1
            t[1] += w0
            t[2] += w1
    groups = [GroupShift(g, int(n), b / n, a / n) for g, (n, b, a) in sorted(totals.items())]
    return seeds, groups


def render(seeds: Sequence[SeedShift], groups: Sequence[GroupShift], policy: str) -> list[str]:
    """The report: a row per seed, then a row per kind of JobSet."""

    def trio(v: tuple[float, float, float]) -> str:
        return " / ".join(f"{x / HOUR:.2f}" for x in v)

    lines = [f"`{policy}`: p95 / max / mean wait, hours", ""]
    lines += ["| cell | before | after |", "|---|---|---|"]
    lines += [f"| `{s.command}` | {trio(s.before)} | {trio(s.after)} |" for s in seeds]
    lines += ["", "| JobSets | count | mean wait before h | after h |", "|---|---|---|---|"]
    lines += [
        f"| {g.group} | {g.count} | {g.before_s / HOUR:.2f} | {g.after_s / HOUR:.2f} |"
        for g in groups
    ]
    return lines


def _load(path: Path) -> dict[str, Any]:
    try:
        data: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise SystemExit(f"error: {path}: {e}") from None
    if not {"command", "jobsets", "waits_s"} <= data.keys():
        raise SystemExit(f"error: {path}: not a `benchmarks.who_waits --dump` file")
    return data


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, nargs="+", required=True)
    parser.add_argument("--after", type=Path, nargs="+", required=True)
    parser.add_argument("--policy", default="easy-aging")
    args = parser.parse_args(argv)
    if len(args.before) != len(args.after):
        print("error: --before and --after name different numbers of files", file=sys.stderr)
        return 2
    pairs = [(_load(b), _load(a)) for b, a in zip(args.before, args.after, strict=True)]
    try:
        seeds, groups = shifts(pairs, args.policy)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print("\n".join(render(seeds, groups, args.policy)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
