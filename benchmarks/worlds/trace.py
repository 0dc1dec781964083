"""The Philly GPU trace, read once, sampled reproducibly: what the benchmark queues are drawn from.

Every queue (static scenarios, over-time simulation, scaling) takes job widths, durations and
arrival times from the Microsoft Philly trace (benchmarks/data/philly-jobs.csv, see its README),
so that sizes and the burstiness of arrivals are real rather than invented. What the trace does not
record (replica mixes, priorities, accelerator types) is drawn by the scenario generator and stated
as an assumption in RESULTS.md.

Only jobs of 2 or more GPUs are used: a single-GPU job is not a JobSet that needs exclusive
topology placement (that is an assumption too, listed with the others).
"""

from __future__ import annotations

import csv
import functools
import os
import random
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

__all__ = ["DEFAULT_TRACE", "TraceJob", "load_trace", "sample_jobs", "sample_window"]

DEFAULT_TRACE = Path(
    os.environ.get(
        "PLACER_TRACE",
        str(Path(__file__).resolve().parents[1] / "data" / "philly-jobs.csv"),
    )
)
"""A copy of the trace ships in benchmarks/data (Apache-2.0, see its README there), so benchmarks
and tests run from a fresh clone; PLACER_TRACE overrides the path."""

MIN_GPUS = 2


@dataclass(frozen=True)
class TraceJob:
    """One multi-GPU job of the trace: when it arrived, how wide it was, how long it ran."""

    submit_s: float
    """Seconds since the first job of the trace."""
    gpus: int
    duration_s: float


@functools.lru_cache(maxsize=4)
def load_trace(path: Path = DEFAULT_TRACE) -> tuple[TraceJob, ...]:
    """All jobs of >= 2 GPUs with a positive duration, in submit order (ties by width, duration)."""
    if not path.is_file():
        raise FileNotFoundError(
            f"Philly trace not found at {path}: set PLACER_TRACE to philly-jobs.csv"
        )
    rows: list[tuple[datetime, int, float]] = []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            gpus = int(row["num_gpus"])
            duration = float(row["duration"])
            if gpus < MIN_GPUS or duration <= 0:
                continue
            rows.append((datetime.fromisoformat(row["timestamp"]), gpus, duration))
    rows.sort()
    start = rows[0][0]
    return tuple(TraceJob((t - start).total_seconds(), g, d) for t, g, d in rows)


def sample_window(rng: random.Random, count: int, path: Path = DEFAULT_TRACE) -> list[TraceJob]:
    """`count` consecutive jobs from a random point of the trace, arrivals rebased to zero.

    Consecutive, not independent draws, so that bursts and quiet periods of real arrivals survive.
    """
    jobs = load_trace(path)
    if count >= len(jobs):
        window = list(jobs)
    else:
        first = rng.randrange(0, len(jobs) - count)
        window = list(jobs[first : first + count])
    base = window[0].submit_s
    return [TraceJob(j.submit_s - base, j.gpus, j.duration_s) for j in window]


def sample_jobs(rng: random.Random, count: int, path: Path = DEFAULT_TRACE) -> list[TraceJob]:
    """`count` jobs drawn independently (a static queue's mix), in draw order, arrivals rebased.

    A static snapshot's queue should reflect the trace's size mix, not one user's burst, which a
    short consecutive window often is. Draw order, not submit order, so that any prefix is an
    unbiased sample (the trace's early weeks hold more wide jobs); callers sort what they keep.
    """
    jobs = load_trace(path)
    picked = rng.sample(range(len(jobs)), min(count, len(jobs)))
    base = min(jobs[i].submit_s for i in picked)
    return [TraceJob(jobs[i].submit_s - base, jobs[i].gpus, jobs[i].duration_s) for i in picked]
