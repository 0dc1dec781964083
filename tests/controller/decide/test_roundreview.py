"""What a round makes of its observation (roundreview.judge), decided without a cluster: Kueue's
Workloads say which suspended JobSets are planned, a finished eviction is released from the
ledger, and who may be evicted is asked only with `--preemption`."""

from __future__ import annotations

from typing import Any

from placer.controller.decide.observe.domains import DomainIndex
from placer.controller.decide.observe.snapshot import planning_snapshot
from placer.controller.decide.observe.state import ClusterState
from placer.controller.decide.observe.survey import jobset_pods, survey
from placer.controller.decide.observed import Observed
from placer.controller.decide.records.ledger import EVICTION, Ledger, entry_key
from placer.controller.decide.round.roundreview import ReviewSettings, judge
from placer.model.options import SolveOptions
from placer.model.preemption import PreemptionPolicy
from tests.controller.builders import state_of, tpu_cluster
from tests.controller.decide.kueue.test_check import (
    NOW_S,
    NOW_TEXT,
    suspended_jobset,
    with_kueue,
    workload,
)
from tests.controller.decide.test_preempting import eviction, running_low

PLAIN = SolveOptions()
PREEMPTING = SolveOptions(preemption=PreemptionPolicy(mode="lower-priority"))


def _observed(state: ClusterState, ledger: Ledger | None = None) -> Observed:
    """The observe phase's value for `state` (and `ledger`, read by the survey too)."""
    ledger = ledger or Ledger(namespace="placer-system")
    snapshot = planning_snapshot(state, binding="gate")
    return Observed(
        state=state,
        ledger=ledger,
        managed=tuple(survey(state, binding="gate", ledger=ledger)),
        snapshot=snapshot,
        index=DomainIndex(snapshot),
        pods=jobset_pods(state),
    )


def _targets(observed: Observed, **settings: Any) -> list[str]:
    judged = judge(observed, PLAIN, ReviewSettings(now=NOW_TEXT, wall_s=NOW_S, **settings))
    return [t.key for t in judged.review.targets]


def test_under_kueue_a_suspended_jobset_is_planned_once_its_workload_holds_quota() -> None:
    cluster = tpu_cluster(blocks=3)
    suspended_jobset(cluster, "a", jobs=2)
    suspended_jobset(cluster, "b", jobs=2)
    observed = _observed(with_kueue(state_of(cluster), workload("a", [("w", 4)])))
    assert _targets(observed, kueue=True) == ["default/a"]
    judged = judge(observed, PLAIN, ReviewSettings(kueue=True, now=NOW_TEXT, wall_s=NOW_S))
    assert judged.kueue is not None and judged.eligibility is None


def test_a_finished_eviction_is_released_from_the_ledger() -> None:
    """`low` was evicted and deleted (its pods gone): its eviction entry holds nothing now and
    is released by the round's commit."""
    cluster = tpu_cluster(blocks=2)
    key = entry_key(EVICTION, "default/low")
    ledger = Ledger(namespace="placer-system", resource_version="1", entries={key: eviction()})
    judged = judge(
        _observed(state_of(cluster), ledger), PLAIN, ReviewSettings(now=NOW_TEXT, wall_s=NOW_S)
    )
    assert judged.evictions.done == {key}
    assert key in judged.ledger.release


def test_who_may_be_evicted_is_asked_only_with_preemption() -> None:
    cluster = tpu_cluster(blocks=2)
    running_low(cluster)
    observed = _observed(state_of(cluster))
    settings = ReviewSettings(now=NOW_TEXT, wall_s=NOW_S, max_preemptions_per_day=2)
    assert judge(observed, PLAIN, settings).eligibility is None
    eligible = judge(observed, PREEMPTING, settings).eligibility
    assert eligible is not None and eligible.no_preempt == frozenset()
