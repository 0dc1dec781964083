"""Kueue's topology annotations as Kueue's own JobSet webhook reads them, and as placer does.

Each case is a JobSet in a LocalQueue (`kueue.x-k8s.io/queue-name`), created with `dryRun=All`:
Kueue's JobSet webhook (v0.19.2, registered by URL on the loopback address) validates the
pod-template annotations of every replicated job, then JobSet's own webhooks run; nothing is
stored. placer reads the same manifest with `parse_jobset`, which checks the annotations as
`placer.model.kueue.annotations` says; the two verdicts must agree, and agree with the one
written beside the case, but for the one rule placer adds (`STRICTER`, with its reason).
"""

from __future__ import annotations

import copy
from typing import Any

from tests.cluster.scenario import JOBSET_GROUP, JOBSET_VERSION, Scenario
from tests.cluster.verdicts import assert_agree, cluster_accepts_jobset, compare

KUEUE = "kueue.x-k8s.io/"
HOST = "kubernetes.io/hostname"
RACK = "example.com/rack"


def _queued(annotations: dict[str, str], *, pods: int = 4, replicas: int = 2) -> dict[str, Any]:
    pod = {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}
    template = {"metadata": {"annotations": annotations}, "spec": pod}
    job = {"parallelism": pods, "completions": pods, "template": template}
    return {
        "apiVersion": f"{JOBSET_GROUP}/{JOBSET_VERSION}",
        "kind": "JobSet",
        "metadata": {"name": "js", "labels": {f"{KUEUE}queue-name": "training"}},
        "spec": {
            "replicatedJobs": [{"name": "w", "replicas": replicas, "template": {"spec": job}}]
        },
    }


def _two_groups(leader: dict[str, str], workers: dict[str, str]) -> dict[str, Any]:
    """A leader replicated job of one pod, then workers (2 x 4 pods), as Kueue's groups need."""
    body = _queued(leader, pods=1, replicas=1)
    rjob = copy.deepcopy(_queued(workers)["spec"]["replicatedJobs"][0])
    rjob["name"] = "v"
    body["spec"]["replicatedJobs"].append(rjob)
    return body


def _sliced(size: str, *, pods: int = 4, replicas: int = 2) -> dict[str, Any]:
    slices = {a("slice-required-topology"): HOST, a("slice-size"): size}
    return _queued({a("required-topology"): RACK, **slices}, pods=pods, replicas=replicas)


def a(name: str) -> str:
    return f"{KUEUE}podset-{name}"


CASES: list[tuple[str, dict[str, Any], bool]] = [
    # (case, JobSet, Kueue accepts it)
    ("none", _queued({}), True),
    ("required", _queued({a("required-topology"): RACK}), True),
    ("preferred", _queued({a("preferred-topology"): RACK}), True),
    ("unconstrained-true", _queued({a("unconstrained-topology"): "true"}), True),
    ("unconstrained-1", _queued({a("unconstrained-topology"): "1"}), True),
    ("unconstrained-yes", _queued({a("unconstrained-topology"): "yes"}), False),
    (
        "unconstrained-and-required",
        _queued({a("unconstrained-topology"): "true", a("required-topology"): RACK}),
        False,
    ),
    ("required-not-a-key", _queued({a("required-topology"): "a b"}), False),
    ("slice-dividing", _sliced("2"), True),
    ("slice-size-signed", _sliced("+2"), True),  # Go's ParseInt takes a sign
    ("slice-size-underscored", _sliced("2_0", pods=10), False),  # Python's int() took it
    ("slice-size-zero", _sliced("0"), False),
    ("slice-size-not-a-number", _sliced("x"), False),
    ("slice-size-alone", _queued({a("required-topology"): RACK, a("slice-size"): "2"}), False),
    (
        "slice-without-size",
        _queued({a("required-topology"): RACK, a("slice-required-topology"): HOST}),
        False,
    ),
    (
        "required-and-preferred",
        _queued({a("required-topology"): RACK, a("preferred-topology"): HOST}),
        False,
    ),
    (
        "unconstrained-false-and-required",
        _queued({a("unconstrained-topology"): "false", a("required-topology"): RACK}),
        False,
    ),
    (
        "group",
        _two_groups(
            {a("required-topology"): RACK, a("group-name"): "g"},
            {a("required-topology"): RACK, a("group-name"): "g"},
        ),
        True,
    ),
    (
        "group-a-number",
        _two_groups(
            {a("required-topology"): RACK, a("group-name"): "123"},
            {a("required-topology"): RACK, a("group-name"): "123"},
        ),
        False,
    ),
    (
        "group-without-a-level",
        _two_groups({a("group-name"): "g"}, {a("group-name"): "g"}),
        False,
    ),
    (
        "group-with-slices",
        _two_groups(
            {
                a("required-topology"): RACK,
                a("group-name"): "g",
                a("slice-required-topology"): HOST,
            },
            {a("required-topology"): RACK, a("group-name"): "g"},
        ),
        False,
    ),
]


STRICTER: list[tuple[str, dict[str, Any]]] = [
    # (case, JobSet) Kueue's webhook admits and placer refuses: a slice size that does not divide
    # the PodSet's pods (3 of 8); Kueue's TAS counts count / size slices, rounded down, and the
    # annotation says nothing of the pods left over
    ("slice-not-dividing", _sliced("3")),
]


def test_placer_refuses_exactly_the_annotations_kueue_refuses(scenario: Scenario) -> None:
    said, written = compare(CASES, STRICTER, lambda body: cluster_accepts_jobset(scenario, body))
    assert_agree(said, written)
