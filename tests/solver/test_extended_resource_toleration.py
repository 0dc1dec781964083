"""The ExtendedResourceToleration admission plugin, as placer models it: for each extended
resource a pod requests it adds `{key: <resource>, operator: Exists, effect: NoSchedule}`
(k8s v1.36.3 `plugin/pkg/admission/extendedresourcetoleration`), so a NoExecute taint of that key
still repels the pod. The planner's index and the independent checker must both say so."""

from __future__ import annotations

from decimal import Decimal

import pytest

from placer.model.cluster import Node
from placer.model.options import SolveOptions
from placer.model.scheduling import Taint, Toleration
from placer.model.workload import PodShape
from placer.solver.check.node_filters import ShapeTolerations, scheduling_violations
from placer.solver.shape_index import node_exclusion

GPU = "nvidia.com/gpu"
POD = PodShape(requests={GPU: Decimal(8)})


def gpu_node(effect: str) -> Node:
    return Node(
        name="n",
        taints=(Taint(key=GPU, value="present", effect=effect),),  # type: ignore[arg-type]
        allocatable={GPU: Decimal(8)},
        free={GPU: Decimal(8)},
    )


def checker_says(node: Node, pod: PodShape) -> list[str]:
    tolerations = ShapeTolerations(SolveOptions(extended_resource_toleration=True))
    return scheduling_violations(node, pod, tolerations.of(pod.model_dump_json(), pod))


def test_the_added_toleration_covers_a_noschedule_taint() -> None:
    node = gpu_node("NoSchedule")
    assert node_exclusion(node, POD, extended_resource_toleration=True) is None
    assert checker_says(node, POD) == []


def test_the_added_toleration_does_not_cover_a_noexecute_taint() -> None:
    node = gpu_node("NoExecute")
    assert node_exclusion(node, POD, extended_resource_toleration=True) == (
        f"taint {GPU}=present:NoExecute"
    )
    assert len(checker_says(node, POD)) == 1


@pytest.mark.parametrize("effect", ["NoSchedule", "NoExecute"])
def test_a_pod_tolerating_the_taint_itself_is_admitted(effect: str) -> None:
    pod = POD.model_copy(update={"tolerations": (Toleration(key=GPU, operator="Exists"),)})
    assert node_exclusion(gpu_node(effect), pod, extended_resource_toleration=True) is None
    assert checker_says(gpu_node(effect), pod) == []
