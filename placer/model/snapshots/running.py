"""What a snapshot knows of the JobSets running in it, beside the capacity they hold.

When each started (the earliest start of its live pods), how long it is expected to run and
whether it may be preempted (both from its JobSet object). Time-aware planning needs the first
two to know when domains free up, preemption the third. Three readers share these functions, so
they agree: the snapshot loaders on files (load.py), the live reader (live.py), and the
controller on its watch cache every time-aware cycle (controller/decide/plan/reserving.py).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from placer.model.cluster import RunningJobSet
from placer.model.durations import jobset_expected_duration
from placer.model.errors import InputError
from placer.model.preemption import PreemptionFacts, jobset_preemption_facts

__all__ = [
    "TERMINAL_PHASES",
    "running_starts",
    "with_expected_durations",
    "with_preemption_facts",
]

log = logging.getLogger(__name__)

TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})
"""Pods in these phases hold no capacity."""


def running_starts(pods: Iterable[tuple[str, object, object]]) -> dict[str, RunningJobSet]:
    """When each running JobSet started: the earliest `status.startTime` of its live pods, given
    as (JobSet key, `status.phase`, `status.startTime`) each. The snapshot loaders call it on the
    snapshot's pods, the controller on its cache's pods every time-aware cycle.

    Its expected duration stays unknown here (the planner's default applies): the JobSet objects
    carry it (`with_expected_durations`), and a snapshot of pods does not."""
    starts: dict[str, datetime] = {}
    for key, phase, text in pods:
        if phase in TERMINAL_PHASES or not isinstance(text, str):
            continue
        try:
            started = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            continue  # a malformed timestamp only loses the date: the run counts from now
        if started.tzinfo is None:
            started = started.replace(tzinfo=UTC)
        if key not in starts or started < starts[key]:
            starts[key] = started
    return {k: RunningJobSet(started_at=v) for k, v in sorted(starts.items())}


def with_expected_durations(
    running: Mapping[str, RunningJobSet],
    jobsets: Iterable[tuple[str, str, Mapping[str, Any]]],
    *,
    warn: bool = True,
) -> dict[str, RunningJobSet]:
    """`running` with the expected durations read from JobSet objects, given as (source, JobSet
    key, manifest) each (annotation, else activeDeadlineSeconds). A bad value only costs its own
    date: it is warned about (`warn`; the controller's survey reports it as an Event instead),
    and the planner's default applies, because a snapshot is what the cluster holds, not a file
    the user can fix before planning."""
    result = dict(running)
    for source, key, manifest in jobsets:
        try:
            duration = jobset_expected_duration(manifest, source=source, key=key)
        except InputError as e:
            if warn:
                log.warning("%s; using the default duration for this running JobSet", e)
            continue
        if duration.seconds is None:
            continue
        update = {"expected_duration_s": duration.seconds, "duration_source": duration.source}
        result[key] = result.get(key, RunningJobSet()).model_copy(update=update)
    return dict(sorted(result.items()))


def with_preemption_facts(
    running: Mapping[str, RunningJobSet],
    jobsets: Iterable[tuple[str, str, Mapping[str, Any]]],
    *,
    strict: bool = True,
) -> dict[str, RunningJobSet]:
    """`running` with each JobSet object's checkpoint interval and `preemptible` flag, given as
    (source, JobSet key, manifest) each. Unlike a duration, a bad value in a file is refused
    (exit 2): it decides whether work may be thrown away, so it is not guessed. Read live
    (`strict=False`: nobody can fix the cluster before planning), it is warned about and the
    JobSet is never a victim."""
    result = dict(running)
    for source, key, manifest in jobsets:
        try:
            facts = jobset_preemption_facts(manifest, source=source, key=key)
        except InputError as e:
            if strict:
                raise
            log.warning("%s; this running JobSet is never preempted", e)
            facts = PreemptionFacts(preemptible=False)
        if facts != PreemptionFacts():
            result[key] = result.get(key, RunningJobSet()).model_copy(update={"preemption": facts})
    return dict(sorted(result.items()))
