"""Why a JobSet never fits: its diagnosis on the cluster the time-aware pass judges it on last.

A plan's reason counts each domain beside the rest of the plan, by the first rule that rules it
out, and "held by a running JobSet" comes first. For a JobSet that fits no domain set even once
every running JobSet ends, that hides the rule that rules it out for good: a nodeSelector no
pool matches, on a busy cluster, read as "6 held by running ...", and under Kueue the check
turned Rejected with that text. Counted where nothing runs and nothing is planned
(`Units.last_resort`), the rule named is the one that holds for good.

`NeverReasons` words it for the JobSets the pass found never fitting (`annotate.Annotator`);
`never_reasons` asks the pass's question of the JobSets a plan without time-aware planning left
out, where no expected start says so: `placer explain` asks it of one, and `NeverFitSolver`
(`placer plan` and the controller without time flags) of every JobSet it left out.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Sequence
from datetime import UTC, datetime

from placer.model.cluster import ClusterSnapshot
from placer.model.options import SolveOptions
from placer.model.plan import Plan
from placer.model.workload import JobSetRequest
from placer.solver.interface import Solver
from placer.solver.phases import plus_phase
from placer.solver.reasons import Classifier, jobset_reason
from placer.solver.time.calendar import Calendar
from placer.solver.time.release import ReleaseTimeline, expected_duration_s
from placer.solver.time.reservations import Reservation, fits_some_day
from placer.solver.time.shared.starts import has_shared, shared_starts
from placer.solver.time.units import Units

__all__ = ["NeverFitSolver", "NeverReasons", "never_reason", "never_reasons"]


class NeverReasons:
    """Why JobSets of one pass never fit, each in `placer plan`'s one-line form; the classifier
    is built on first use (a round with no such JobSet pays nothing)."""

    def __init__(self, units: Units) -> None:
        self.units = units
        self._classifier: Classifier | None = None
        self._requests: dict[str, JobSetRequest] = {}

    def reason(self, key: str) -> str | None:
        """JobSet `key`'s diagnosis on `Units.last_resort` (no domain there is "held" or
        "taken"); None for a JobSet the pass was not given."""
        if self._classifier is None:
            ctx = self.units.last_resort()
            self._classifier = Classifier(ctx)
            self._requests = {js.key: js for js in ctx.jobsets}
        request = self._requests.get(key)
        if request is None:
            return None
        return jobset_reason(self._classifier.diagnose(request))


def never_reason(
    snapshot: ClusterSnapshot,
    jobsets: Sequence[JobSetRequest],
    options: SolveOptions,
    jobset: JobSetRequest,
) -> str | None:
    """Why `jobset` (one of `jobsets`) fits no domain set even once every running JobSet ends;
    None when it fits some day (`never_reasons`)."""
    return never_reasons(snapshot, jobsets, options, {jobset.key}).get(jobset.key)


def never_reasons(
    snapshot: ClusterSnapshot,
    jobsets: Sequence[JobSetRequest],
    options: SolveOptions,
    keys: Collection[str],
) -> dict[str, str]:
    """The JobSets of `keys` (of `jobsets`) that fit no domain set even once every running
    JobSet ends, each with why, judged as the time-aware pass judges them (`Units.candidate`,
    `reservations.fits_some_day`; node by node, `shared_starts`, for its child Jobs without
    an exclusive key). One `Units` serves them all: a plan leaves hundreds out at fleet
    scale, and most share a few shapes."""
    asked = [js for js in jobsets if js.key in keys]
    if not asked:
        return {}
    policy = options.time
    now = policy.now or datetime.now(UTC)
    timeline = ReleaseTimeline.of_policy(snapshot, policy, now)
    units = Units(snapshot, jobsets, options, timeline)
    words = NeverReasons(units)
    found: dict[str, str] = {}
    for jobset in asked:
        if _fits_some_day(units, jobset, options):
            continue
        why = words.reason(jobset.key)
        if why is not None:
            found[jobset.key] = why
    return found


def _fits_some_day(units: Units, jobset: JobSetRequest, options: SolveOptions) -> bool:
    """Its child Jobs with an exclusive key fit some domains, and those without one some nodes
    (a JobSet may have both)."""
    policy = options.time
    needs = units.candidate(jobset, policy.default_duration_s).needs
    if needs and not fits_some_day(needs, Calendar(units.layout, {})):
        return False
    if not has_shared(units.ctx, jobset):
        return True
    duration = {jobset.key: expected_duration_s(jobset, policy)}
    domains = {jobset.key: Reservation(jobset.key, 0.0, duration[jobset.key])} if needs else {}
    found = shared_starts(units, [jobset], duration, (), (), domains)
    return found[jobset.key].start_s is not None


class NeverFitSolver:
    """`inner`'s plans, each JobSet it left out that never fits told why from the cluster once
    every run ends, as the time-aware pass tells it (`annotate.Annotator`).

    Without time-aware planning a reason counts each domain beside this round: on a busy
    cluster a JobSet whose nodeSelector no pool matches read "6 held by running ...", as if it
    only had to wait. The check runs once per plan for the JobSets left out (phase `never`);
    internal replans (explain's remedies, capacity's copies) skip it, since no one reads their
    reasons."""

    def __init__(self, inner: Solver) -> None:
        self.inner = inner
        self.name = inner.name

    def solve(
        self, snapshot: ClusterSnapshot, jobsets: Sequence[JobSetRequest], options: SolveOptions
    ) -> Plan:
        plan = self.inner.solve(snapshot, jobsets, options)
        left = {o.key for o in plan.jobsets if o.status == "unschedulable"}
        if not left:
            return plan
        started = time.perf_counter()
        said = never_reasons(snapshot, jobsets, options, left)
        outcomes = [
            o.model_copy(update={"reason": said[o.key]}) if o.key in said else o
            for o in plan.jobsets
        ]
        told = plan.model_copy(update={"jobsets": outcomes})
        return plus_phase(told, "never", time.perf_counter() - started)
