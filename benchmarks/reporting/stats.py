"""Percentiles the over-time reports share, one definition for every figure.

`benchmarks.backfill`'s p50/p95 delays, the simulation's own summary (`results.SimResult`) and
the reports built on them (preemption over time, `who_waits`, the p95 floor) must interpolate
the same way, or two tables of one run would disagree in the last digit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["percentile"]


def percentile(values: Sequence[float], p: float) -> float:
    """The p-th percentile of `values` (p in 0-100), linearly interpolated between the two
    nearest ranks; 0 for none."""
    if not values:
        return 0.0
    s = sorted(values)
    k = (len(s) - 1) * p / 100
    lo, hi = math.floor(k), math.ceil(k)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)
