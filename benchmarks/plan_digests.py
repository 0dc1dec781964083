"""`python -m benchmarks.plan_digests OUT.json`: a digest of every plan of the static scenarios.

For each static scenario (seed 1, size 1.0) and three heterogeneous ones, every solver's plan is
reduced to a short hash of its outcomes (status, reason, child Jobs and their pods) and written
with its objective. Run it on two trees and compare the files: equal digests, identical plans. It
is how a speed change shows it changed no plan (benchmarks/RESULTS-speed.md).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from benchmarks.worlds.scenarios import STATIC_BUILDERS, hetero
from placer.model.options import SolveOptions
from placer.solver.registry import SOLVER_NAMES, get_solver

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.plan_digests", description=__doc__.split("\n\n")[1]
    )
    parser.add_argument("out", type=Path, metavar="OUT.json", help="where the digests go")
    args = parser.parse_args(argv)
    previous = logging.root.manager.disable
    logging.disable(logging.WARNING)  # the solvers' warnings on these scenarios, not wanted here
    try:
        out = _digests()
    finally:
        logging.disable(previous)  # a caller (a test) keeps its own logging
    with args.out.open("w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
    sys.stdout.write(f"{len(out)} plans\n")
    return 0


def _digests() -> dict[str, tuple[float | None, str]]:
    """scenario/solver -> (objective, the plan's digest)."""
    options = SolveOptions(time_limit_s=30, workers=1, seed=1)
    scenarios = [build(1, 1.0) for build in STATIC_BUILDERS.values()]
    scenarios += [hetero(seed, 1.0) for seed in (1, 2, 3)]
    out: dict[str, tuple[float | None, str]] = {}
    for sc in scenarios:
        for policy in SOLVER_NAMES:
            plan = get_solver(policy).solve(sc.snapshot, sc.requests, options)
            outcomes = [
                (
                    o.namespace,
                    o.name,
                    o.status,
                    o.reason,
                    [j.model_dump(mode="json") for j in o.jobs],
                )
                for o in plan.jobsets
            ]
            digest = hashlib.sha256(json.dumps(outcomes, sort_keys=True).encode()).hexdigest()
            out[f"{sc.name}/{policy}"] = (plan.solver.objective, digest[:12])
    return out


if __name__ == "__main__":
    sys.exit(main())
