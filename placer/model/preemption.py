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
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from placer.model.durations import parse_go_duration
from placer.model.errors import InputError
from placer.model.messages import echo

__all__ = [
    "CHECKPOINT_INTERVAL",
    "DEFAULT_RESTART_COST_S",
    "NOT_MOVED",
    "PREEMPTIBLE",
    "PREEMPTION_MODES",
    "EvictionCost",
    "PreemptionFacts",
    "PreemptionMode",
    "PreemptionPolicy",
    "eviction_cost",
    "jobset_preemption_facts",
]

CHECKPOINT_INTERVAL = "placer.dev/checkpoint-interval"
PREEMPTIBLE = "placer.dev/preemptible"
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
