"""The pure decisions on the sample plan (see builders.py for the layout)."""

from __future__ import annotations

import pytest

from placer.model.assignment import Assignment
from plugins.extender.decide import filter_nodes, prioritize
from plugins.extender.pods import pod_info
from plugins.extender.state import StateView, entries_from_assignment, entries_from_plan
from plugins.extender.store import ExtenderStore
from tests.extender.builders import NODES, daemon_pod, jobset_pod, labels_of, plain_pod, sample_plan

ALL = list(NODES)


def view(*, pinned: bool = False, labels: bool = True) -> StateView:
    known = {n: labels_of(n) for n in NODES} if labels else {}
    return StateView(entries_from_plan(sample_plan(), pinned=pinned), known)


def test_planned_pod_passes_only_on_its_domain() -> None:
    result = filter_nodes(view(), pod_info(jobset_pod("train", "w", 0, 1)), ALL)
    assert result.passed == ("n1", "n2")
    reason = "outside domain b1/s1 of train-w-0"
    assert result.unresolvable == {n: reason for n in ALL if n not in ("n1", "n2")}
    assert result.failed == {}


def test_pinned_planned_pod_passes_only_on_its_node() -> None:
    result = filter_nodes(view(pinned=True), pod_info(jobset_pod("other", "w", 0, 1)), ALL)
    assert result.passed == ("n6",)
    assert result.unresolvable["n5"] == "placer pinned this pod to node n6"


def test_foreign_pod_is_kept_off_reserved_domains_only() -> None:
    result = filter_nodes(view(), pod_info(plain_pod()), ALL)
    assert result.passed == ("n3", "n4", "n7", "n8", "n9", "n10")
    assert result.unresolvable == {
        "n1": "reserved for ml/train",
        "n2": "reserved for ml/train",
        "n5": "reserved for ml/other",
        "n6": "reserved for ml/other",
    }


def test_foreign_pod_on_free_nodes_passes_unchanged() -> None:
    free = ["n10", "n3", "n8"]
    result = filter_nodes(view(), pod_info(plain_pod()), free)
    assert result.passed == tuple(free)
    assert result.unresolvable == {}


@pytest.mark.parametrize(
    "pod",
    [
        pytest.param(jobset_pod("late", "w", 0, 0), id="unschedulable-jobset"),
        pytest.param(jobset_pod("train", "w", 3, 0), id="unplanned-child-job"),
        pytest.param(jobset_pod("train", "w", 0, 0, namespace="other-ns"), id="other-namespace"),
    ],
)
def test_pods_the_plan_does_not_place_are_foreign(pod: dict[str, object]) -> None:
    result = filter_nodes(view(), pod_info(pod), ["n1", "n3"])
    assert result.passed == ("n3",)
    assert result.unresolvable == {"n1": "reserved for ml/train"}


def test_daemonset_pods_pass_everywhere() -> None:
    result = filter_nodes(view(), pod_info(daemon_pod()), ALL)
    assert result.passed == tuple(ALL)


def test_job_without_domain_is_held_to_its_planned_node() -> None:
    result = filter_nodes(view(), pod_info(jobset_pod("shared", "d", 0, 0)), ["n9", "n10"])
    assert result.passed == ("n9",)
    assert result.unresolvable == {"n10": "placer pinned this pod to node n9"}


def test_without_labels_only_planned_nodes_are_known_members() -> None:
    result = filter_nodes(view(labels=False), pod_info(plain_pod()), ALL)
    # n2 is in train's domain but nothing says so: only the planned nodes are kept free.
    assert set(result.unresolvable) == {"n1", "n5", "n6"}


def test_request_labels_decide_over_learned_ones() -> None:
    fresh = {"n3": {**labels_of("n3"), "cloud.google.com/gce-topology-subblock": "s1"}}
    result = filter_nodes(view(), pod_info(plain_pod()), ["n3"], fresh)
    assert result.unresolvable == {"n3": "reserved for ml/train"}


def test_prioritize_scores_planned_node_domain_and_the_rest() -> None:
    scores = prioritize(view(), pod_info(jobset_pod("other", "w", 0, 1)), ["n5", "n6", "n7"])
    assert [(s.host, s.score) for s in scores] == [("n5", 5), ("n6", 10), ("n7", 0)]


def test_prioritize_gives_foreign_pods_zero() -> None:
    scores = prioritize(view(), pod_info(plain_pod()), ["n1", "n3"])
    assert [(s.host, s.score) for s in scores] == [("n1", 0), ("n3", 0)]


def test_assignment_and_plan_rows_agree() -> None:
    plan = sample_plan()
    outcome = plan.outcome("ml/train")
    from_record = entries_from_assignment(
        Assignment.from_annotation(Assignment.from_outcome(outcome, pinned=True).to_annotation())
    )
    from_plan = [e for e in entries_from_plan(plan, pinned=True) if e.jobset == "ml/train"]
    assert from_record == from_plan


def test_store_rebuilds_the_view_after_a_change() -> None:
    store = ExtenderStore()
    store.replace_plan(entries_from_plan(sample_plan()))
    first = store.view()
    assert store.view() is first
    assert store.learn_nodes({"n2": labels_of("n2")})
    second = store.view()
    assert second is not first
    owner = second.owner_of("n2")
    assert owner is not None and owner.jobset == "ml/train"
    assert not store.learn_nodes({"n2": labels_of("n2")})
    assert store.view() is second
    store.set_jobset("ml/train", [])
    assert store.view().owner_of("n2") is None
