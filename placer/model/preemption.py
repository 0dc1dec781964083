"""Preemption's inputs: the policy, what a running JobSet says about itself, and its eviction cost.

Topology-aware preemption (`placer plan --preemption lower-priority`) evicts whole running
JobSets so that a blocked JobSet of higher priority gets the domains they hold. The planner weighs
victims by what an eviction costs, and never picks a protected one. This module only parses and
computes: which JobSets the solver may evict, and which it picks, is the solver's business.

- `PreemptionPolicy`: the flags (`--preemption`, `--restart-cost`, `--preempt-after`).
- `jobset_preemption_facts`: a running JobSet's annotations, `placer.dev/checkpoint-interval`
  (a Go duration: how often it checkpoints) and `placer.dev/preemptible` (`"false"` protects it).
  A bad value is bad input (exit 2, naming the file, the JobSet and the annotation).
- `eviction_cost`: the work lost (its accelerators times the time since its last checkpoint, else
  since it started) plus the restart cost (its accelerators times `restart_cost_s`), in
  accelerator-seconds.
- `PREEMPTED_AT`: when the controller preempted a JobSet, stamped on the JobSet itself with the
  suspend (`placer controller --max-preemptions-per-day` counts them; `stamped`, `with_stamp`).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from placer.model.durations import format_rfc3339, parse_go_duration
from placer.model.errors import InputError
from placer.model.messages import echo

__all__ = [
    "CHECKPOINT_INTERVAL",
    "DEFAULT_MAX_PER_DAY",
    "DEFAULT_RESTART_COST_S",
    "NOT_MOVED",
    "PREEMPTED_AT",
    "PREEMPTIBLE",
    "PREEMPTION_MODES",
    "EvictionCost",
    "PreemptionFacts",
    "PreemptionMode",
    "PreemptionPolicy",
    "eviction_cost",
    "format_stamp",
    "jobset_preemption_facts",
    "recent_preemptions",
    "stamped",
    "with_stamp",
]

CHECKPOINT_INTERVAL = "placer.dev/checkpoint-interval"
PREEMPTIBLE = "placer.dev/preemptible"
PREEMPTED_AT = "placer.dev/preempted-at"
"""On a JobSet the controller preempted: the times (RFC 3339, comma-separated) of its preemptions
in the last day, written with the suspend itself (one merge patch), so the count lives in the
cluster and survives any controller restart."""
DAY_S = 86400.0
DEFAULT_MAX_PER_DAY = 2
"""`placer controller --max-preemptions-per-day`: a JobSet loses at most two runs a day to
preemption (each restart costs it minutes to an hour of its accelerators; preempted more often, a
long job may never progress)."""
DEFAULT_RESTART_COST_S = 300.0
"""Five minutes of a JobSet's accelerators: rescheduling, pulling images, loading a checkpoint."""

NOT_MOVED = "not moved: it keeps running where it is"
"""`placer defrag`: the outcome of a running JobSet in the queue that the plan leaves alone."""

PreemptionMode = Literal["none", "lower-priority", "defrag"]
PREEMPTION_MODES: tuple[PreemptionMode, ...] = ("none", "lower-priority")
"""What `--preemption` offers; `defrag` is `placer defrag`'s own mode (moves, not evictions)."""


class PreemptionPolicy(BaseModel):
    """Whether the planner may evict running JobSets, and how it weighs an eviction."""

    model_config = ConfigDict(frozen=True)
    mode: PreemptionMode = "none"
    """`none`: running JobSets are never evicted; `lower-priority`: a pending JobSet may evict
    whole running JobSets of strictly lower priority that are not protected; `defrag`: running
    JobSets also given in the queue may be moved (restarted whole in other free domains), of any
    priority, unless protected."""
    restart_cost_s: float = Field(default=DEFAULT_RESTART_COST_S, ge=0, allow_inf_nan=False)
    """Seconds of a victim's accelerators a restart costs on top of the work it loses."""
    preempt_after_s: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    """Preempt only for a JobSet expected to wait longer than this without preemption; None:
    for any JobSet that cannot start now."""

    @property
    def active(self) -> bool:
        return self.mode != "none"


class PreemptionFacts(BaseModel):
    """What a running JobSet's own object says about evicting it."""

    model_config = ConfigDict(frozen=True)
    checkpoint_interval_s: float | None = None
    """How often it checkpoints; None: it loses everything since it started."""
    preemptible: bool = True
    """False when annotated `placer.dev/preemptible: "false"`: never a victim."""


