"""The three suites: smoke (CI, seconds), quick (under 3 minutes on 2 cores), full (everything).

Suites differ only in sizes, repeats, time limits and which scaling points run; scenario recipes
are the same, so a quick result previews the full one. Sizes were chosen for run time, never to
move a result toward a target.
"""

from __future__ import annotations

from dataclasses import dataclass

from benchmarks.scaling import ScalePoint
from benchmarks.worlds.simworld import SimConfig

__all__ = ["SUITES", "Suite"]


@dataclass(frozen=True)
class Suite:
    name: str
    static: tuple[str, ...]
    size: float
    """Multiplier on pool and block counts of the static scenarios."""
    hetero_seeds: tuple[int, ...]
    repeats: int
    time_limit_s: float
    sims: tuple[str, ...]
    sim: SimConfig
    sim_time_limit_s: float
    scaling: tuple[ScalePoint, ...]
    end_to_end: ScalePoint | None
    e2e_repeats: int = 1


SUITES: dict[str, Suite] = {
    "smoke": Suite(
        name="smoke",
        static=("tpu-v5e", "gb200-nvl72"),
        size=0.25,
        hetero_seeds=(1,),
        repeats=1,
        time_limit_s=2.0,
        sims=("tpu",),
        sim=SimConfig(jobsets=15, size=0.3, round_s=600.0),
        sim_time_limit_s=1.0,
        scaling=(ScalePoint(100, 10),),
        end_to_end=ScalePoint(100, 10),
    ),
    "quick": Suite(
        name="quick",
        static=(
            "tpu-v5e",
            "tpu-v6e",
            "tpu-v5p",
            "tpu-mixed",
            "h100-subblocks",
            "h200-subblocks",
            "gb200-nvl72",
        ),
        size=1.5,
        hetero_seeds=(1, 2, 3),
        repeats=2,
        time_limit_s=5.0,
        sims=("gb200",),
        sim=SimConfig(jobsets=60, size=1.0),
        sim_time_limit_s=1.0,
        scaling=(ScalePoint(1000, 100),),
        end_to_end=None,
    ),
    "full": Suite(
        name="full",
        static=(
            "tpu-v5e",
            "tpu-v6e",
            "tpu-v5p",
            "tpu-mixed",
            "h100-subblocks",
            "h200-subblocks",
            "gb200-nvl72",
        ),
        size=3.0,
        hetero_seeds=(1, 2, 3, 4, 5),
        repeats=3,
        time_limit_s=10.0,
        sims=("tpu", "gb200"),
        sim=SimConfig(jobsets=300, size=2.0),
        sim_time_limit_s=5.0,
        scaling=(
            ScalePoint(1000, 100),
            ScalePoint(5000, 500),
            ScalePoint(10000, 1000),
            ScalePoint(50000, 1000),
            ScalePoint(50000, 2000),
        ),
        end_to_end=ScalePoint(10000, 300),
        e2e_repeats=3,
    ),
}
