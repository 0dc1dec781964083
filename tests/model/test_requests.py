"""Properties of the pod-request rule the JobSet parser applies: more containers never ask less."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from placer.model.jobset.parse import parse_jobset
from placer.model.pod_requests import pod_request

RESOURCES = ("cpu", "memory", "google.com/tpu")

amounts = st.dictionaries(st.sampled_from(RESOURCES), st.integers(0, 64), max_size=3)


@st.composite
def containers(draw: st.DrawFn, *, init: bool = False) -> dict[str, Any]:
    requests, limits = draw(amounts), draw(amounts)
    # Kubernetes requires request <= limit where both are set, and an extended resource's
    # request to come with a limit equal to it
    limits = {k: max(v, requests.get(k, 0)) for k, v in limits.items()}
    if "google.com/tpu" in requests:
        limits["google.com/tpu"] = requests["google.com/tpu"]
    c: dict[str, Any] = {
        "name": "c",
        "resources": {
            "requests": {k: str(v) for k, v in requests.items()},
            "limits": {k: str(v) for k, v in limits.items()},
        },
    }
    if init and draw(st.booleans()):
        c["restartPolicy"] = "Always"
    return c


pod_specs = st.fixed_dictionaries(
    {
        "containers": st.lists(containers(), min_size=1, max_size=3),
        "initContainers": st.lists(containers(init=True), max_size=3),
    }
)


def covers(big: dict[str, Decimal], small: dict[str, Decimal]) -> bool:
    return all(big.get(k, Decimal(0)) >= v for k, v in small.items())


@given(pod_specs, containers())
def test_adding_an_app_container_never_asks_less(
    spec: dict[str, Any], extra: dict[str, Any]
) -> None:
    more = {**spec, "containers": [*spec["containers"], extra]}
    assert covers(pod_request(more), pod_request(spec))


@given(pod_specs, containers(init=True))
def test_adding_an_init_or_sidecar_container_never_asks_less(
    spec: dict[str, Any], extra: dict[str, Any]
) -> None:
    for position in range(len(spec["initContainers"]) + 1):
        inits = list(spec["initContainers"])
        inits.insert(position, extra)
        assert covers(pod_request({**spec, "initContainers": inits}), pod_request(spec))


@given(pod_specs)
def test_request_covers_every_app_container(spec: dict[str, Any]) -> None:
    total = pod_request(spec)
    for c in spec["containers"]:
        resources = c["resources"]
        own = {k: Decimal(v) for k, v in {**resources["limits"], **resources["requests"]}.items()}
        assert covers(total, own)


@given(pod_specs)
def test_parser_uses_the_same_rule(spec: dict[str, Any]) -> None:
    m = {
        "kind": "JobSet",
        "metadata": {"name": "j"},
        "spec": {
            "replicatedJobs": [{"name": "w", "template": {"spec": {"template": {"spec": spec}}}}]
        },
    }
    assert parse_jobset(m).replicated_jobs[0].pod.requests == pod_request(spec)