def jobset_preemption_facts(
    obj: Mapping[str, Any], *, source: str = "", key: str = ""
) -> PreemptionFacts:
    """The two annotations of a JobSet object, validated: a checkpoint interval is a positive Go
    duration, `preemptible` is `"true"` or `"false"` (as Kubernetes spells booleans)."""
    metadata = obj.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, Mapping) else None
    if not isinstance(annotations, Mapping):
        return PreemptionFacts()
    interval: float | None = None
    text = annotations.get(CHECKPOINT_INTERVAL)
    if text is not None:
        field = f"metadata.annotations[{CHECKPOINT_INTERVAL}]"
        if not isinstance(text, str):
            raise InputError("must be a string", source=source, obj=key, field=field, code="input")
        interval = parse_go_duration(text, source=source, obj=key, field=field)
        if interval <= 0:
            raise InputError(
                f"checkpoint interval must be positive, got {echo(text)}",
                source=source,
                obj=key,
                field=field,
                code="duration",
            )
    preemptible = True
    flag = annotations.get(PREEMPTIBLE)
    if flag is not None:
        value = flag.strip().lower() if isinstance(flag, str) else None
        if value not in ("true", "false"):
            raise InputError(
                f'must be "true" or "false", got {echo(flag)}',
                source=source,
                obj=key,
                field=f"metadata.annotations[{PREEMPTIBLE}]",
                code="input",
            )
        preemptible = value == "true"
    return PreemptionFacts(checkpoint_interval_s=interval, preemptible=preemptible)


class EvictionCost(BaseModel):
    """What evicting one running JobSet costs, in accelerator-seconds (chip-seconds)."""

    model_config = ConfigDict(frozen=True, allow_inf_nan=False)
    accelerators: int = Field(ge=0)
    lost_s: float = Field(ge=0)
    """Seconds of work lost: since its last checkpoint, else since it started."""
    restart_s: float = Field(ge=0)

    @property
    def chip_seconds(self) -> float:
        return self.accelerators * (self.lost_s + self.restart_s)

    @property
    def chip_hours(self) -> float:
        return self.chip_seconds / 3600.0

    @property
    def lost_chip_hours(self) -> float:
        return self.accelerators * self.lost_s / 3600.0


def eviction_cost(
    accelerators: int,
    started_at: datetime | None,
    now: datetime,
    facts: PreemptionFacts,
    restart_cost_s: float,
) -> EvictionCost:
    """Work lost plus restart. A JobSet checkpointing every `c` seconds since it started has
    lost `elapsed mod c`; one whose start is unknown is taken to have started now (it loses
    nothing but the restart), as the release timeline dates it."""
    elapsed = 0.0 if started_at is None else max(0.0, (now - started_at).total_seconds())
    interval = facts.checkpoint_interval_s
    lost = elapsed % interval if interval else elapsed
    return EvictionCost(accelerators=accelerators, lost_s=lost, restart_s=restart_cost_s)


def format_stamp(epoch_s: float) -> str:
    """An eviction's time as stamped on its victim: RFC 3339 UTC, whole seconds."""
    return format_rfc3339(int(epoch_s))


def _stamps(text: object) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()] if isinstance(text, str) else []


def _epoch(stamp: str) -> float | None:
    try:
        when = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None  # an unreadable stamp counts for nothing (it was not placer's)
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()


def stamped(annotations: Mapping[str, Any], epoch_s: float) -> bool:
    """Does the JobSet carry the stamp of the eviction committed at `epoch_s`?"""
    return format_stamp(epoch_s) in _stamps(annotations.get(PREEMPTED_AT))


def recent_preemptions(annotations: Mapping[str, Any], now_s: float) -> int:
    """How many times the JobSet was preempted in the day before `now_s`."""
    times = (_epoch(t) for t in _stamps(annotations.get(PREEMPTED_AT)))
    return sum(1 for t in times if t is not None and now_s - DAY_S < t <= now_s + 60)


def with_stamp(annotations: Mapping[str, Any], epoch_s: float) -> str:
    """The annotation's new value: the stamps of the last day before `epoch_s`, plus this one."""
    kept = [
        t
        for t in _stamps(annotations.get(PREEMPTED_AT))
        if (e := _epoch(t)) is not None and epoch_s - DAY_S < e
    ]
    stamp = format_stamp(epoch_s)
    return ",".join(sorted({*kept, stamp}))
