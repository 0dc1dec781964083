"""JobSet's webhook rules (v0.12.0) as placer applies them; tests/cluster/test_jobset_rules.py
asks the real webhook the same questions."""

from __future__ import annotations

from typing import Any

import pytest

from placer.model.errors import InputError
from placer.model.jobset.parse import parse_jobset


def jobset(name: str = "js", **spec: Any) -> dict[str, Any]:
    pod = {"containers": [{"name": "c", "image": "x"}]}
    rjob = {"name": "w", "replicas": 2, "template": {"spec": {"template": {"spec": pod}}}}
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"replicatedJobs": [rjob], **spec},
    }


def second(**fields: Any) -> dict[str, Any]:
    body = jobset()
    first = body["spec"]["replicatedJobs"][0]
    body["spec"]["replicatedJobs"].append({**first, "name": "v", **fields})
    return body


def indexed(name: str, mode: str = "Indexed") -> dict[str, Any]:
    body = jobset(name)
    job = body["spec"]["replicatedJobs"][0]["template"]["spec"]
    job.update(completionMode=mode, completions=100, parallelism=100)
    return body


def refusal(body: dict[str, Any]) -> tuple[str, str]:
    with pytest.raises(InputError) as caught:
        parse_jobset(body, source="f.yaml")
    assert (caught.value.source, caught.value.code) == ("f.yaml", "jobset")
    return caught.value.field, caught.value.message


LONGEST_63 = "j" * 59  # j..j-w-1


def test_the_longest_child_job_name_may_have_63_characters() -> None:
    assert parse_jobset(jobset(LONGEST_63)).name == LONGEST_63


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        pytest.param(
            jobset("j" * 60), "spec.replicatedJobs[0].name",
            f"gives child Job name '{'j' * 60}-w-1', which must be at most 63 characters, got 64",
            id="child-job-64",
        ),
        pytest.param(
            jobset("1js"), "spec.replicatedJobs[0].name",
            "gives child Job name '1js-w-1', which must be a DNS-1035 label: lower-case letters, "
            "digits and '-', starting with a letter and ending with a letter or digit",
            id="starts-with-a-digit",
        ),
        pytest.param(
            indexed("j" * 51), "spec.replicatedJobs[0].name",
            f"gives pod name '{'j' * 51}-w-1-99-abcde', which must be at most 63 characters, "
            "got 64",
            id="indexed-pod-64",
        ),
        pytest.param(
            second(groupName="Group_1"), "spec.replicatedJobs[1].groupName",
            "group name 'Group_1' must be a DNS-1035 label: lower-case letters, digits and '-', "
            "starting with a letter and ending with a letter or digit",
            id="group-name",
        ),
        pytest.param(
            jobset(replicatedJobs=[{**jobset()["spec"]["replicatedJobs"][0], "dependsOn": []}]),
            "spec.replicatedJobs[0].dependsOn",
            "the first replicatedJob cannot depend on another", id="first-depends-on-nothing",
        ),
        pytest.param(
            second(dependsOn=[{"name": "w"}, {"name": "x"}]),
            "spec.replicatedJobs[1].dependsOn[1].name",
            "'x' is not a replicatedJob listed before this one", id="depends-on-later",
        ),
        pytest.param(
            jobset(successPolicy={"operator": "All", "targetReplicatedJobs": ["w", "x"]}),
            "spec.successPolicy.targetReplicatedJobs[1]",
            "'x' is not a replicatedJob of this JobSet", id="success-target",
        ),
        pytest.param(
            jobset(failurePolicy={"rules": [{}, {"targetReplicatedJobs": ["x"]}]}),
            "spec.failurePolicy.rules[1].targetReplicatedJobs[0]",
            "'x' is not a replicatedJob of this JobSet", id="failure-target",
        ),
    ],
)  # fmt: skip
def test_what_jobsets_webhook_refuses_is_refused_by_field(
    body: dict[str, Any], field: str, message: str
) -> None:
    assert refusal(body) == (field, message)


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(indexed("j" * 50), id="indexed-pod-63"),
        pytest.param(indexed("j" * 51, "NonIndexed"), id="non-indexed-pods-named-at-random"),
        pytest.param(second(dependsOn=[{"name": "w"}]), id="depends-on-earlier"),
        pytest.param(second(dependsOn=[{"name": "v"}]), id="depends-on-itself"),
        pytest.param(jobset(successPolicy={"targetReplicatedJobs": ["w"]}), id="success-target"),
        pytest.param(second(replicas=0), id="no-replicas"),
    ],
)
def test_what_jobsets_webhook_accepts_is_read(body: dict[str, Any]) -> None:
    assert parse_jobset(body).name == body["metadata"]["name"]
