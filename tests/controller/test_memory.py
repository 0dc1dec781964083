"""What the controller carries across cycles: the gather window, retries after a failure, and
events not sent twice."""

from __future__ import annotations

from placer.controller.decide.observe.domains import DomainIndex
from placer.controller.decide.observe.snapshot import planning_snapshot
from placer.controller.decide.observe.survey import survey
from placer.controller.decide.plan.planning import PlannedRound
from placer.controller.decide.review.review import Review, review
from placer.controller.memory import CycleMemory
from placer.model.options import SolveOptions
from tests.controller.builders import add_jobset, state_of, tpu_cluster


def _review_of_two() -> Review:
    cluster = tpu_cluster(blocks=2)
    add_jobset(cluster, "a", jobs=1)
    add_jobset(cluster, "b", jobs=1)
    state = state_of(cluster)
    index = DomainIndex(planning_snapshot(state, binding="gate"))
    return review(survey(state, binding="gate"), index, SolveOptions())


def test_targets_wait_for_the_gather_window_of_the_oldest() -> None:
    rev = _review_of_two()
    memory = CycleMemory()
    waiting = memory.due(rev, 1, 10.0, window_s=2.0, replan_s=60.0, force=False)
    assert waiting.due == [] and waiting.deferred == ["default/a", "default/b"]
    assert waiting.wake_in_s == 2.0
    later = memory.due(rev, 1, 12.5, window_s=2.0, replan_s=60.0, force=False)
    assert [t.key for t in later.due] == ["default/a", "default/b"] and later.wake_in_s is None


def test_an_unschedulable_target_waits_for_a_change_or_the_replan_interval() -> None:
    rev = _review_of_two()
    memory = CycleMemory()
    memory.remember(PlannedRound(unschedulable={"default/a": "full"}), 7, 100.0, [])
    same = memory.due(rev, 7, 130.0, window_s=0.0, replan_s=60.0, force=False)
    assert [t.key for t in same.due] == ["default/b"] and same.deferred == ["default/a"]
    changed = memory.due(rev, 8, 130.0, window_s=0.0, replan_s=60.0, force=False)
    assert [t.key for t in changed.due] == ["default/a", "default/b"]
    overdue = memory.due(rev, 7, 160.0, window_s=0.0, replan_s=60.0, force=False)
    assert [t.key for t in overdue.due] == ["default/a", "default/b"]
    forced = memory.due(rev, 7, 130.0, window_s=0.0, replan_s=60.0, force=True)
    assert [t.key for t in forced.due] == ["default/a", "default/b"]
