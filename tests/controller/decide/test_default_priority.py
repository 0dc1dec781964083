"""A JobSet whose templates name no PriorityClass has the cluster's `globalDefault` one, as the
Priority admission plugin gives every pod of it: the controller's survey reads it so."""

from __future__ import annotations

from typing import Any

from placer.controller.decide.observe.survey import priorities_of, survey
from placer.model.priorities import PriorityClasses
from tests.controller.builders import add_jobset, state_of, tpu_cluster


def _class(name: str, value: int, default: bool = False) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        "globalDefault": default,
    }


def test_a_jobset_naming_no_class_has_the_default_classs_priority() -> None:
    cluster = tpu_cluster(blocks=2)
    cluster.create("priorityclasses", _class("low", 100))
    cluster.create("priorityclasses", _class("standard", 500, default=True))
    named = add_jobset(cluster, "named", pods_now=False)
    template = named["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    template["priorityClassName"] = "low"
    cluster.replace("jobsets", named)
    add_jobset(cluster, "plain", pods_now=False)
    state = state_of(cluster)
    assert priorities_of(state) == PriorityClasses({"low": 100, "standard": 500}, "standard")
    by_name = {m.request.name: m.request for m in survey(state, binding="gate") if m.request}
    assert (by_name["plain"].priority, by_name["plain"].priority_class_name) == (500, "standard")
    assert (by_name["named"].priority, by_name["named"].priority_class_name) == (100, "low")


def test_of_several_defaults_the_lowest_value_is_the_default() -> None:
    cluster = tpu_cluster(blocks=1)
    cluster.create("priorityclasses", _class("a", 900, default=True))
    cluster.create("priorityclasses", _class("b", 300, default=True))
    assert priorities_of(state_of(cluster)).default == "b"
