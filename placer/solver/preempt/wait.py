"""`--preempt-after`: how long a pending JobSet is expected to wait without preemption.

An estimate, deliberately simple and conservative: the first expected end of running JobSets
(`placer.solver.time.release.ReleaseTimeline`) after which the JobSet alone fits the cluster
(best-fit greedy, on the snapshot without every running JobSet ended by then). Other pending
JobSets are not counted: they could only make the wait longer, so a JobSet found to wait past
`--preempt-after` here does. Ends are searched by bisection (more ended JobSets never make a fit
fail), so a queue of P JobSets costs about P log R greedy passes over R running JobSets.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, datetime

from placer.model.cluster import ClusterSnapshot
from placer.model.options import SolveOptions
from placer.model.whatif import without_jobsets
from placer.model.workload import JobSetRequest
from placer.solver.context import PlacementContext
from placer.solver.greedy.baselines import greedy_plan
from placer.solver.time.release import ReleaseTimeline

__all__ = ["expected_wait_s", "waits_longer_than"]


def _fits_alone(snapshot: ClusterSnapshot, jobset: JobSetRequest, options: SolveOptions) -> bool:
    plan = greedy_plan(PlacementContext(snapshot, [jobset], options), "best-fit", explain=False)
    return plan.jobsets[0].status == "placed"


def expected_wait_s(
    snapshot: ClusterSnapshot, jobset: JobSetRequest, options: SolveOptions
) -> float:
    """Seconds until `jobset` alone fits as running JobSets end (0: now; inf: never)."""
    if _fits_alone(snapshot, jobset, options):
        return 0.0
    policy = options.time
    timeline = ReleaseTimeline.of_policy(snapshot, policy, policy.now or datetime.now(UTC))
    ends = sorted(set(timeline.ends_s.values()))
    lo, hi = 0, len(ends)  # the answer is ends[i] for the least i that fits; len: never

    def fits_by(i: int) -> bool:
        gone = [k for k, end in timeline.ends_s.items() if end <= ends[i]]
        return _fits_alone(without_jobsets(snapshot, gone)[0], jobset, options)

    while lo < hi:
        mid = (lo + hi) // 2
        if fits_by(mid):
            hi = mid
        else:
            lo = mid + 1
    return ends[lo] if lo < len(ends) else math.inf


def waits_longer_than(
    snapshot: ClusterSnapshot, options: SolveOptions
) -> Callable[[JobSetRequest], bool] | None:
    """The `--preempt-after` test for `find_victims`; None when the flag is not given."""
    limit = options.preemption.preempt_after_s
    if limit is None:
        return None
    return lambda js: expected_wait_s(snapshot, js, options) > limit
