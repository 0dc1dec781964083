"""`ControllerConfig.as_run`: what `--kueue-admission-check` implies for the other settings."""

from __future__ import annotations

from placer.controller.config import ControllerConfig
from placer.model.options import SolveOptions, TimePolicy
from placer.model.preemption import PreemptionPolicy

PREEMPTING = PreemptionPolicy(mode="lower-priority")


def _config(
    *, kueue: bool, preemption: PreemptionPolicy = PREEMPTING, **time: object
) -> ControllerConfig:
    options = SolveOptions(preemption=preemption, time=TimePolicy.model_validate(time))
    return ControllerConfig(kueue_admission_check=kueue, options=options)


def test_without_kueue_the_settings_run_as_given() -> None:
    config = _config(kueue=False)
    assert config.as_run() == (config, ())


def test_under_kueue_placer_does_not_preempt_and_says_so() -> None:
    run, warnings = _config(kueue=True, reservations="all").as_run()
    assert not run.options.preemption.active
    assert warnings == ("--preemption is off under --kueue-admission-check: Kueue preempts",)
    assert run.options.time.reservations == "all"  # a time-aware setting given is kept


def test_under_kueue_planning_is_time_aware_with_head_reservations_at_least() -> None:
    run, warnings = _config(kueue=True, preemption=PreemptionPolicy()).as_run()
    assert run.options.time.active and run.options.time.reservations == "head"
    assert warnings == ()


def test_under_kueue_a_maximum_wait_alone_already_makes_planning_time_aware() -> None:
    run, _ = _config(kueue=True, preemption=PreemptionPolicy(), max_wait_s=3600.0).as_run()
    assert run.options.time.reservations == "none" and run.options.time.max_wait_s == 3600.0
