"""What a pod asks of its node: pod-level resources and the API server's resource rules.

The expected values are kube-scheduler's `PodRequests` (k8s.io/component-helpers v0.36.3) and the
API server's defaults and validation (k8s.io/kubernetes v1.36.3, `validateResourceRequirements`,
`validatePodResourceConsistency`), worked out by hand for each case;
tests/cluster/test_resource_rules.py asks the real API server the same questions.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from placer.model.errors import InputError
from placer.model.pod_requests import pod_request
from placer.model.resources import as_scheduled

GI = 2**30
MI = 2**20
Spec = dict[str, Any]


def container(requests: dict[str, Any] | None = None, limits: dict[str, Any] | None = None) -> Spec:
    resources: dict[str, Any] = {}
    if requests is not None:
        resources["requests"] = requests
    if limits is not None:
        resources["limits"] = limits
    return {"name": "c", "resources": resources}


def spec(*containers: Spec, resources: Spec | None = None, **more: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"containers": list(containers), **more}
    if resources is not None:
        out["resources"] = resources
    return out


def refused(pod_spec: dict[str, Any]) -> InputError:
    with pytest.raises(InputError) as caught:
        pod_request(pod_spec, source="f.yaml", obj="ns/x")
    return caught.value


# --- pod-level resources: what kube-scheduler counts ---------------------------------------------


def test_a_pod_level_request_is_what_the_pod_asks() -> None:
    tpu = {"google.com/tpu": "4"}
    pod = spec(container(tpu, tpu), resources={"requests": {"cpu": "3", "memory": "8Gi"}})
    assert pod_request(pod) == {
        "cpu": Decimal(3),
        "memory": Decimal(8 * GI),
        "google.com/tpu": Decimal(4),
    }


def test_a_pod_level_request_replaces_the_containers_sum_of_that_resource_only() -> None:
    pod = spec(
        container({"cpu": "1", "memory": "1Gi"}),
        container({"cpu": "1"}),
        resources={"requests": {"cpu": "5"}},
    )
    assert pod_request(pod) == {"cpu": Decimal(5), "memory": Decimal(GI)}


def test_a_pod_level_limit_is_the_request_of_a_resource_no_container_requests() -> None:
    pod = spec(container({"memory": "1Gi"}), resources={"limits": {"cpu": "6", "memory": "4Gi"}})
    # cpu: no container asks, so the pod-level limit is the request; memory: the containers'
    assert pod_request(pod) == {"cpu": Decimal(6), "memory": Decimal(GI)}


def test_a_container_limit_is_a_request_before_the_pod_level_default() -> None:
    pod = spec(container(limits={"cpu": "2"}), resources={"limits": {"cpu": "6"}})
    assert pod_request(pod) == {"cpu": Decimal(2)}


def test_overhead_is_added_on_top_of_the_pod_level_request() -> None:
    pod = spec(container(), resources={"requests": {"cpu": "2"}}, overhead={"cpu": "250m"})
    assert pod_request(pod) == {"cpu": Decimal("2.25")}


def test_sidecars_and_init_containers_count_before_the_pod_level_request_is_checked() -> None:
    pod = spec(
        container({"cpu": "1"}),
        initContainers=[
            {**container({"cpu": "2"}), "restartPolicy": "Always"},
            container({"cpu": "4"}),
        ],
        resources={"requests": {"cpu": "6"}},
    )
    assert pod_request(pod) == {"cpu": Decimal(6)}
    # the plain init container runs beside the sidecar: 2 + 4 = 6 is the containers' request
    pod["resources"]["requests"]["cpu"] = "5"
    error = refused(pod)
    assert (error.field, error.message) == (
        "spec.resources.requests.cpu",
        "must be at least the containers' requests, 6",
    )


def test_pod_level_hugepages_are_the_pod_level_limit() -> None:
    pod = spec(
        container({"memory": "1Gi", "hugepages-2Mi": "2Mi"}, {"hugepages-2Mi": "2Mi"}),
        resources={"limits": {"memory": "2Gi", "hugepages-2Mi": "8Mi"}},
    )
    assert pod_request(pod) == {"memory": Decimal(GI), "hugepages-2Mi": Decimal(8 * MI)}


def test_an_empty_pod_level_block_changes_nothing() -> None:
    pod = spec(container({"cpu": "1"}), resources={})
    assert pod_request(pod) == {"cpu": Decimal(1)}


@pytest.mark.parametrize(
    ("resources", "containers", "field", "message"),
    [
        pytest.param(
            {"requests": {"cpu": "1"}}, [container({"cpu": "2"})],
            "spec.resources.requests.cpu", "must be at least the containers' requests, 2",
            id="below-the-containers",
        ),
        pytest.param(
            {"requests": {"cpu": "3"}, "limits": {"cpu": "2"}}, [],
            "spec.resources.requests.cpu", "must be less than or equal to the limit 2",
            id="over-its-limit",
        ),
        pytest.param(
            {"limits": {"cpu": "2"}}, [container({"cpu": "3"})],
            "spec.resources.requests.cpu", "must be less than or equal to the limit 2",
            id="defaulted-over-its-limit",
        ),
        pytest.param(
            {"limits": {"memory": "1Gi"}}, [container({"memory": "512Mi"}, {"memory": "2Gi"})],
            "spec.containers[0].resources.limits.memory", "must be at most the pod-level limit "
            "1073741824", id="container-limit-over-the-pod",
        ),
        pytest.param(
            {"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1"}}, [],
            "spec.resources.limits.nvidia.com/gpu",
            "resource name 'nvidia.com/gpu' is not supported at pod level (cpu, memory, "
            "hugepages-<size>)", id="extended-at-pod-level",
        ),
        pytest.param(
            {"requests": {"memory": "1Gi", "hugepages-2Mi": "2Mi"}}, [],
            "spec.resources.requests.hugepages-2Mi",
            "needs a limit equal to it (hugepages are not overcommitted)",
            id="hugepages-without-limit",
        ),
        pytest.param(
            {"limits": {"memory": "1Gi", "hugepages-2Mi": "2Mi"}},
            [container({"memory": "1Gi", "hugepages-2Mi": "4Mi"}, {"hugepages-2Mi": "4Mi"})],
            "spec.resources.requests.hugepages-2Mi",
            "must be at least the containers' requests, 4194304",
            id="hugepages-below-the-containers",
        ),
        pytest.param(
            {"claims": [{"name": "gpu"}]}, [], "spec.resources.claims",
            "claims may not be set at pod level", id="claims",
        ),
        pytest.param(
            ["cpu"], [], "spec.resources", "resources must be a mapping", id="not-a-mapping",
        ),
    ],
)  # fmt: skip
def test_pod_level_resources_follow_the_api_server(
    resources: Any, containers: list[Spec], field: str, message: str
) -> None:
    error = refused(spec(*containers, resources=resources))
    assert (error.source, error.obj, error.field, error.message) == (
        "f.yaml",
        "ns/x",
        field,
        message,
    )


# --- container resources: the API server's rules -----------------------------------------------


@pytest.mark.parametrize(
    ("requests", "limits", "field", "message"),
    [
        pytest.param(
            {"gpu": "1"}, None, "requests.gpu",
            "resource name 'gpu' must be a standard resource for containers (cpu, memory, "
            "ephemeral-storage, hugepages-<size>)", id="unprefixed-non-standard",
        ),
        pytest.param(
            None, {"pods": "1"}, "limits.pods",
            "resource name 'pods' must be a standard resource for containers (cpu, memory, "
            "ephemeral-storage, hugepages-<size>)", id="pods-is-a-node-resource",
        ),
        pytest.param(
            {"requests.nvidia.com/gpu": "1"}, {"requests.nvidia.com/gpu": "1"},
            "limits.requests.nvidia.com/gpu",
            "resource name 'requests.nvidia.com/gpu' does not follow the extended resource name "
            "standard", id="quota-name",
        ),
        pytest.param(
            {f"{'a' * 245}.com/gpu": "1"}, None, f"requests.{'a' * 245}.com/gpu",
            f"resource name '{'a' * 245}.com/gpu' does not follow the extended resource name "
            "standard", id="prefix-too-long-as-a-quota-name",
        ),
        pytest.param(
            {"memory": "1Gi", "hugepages-2Mi": "3Mi"}, {"hugepages-2Mi": "3Mi"},
            "limits.hugepages-2Mi",
            "must be a whole number of 2Mi pages, got 3145728 bytes",
            id="hugepages-not-whole-pages",
        ),
        pytest.param(
            {"memory": "1Gi", "hugepages-x": "2Mi"}, {"hugepages-x": "2Mi"},
            "limits.hugepages-x", "resource name 'hugepages-x' names no page size",
            id="hugepages-no-page-size",
        ),
        pytest.param(
            {"hugepages-2Mi": "2Mi"}, {"hugepages-2Mi": "2Mi"}, "",
            "hugepages require a cpu or memory request or limit beside them",
            id="hugepages-alone",
        ),
    ],
)  # fmt: skip
def test_container_resources_follow_the_api_server(
    requests: Spec | None, limits: Spec | None, field: str, message: str
) -> None:
    error = refused(spec(container(requests, limits)))
    where = "spec.containers[0].resources"
    assert (error.field, error.message) == (f"{where}.{field}" if field else where, message)


@pytest.mark.parametrize(
    "name",
    ["cpu", "memory", "ephemeral-storage", "kubernetes.io/anything", "example.com/fpga"],
)
def test_names_the_api_server_accepts_are_read(name: str) -> None:
    assert pod_request(spec(container({name: "1"}, {name: "1"}))) == {name: Decimal(1)}


LONG_NATIVE = f"{'a' * 60}.{'a' * 60}.{'a' * 60}.{'a' * 50}.kubernetes.io/x"
"""A native name whose prefix (247 characters) would be too long as a quota name: the API server
checks only extended names that way."""


def test_a_native_name_is_not_held_to_the_extended_name_rule() -> None:
    assert pod_request(spec(container({LONG_NATIVE: "1"}))) == {LONG_NATIVE: Decimal(1)}


def test_no_resources_and_zero_requests_ask_nothing() -> None:
    assert pod_request(spec({"name": "c", "resources": None})) == {}
    assert pod_request(spec(container({"cpu": "0", "memory": "0"}))) == {}


def test_hugepages_are_counted_in_whole_bytes_as_go_reads_them() -> None:
    """`Quantity.Value()` rounds up to a whole byte before the page check: 2Mi less half a byte
    is one page of 2Mi, and kube-scheduler counts it as that page."""
    almost = {"memory": "1Gi", "hugepages-2Mi": "2097151500m"}
    pod = spec(container(almost, {"hugepages-2Mi": "2097151500m"}))
    assert pod_request(pod)["hugepages-2Mi"] == 2 * MI


def test_a_page_size_of_a_fraction_of_a_byte_names_no_page() -> None:
    error = refused(spec(container(limits={"memory": "1Gi", "hugepages-1500m": "3"})))
    assert error.message == "resource name 'hugepages-1500m' names no page size"


def test_hugepages_of_whole_pages_beside_memory_are_read() -> None:
    pod = spec(container({"memory": "1Gi", "hugepages-1Gi": "2Gi"}, {"hugepages-1Gi": "2Gi"}))
    assert pod_request(pod) == {"memory": Decimal(GI), "hugepages-1Gi": Decimal(2 * GI)}


# --- properties ----------------------------------------------------------------------------------

cpu_amounts = st.integers(0, 64)


@given(st.lists(cpu_amounts, min_size=1, max_size=4), st.integers(0, 64), st.integers(0, 64))
def test_a_pod_level_cpu_request_at_or_above_the_containers_is_the_pods_cpu(
    per_container: list[int], extra: int, memory: int
) -> None:
    containers = [container({"cpu": str(c), "memory": str(memory)}) for c in per_container]
    pod_level = sum(per_container) + extra
    counted = pod_request(spec(*containers, resources={"requests": {"cpu": str(pod_level)}}))
    assert counted.get("cpu", Decimal(0)) == pod_level
    assert counted.get("memory", Decimal(0)) == memory * len(per_container)


def test_the_pod_total_is_rounded_as_kube_scheduler_counts_it_not_each_container() -> None:
    """kube-scheduler sums the exact quantities (`PodRequests`), then takes `MilliValue` of cpu
    and `Value` of the rest: two containers of 250250u cpu are one pod of 501m (not 502m), and
    a request below a byte is a whole byte."""
    pod = spec(
        container({"cpu": "250250u", "memory": "1.5"}),
        container({"cpu": "250250u", "memory": "1.25"}),
    )
    assert pod_request(pod) == {"cpu": Decimal("0.501"), "memory": Decimal(3)}
    with_overhead = spec(container({"cpu": "1m"}), overhead={"cpu": "1u"})
    assert pod_request(with_overhead) == {"cpu": Decimal("0.002")}


@given(st.decimals(min_value=0, max_value=10**12, places=9), st.sampled_from(["cpu", "memory"]))
def test_rounding_to_the_schedulers_units_is_the_least_multiple_at_or_above(
    value: Decimal, name: str
) -> None:
    step = Decimal("0.001") if name == "cpu" else Decimal(1)
    (rounded,) = as_scheduled({name: value}).values()
    assert rounded >= value and rounded - value < step
    assert (rounded / step) == (rounded / step).to_integral_value()
    assert as_scheduled({name: rounded}) == {name: rounded}
