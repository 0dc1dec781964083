"""Solver settings: one frozen object, passed in, applied in one place by each solver."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from placer.model.errors import InputError
from placer.model.messages import echo
from placer.model.preemption import PreemptionPolicy
from placer.model.read.limits import MAX_WORKERS

__all__ = [
    "DEFAULT_DURATION_S",
    "NOT_EXPLAINED",
    "QueuePolicy",
    "ReservationPolicy",
    "ScheduleMode",
    "ScheduleSearch",
    "SolveOptions",
    "TimePolicy",
]

QueuePolicy = Literal["priority", "strict-fifo"]
ReservationPolicy = Literal["none", "head", "all"]
ScheduleMode = Literal["greedy", "cpsat"]
ScheduleSearch = Literal["fast", "repeatable"]
DEFAULT_DURATION_S = 4 * 3600.0
"""Expected run time of a JobSet that states none: a typical training or fine-tuning run."""


class TimePolicy(BaseModel):
    """Time-aware planning: when waiting JobSets start, and what is held for them meanwhile."""

    model_config = ConfigDict(frozen=True)
    now: datetime | None = None
    """The planning instant (timezone-aware); None means the wall clock when planning starts."""
    reservations: ReservationPolicy = "none"
    """`none`: plan who starts now only; `head`: reserve the future start of the first `head`
    JobSets in queue order that cannot start now (EASY backfill); `all`: of every one
    (conservative backfill). Others start now only where they delay no reservation."""
    head: int = Field(default=1, ge=1)
    schedule: ScheduleMode = "greedy"
    """Who decides the waiting JobSets' start times: `greedy`, the reservation pass in queue
    order (each the earliest slot left); `cpsat`, one CP-SAT model over time for the whole queue
    (`placer/solver/time/schedule/solve.py`), with the greedy pass as its hint and fallback. With
    `cpsat` every waiting JobSet the schedule does not start now gets a reservation."""
    schedule_search: ScheduleSearch = "fast"
    """How the `cpsat` schedule's search is bounded: `fast`, by wall time (a cap, and a stop once
    it stalls), so a cycle's latency is bounded but two runs on the same input may differ with
    the machine's load; `repeatable`, by CP-SAT's deterministic time, so the same input gives the
    same schedule on any machine at any load (slower: see `SCHEDULE_DETERMINISTIC_S`), for
    offline plans and for comparing policies (`placer/solver/cpsat/settings.py`)."""
    default_duration_s: float = Field(default=DEFAULT_DURATION_S, gt=0)
    default_duration_by_priority: dict[int, float] = Field(default_factory=dict)
    """Priority value -> default duration: what the planner reads (see `for_classes`)."""
    default_duration_by_class: dict[str, float] = Field(default_factory=dict)
    """PriorityClass name -> default duration, as `--default-duration CLASS=DURATION` names it.
    Names mean nothing to the planner until the cluster is read: `for_classes` turns them into
    `default_duration_by_priority`, in `placer plan` once per run and in the controller once per
    cycle (the PriorityClasses it lists may change while it runs)."""
    aging_per_hour: float = Field(default=0.0, ge=0)
    """Priority points a pending JobSet gains per hour waited, for queue order; 0 keeps tiers
    strict."""
    max_wait_s: float | None = Field(default=None, gt=0)
    """A JobSet waiting longer than this always gets a reservation, whatever the policy."""

    @property
    def active(self) -> bool:
        return (
            self.reservations != "none" or self.max_wait_s is not None or self.schedule == "cpsat"
        )

    def for_classes(self, priority_classes: Mapping[str, int]) -> TimePolicy:
        """This policy with `default_duration_by_class` resolved against the cluster's
        PriorityClasses (name -> value), the later of two classes of one value winning. A name the
        cluster does not know is a usage error: the duration the user meant for it would
        otherwise be dropped without a word (`placer plan` and the controller both exit 2)."""
        if not self.default_duration_by_class:
            return self
        by_priority = dict(self.default_duration_by_priority)
        for name, seconds in self.default_duration_by_class.items():
            if name not in priority_classes:
                known = ", ".join(sorted(priority_classes)) or "none in the cluster"
                raise InputError(
                    f"unknown PriorityClass {echo(name)} (known: {known})",
                    field="--default-duration",
                    code="usage",
                )
            by_priority[priority_classes[name]] = seconds
        if by_priority == self.default_duration_by_priority:
            return self
        return self.model_copy(update={"default_duration_by_priority": by_priority})


NOT_EXPLAINED = "not explained: planned without reasons"
"""The reason of a JobSet left out of a plan made with `SolveOptions.reasons` off."""


class SolveOptions(BaseModel):
    model_config = ConfigDict(frozen=True)
    time_limit_s: float = 10.0
    """Wall-clock budget of one CP-SAT solve call, counted from its start: aggregation, greedy
    hint and model building use it up before search does (see placer/solver/cpsat/planner.py)."""
    workers: int = Field(default=0, ge=0, le=MAX_WORKERS)
    """CP-SAT search workers; 0 means CP-SAT's default portfolio of 8, whatever the core count."""
    seed: int = 0
    queue: QueuePolicy = "priority"
    """`strict-fifo`: a JobSet is admitted only if every earlier one of its priority tier is."""
    extended_resource_toleration: bool = True
    """Model the ExtendedResourceToleration admission plugin (on by default in GKE and most GPU
    clusters): a pod tolerates `<resource>:NoSchedule`-style taints for the extended resources it
    requests."""
    levels: tuple[str, ...] = ()
    """Topology levels coarse to fine; empty means the snapshot's, else the JobSets' keys."""
    export_model_path: str | None = None
    """Write each CP-SAT stage's model, with its objective, next to this path (one file per stage,
    see placer/solver/cpsat/export.py) for offline reproduction, and with `--schedule cpsat`
    the schedule's model as stage 00; greedy solvers refuse it unless that schedule runs."""
    check: bool = True
    """Run the independent plan checker on the result and refuse a plan that fails it."""
    reasons: bool = True
    """Say why each JobSet left out waits. Off, each says `NOT_EXPLAINED` instead: for plans that
    are only compared and mostly dropped (the time-aware pass's trial solves, the eviction pick
    before reservations), since the classifier behind the reasons takes most of a greedy plan's
    time at fleet scale (0.82-0.85 s of a best-fit plan against 0.15-0.17 s without, 10,000 nodes
    and 500 pending: benchmarks/RESULTS-controller.md, round 50)."""
    time: TimePolicy = Field(default_factory=TimePolicy)
    preemption: PreemptionPolicy = Field(default_factory=PreemptionPolicy)
    """Whether the CP-SAT planner may evict whole running JobSets of lower priority (the greedy
    baselines never do)."""
