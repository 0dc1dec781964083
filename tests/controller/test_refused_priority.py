"""A JobSet whose pod template the Priority admission plugin refuses (a `priority` or
`preemptionPolicy` other than its PriorityClass gives, or a class the cluster lacks) can never
have a pod: the controller does not plan it, so it holds no domain, and says why on the JobSet.
tests/cluster/test_priority_rules.py asks the real API server which templates it refuses."""

from __future__ import annotations

from typing import Any

from placer.controller.decide.observe.survey import priorities_of, survey
from placer.controller.reconcile import Controller
from placer.model.priorities import PriorityClasses
from tests.controller.builders import (
    add_jobset,
    assert_valid,
    controller,
    events,
    state_of,
    tpu_cluster,
)

POD = "spec.replicatedJobs[0].template.spec.template.spec"


def _class(name: str, value: int, policy: str | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        **({"preemptionPolicy": policy} if policy else {}),
    }


def _template(obj: dict[str, Any]) -> dict[str, Any]:
    template: dict[str, Any] = obj["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    return template["spec"]  # type: ignore[no-any-return]


def test_a_refused_template_is_not_planned_and_the_event_names_the_field() -> None:
    cluster = tpu_cluster(blocks=2)
    cluster.create("priorityclasses", _class("high", 1000))
    cluster.create("priorityclasses", _class("batch", 10, "Never"))
    pods: list[tuple[str, dict[str, Any]]] = [
        ("stated", {"priorityClassName": "high", "priority": 5000}),
        ("fine", {"priorityClassName": "batch", "preemptionPolicy": "Never"}),
    ]
    for name, pod in pods:
        obj = add_jobset(cluster, name, jobs=2, pods_now=False)
        _template(obj).update(pod)
        cluster.replace("jobsets", obj)
    state = state_of(cluster)
    assert priorities_of(state) == PriorityClasses(
        {"high": 1000, "batch": 10}, None, frozenset({"batch"})
    )
    by_name = {m.key: m for m in survey(state, binding="gate")}
    assert by_name["default/fine"].request is not None
    assert by_name["default/stated"].request is None
    assert f"{POD}.priority: 5000 differs from 1000" in by_name["default/stated"].error

    ctl: Controller = controller(cluster)
    report = assert_valid(ctl.run_once())
    # both want both blocks, the refused one first by the priority it states: it holds none
    assert list(report.planned.placed) == ["default/fine"]
    [event] = events(cluster, "Unschedulable")
    assert event["involvedObject"]["name"] == "stated"
    assert "Priority admission plugin refuses" in event["message"]
    assert ctl.metrics.registry.get_sample_value("placer_invalid_jobsets") == 1
    assert ctl.metrics.registry.get_sample_value("placer_unschedulable_jobsets") == 0
