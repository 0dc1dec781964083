"""JobSet manifests as the real API server and JobSet's own webhooks read them, and as placer does.

Each case is a JobSet created with `dryRun=All`: the CRD's schema, JobSet's defaulting and
validating webhooks (registered by URL on the loopback address) all run, nothing is stored. placer
reads the same manifest with `parse_jobset`; the two verdicts must agree, and agree with the one
written beside the case. A JobSet the cluster refuses is one placer must not plan; one it accepts
is one placer must not refuse, but for the few listed in `STRICTER`, each with its reason.
"""

from __future__ import annotations

import copy
from typing import Any

from tests.cluster.scenario import JOBSET_GROUP, JOBSET_VERSION, Scenario
from tests.cluster.verdicts import assert_agree, cluster_accepts_jobset, compare

EXCLUSIVE = "alpha.jobset.sigs.k8s.io/exclusive-topology"


def _jobset(name: str = "js", **spec: Any) -> dict[str, Any]:
    pod = {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}
    rjob = {"name": "w", "replicas": 2, "template": {"spec": {"template": {"spec": pod}}}}
    body: dict[str, Any] = {
        "apiVersion": f"{JOBSET_GROUP}/{JOBSET_VERSION}",
        "kind": "JobSet",
        "metadata": {"name": name},
        "spec": {"replicatedJobs": [rjob]},
    }
    body["spec"].update(spec)
    return body


def _with_rjob(**fields: Any) -> dict[str, Any]:
    body = _jobset()
    body["spec"]["replicatedJobs"][0].update(fields)
    return body


def _with_job_spec(**fields: Any) -> dict[str, Any]:
    body = _jobset()
    body["spec"]["replicatedJobs"][0]["template"]["spec"].update(fields)
    return body


def _two_rjobs(second: dict[str, Any]) -> dict[str, Any]:
    body = _jobset()
    first = body["spec"]["replicatedJobs"][0]
    body["spec"]["replicatedJobs"].append({**copy.deepcopy(first), **second})
    return body


def _annotated(value: str) -> dict[str, Any]:
    body = _jobset()
    body["metadata"]["annotations"] = {EXCLUSIVE: value}
    return body


def _indexed(name: str) -> dict[str, Any]:
    """Two Indexed child Jobs of 100 pods: the last pod is `<name>-w-1-99-` and 5 characters."""
    body = _jobset(name)
    job = body["spec"]["replicatedJobs"][0]["template"]["spec"]
    job.update(completionMode="Indexed", completions=100, parallelism=100)
    return body


def _failure_target(name: str) -> dict[str, Any]:
    rule = {"name": "rule", "action": "FailJobSet", "targetReplicatedJobs": [name]}
    return _jobset(failurePolicy={"maxRestarts": 1, "rules": [rule]})


def _annotations_of(value: str) -> dict[str, Any]:
    body = _jobset()
    body["metadata"]["annotations"] = {"x": value}
    return body


def _nulls() -> dict[str, Any]:
    """What Helm renders for `tolerations:` and the like with nothing after them: nulls."""
    body = _jobset()
    body["metadata"].update(labels=None, annotations=None)
    pod = body["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    pod.update(tolerations=None, nodeSelector=None, hostNetwork=None, initContainers=None)
    pod["containers"][0].update(ports=None, resources=None)
    return body


CASES: list[tuple[str, dict[str, Any], bool]] = [
    # (case, JobSet, both accept it): placer must agree with the cluster
    ("minimal", _jobset(), True),
    ("exclusive", _annotated("cloud.google.com/gke-nodepool"), True),
    ("child-job-name-63", _jobset("j" * 59), True),  # j..j-w-1: 63 characters
    ("child-job-name-64", _jobset("j" * 60), False),
    ("name-starts-with-a-digit", _jobset("1js"), False),  # child Job 1js-w-0: no DNS-1035 label
    ("dotted-name", _jobset("a.b"), False),  # a valid object name; child Job a.b-w-1 is not
    ("annotations-256KiB", _annotations_of("a" * (256 * 1024 - 1)), True),  # with the key "x"
    ("annotations-256KiB-in-bytes", _annotations_of("\u00e9" * 128 * 1024), False),  # 2 bytes each
    ("nulls", _nulls(), True),
    ("replicas-zero", _with_rjob(replicas=0), True),
    ("group-name", _with_rjob(groupName="trainers"), True),
    ("group-name-not-dns-1035", _with_rjob(groupName="Group_1"), False),
    ("parallelism-zero", _with_job_spec(parallelism=0), True),
    ("completions-below-parallelism", _with_job_spec(parallelism=4, completions=2), True),
    ("pods-past-int32", _with_job_spec(parallelism=2**30, completions=2**30), False),
    ("depends-on-first", _with_rjob(dependsOn=[{"name": "w", "status": "Ready"}]), False),
    ("depends-on-first-empty", _with_rjob(dependsOn=[]), False),
    (
        "depends-on-earlier",
        _two_rjobs({"name": "v", "dependsOn": [{"name": "w", "status": "Ready"}]}),
        True,
    ),
    (
        "depends-on-itself",
        _two_rjobs({"name": "v", "dependsOn": [{"name": "v", "status": "Ready"}]}),
        True,
    ),
    (
        "depends-on-later",
        _two_rjobs({"name": "v", "dependsOn": [{"name": "x", "status": "Ready"}]}),
        False,
    ),
    ("duplicate-replicated-job", _two_rjobs({}), False),
    (
        "success-policy-target",
        _jobset(successPolicy={"operator": "All", "targetReplicatedJobs": ["w"]}),
        True,
    ),
    (
        "success-policy-unknown-target",
        _jobset(successPolicy={"operator": "All", "targetReplicatedJobs": ["x"]}),
        False,
    ),
    ("failure-policy-target", _failure_target("w"), True),
    ("failure-policy-unknown-target", _failure_target("x"), False),
    ("indexed-pod-name-63", _indexed("j" * 50), True),
    ("indexed-pod-name-64", _indexed("j" * 51), False),
]

STRICTER: list[tuple[str, dict[str, Any]]] = [
    # (case, JobSet) the cluster admits and placer refuses: JobSet v0.12.0's CRD sets no minimum,
    # but the child Job it makes is one the API server refuses (parallelism) or none at all
    # (replicas), so the JobSet cannot run as written and planning it would mislead
    ("replicas-negative", _with_rjob(replicas=-1)),
    ("parallelism-negative", _with_job_spec(parallelism=-1)),
]


def test_placer_refuses_exactly_the_jobsets_the_cluster_refuses(scenario: Scenario) -> None:
    said, written = compare(CASES, STRICTER, lambda body: cluster_accepts_jobset(scenario, body))
    assert_agree(said, written)
