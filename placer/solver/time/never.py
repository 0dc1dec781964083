"""Why a JobSet never fits: its diagnosis on the cluster the time-aware pass judges it on last.

A plan's reason counts each domain beside the rest of the plan, by the first rule that rules it
out, and "held by a running JobSet" comes first. For a JobSet that fits no domain set even once
every running JobSet ends, that hides the rule that rules it out for good: a nodeSelector no
pool matches, on a busy cluster, read as "6 held by running ...", and under Kueue the check
turned Rejected with that text. Counted where nothing runs and nothing is planned
(`Units.last_resort`), the rule named is the one that holds for good.

`NeverReasons` words it for the JobSets the pass found never fitting (`annotate.Annotator`);
`never_reason` asks the pass's question for one JobSet, for `placer explain` without time-aware
planning, where no expected start says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from placer.model.cluster import ClusterSnapshot
from placer.model.options import SolveOptions
from placer.model.workload import JobSetRequest
from placer.solver.reasons import Classifier, jobset_reason
from placer.solver.time.calendar import Calendar
from placer.solver.time.release import ReleaseTimeline, expected_duration_s
from placer.solver.time.reservations import fits_some_day
from placer.solver.time.shared_starts import only_shared, shared_starts
from placer.solver.time.units import Units

__all__ = ["NeverReasons", "never_reason"]


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
    """Why `jobset` (one of `jobsets`) fits no domain set even once every running JobSet ends,
    judged as the time-aware pass judges it (`Units.candidate`, `reservations.fits_some_day`;
    node by node, `shared_starts`, for a JobSet without an exclusive child Job); None when it
    fits some day."""
    policy = options.time
    now = policy.now or datetime.now(UTC)
    timeline = ReleaseTimeline.of_policy(snapshot, policy, now)
    units = Units(snapshot, jobsets, options, timeline)
    needs = units.candidate(jobset, policy.default_duration_s).needs
    if not needs:
        if not only_shared(units.ctx, jobset):
            return None
        duration = {jobset.key: expected_duration_s(jobset, policy)}
        if shared_starts(units, [jobset], duration, (), ())[jobset.key].start_s is not None:
            return None
    elif fits_some_day(needs, Calendar(units.layout, {})):
        return None
    return NeverReasons(units).reason(jobset.key)
