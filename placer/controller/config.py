"""The controller's settings: one frozen object, built by `placer controller` from its flags."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from placer.controller.decide.kueue.check import DEFAULT_HOLD_QUOTA_S
from placer.controller.decide.observe.survey import Binding
from placer.controller.decide.preempting import DEFAULT_MAX_PER_DAY
from placer.model.options import SolveOptions
from placer.model.preemption import PreemptionPolicy

__all__ = ["ControllerConfig"]


class ControllerConfig(BaseModel):
    model_config = ConfigDict(frozen=True)
    binding: Binding = "gate"
    namespaces: tuple[str, ...] = ()
    """Manage JobSets in these namespaces only (empty: all). Every namespace is still read."""
    pin_nodes: bool = False
    """Also pin each pod to the node the plan gave it (gate binding)."""
    dry_run: bool = False
    solver: str = "cpsat"
    options: SolveOptions = Field(default_factory=lambda: SolveOptions(time_limit_s=10.0))
    window_s: float = 2.0
    """Gather window: plan once the oldest pending JobSet has waited this long."""
    replan_s: float = 60.0
    """Retry unschedulable JobSets at least this often, even when nothing changed; relist at
    least this often while a watch keeps failing."""
    resync_s: float = 600.0
    """Relist everything this often (watches are trusted in between)."""
    debounce_s: float = 0.1
    all_pods: bool = True
    """Watch every pod (true free capacity) rather than only JobSet pods."""
    watch_timeout_s: float = 300.0
    identity: str = ""
    lease: str = ""
    """`namespace/name` of the Lease this controller is elected on: its ledger fence is counted
    under it ("" for --once runs and tests: the ledger's single original term)."""
    ledger_namespace: str = "placer-system"
    """Where the placement ledger (ConfigMap `placer-ledger`) lives: the same for every
    controller of a cluster."""
    list_retry_s: float = 30.0
    """How long a first list keeps retrying temporary API errors before giving up (--once)."""
    kueue_admission_check: bool = False
    """Serve Kueue AdmissionChecks of controllerName `placer.dev/placement` (kueue/check.py):
    watch Workloads, AdmissionChecks, ClusterQueues and ResourceFlavors; plans time-aware."""
    kueue_hold_quota_s: float = DEFAULT_HOLD_QUOTA_S
    """How long a Workload may hold reserved quota waiting for a placement before Retry."""
    max_preemptions_per_day: int = Field(default=DEFAULT_MAX_PER_DAY, ge=0)
    """With `options.preemption` on: a JobSet preempted this many times in the last 24 h (its
    `placer.dev/preempted-at` stamps) is not evicted again until the oldest is a day old."""

    def as_run(self) -> tuple[ControllerConfig, tuple[str, ...]]:
        """The settings as the controller runs them, and a warning per flag it overrode.

        Under `--kueue-admission-check`, Kueue preempts by quota, so placer's own preemption is
        off (`placer controller` refuses the pair with exit 2; a config built in code is told
        by the warning); and planning is time-aware (head reservations at least), since a
        check's Pending message gives the expected start and Rejected needs the verdict on an
        empty cluster, both the time-aware pass's."""
        if not self.kueue_admission_check:
            return self, ()
        config = self
        warnings: list[str] = []
        if config.options.preemption.active:
            warnings.append("--preemption is off under --kueue-admission-check: Kueue preempts")
            options = config.options.model_copy(update={"preemption": PreemptionPolicy()})
            config = config.model_copy(update={"options": options})
        if not config.options.time.active:
            policy = config.options.time.model_copy(update={"reservations": "head"})
            options = config.options.model_copy(update={"time": policy})
            config = config.model_copy(update={"options": options})
        return config, tuple(warnings)
