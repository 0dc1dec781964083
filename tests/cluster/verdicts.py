"""One question asked of the real components and of placer: is this object accepted?

The conformance tests (test_resource_rules, test_jobset_rules, test_kueue_rules) create each case
with `dryRun=All`, so the API server validates and defaults it and calls every admission webhook
(JobSet's, Kueue's), storing nothing; placer reads the same manifest with `parse_jobset`. A case is
written with the verdict both must give; `STRICTER` cases are ones the cluster admits and placer
refuses on purpose, each with its reason where it is listed.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

from kubernetes.client import ApiClient

from placer.model.errors import InputError
from placer.model.jobset.parse import parse_jobset
from placer.model.priorities import NO_PRIORITY_CLASSES, PriorityClasses
from tests.cluster.scenario import JOBSET_GROUP, JOBSET_VERSION, JOBSETS, Scenario

Case = tuple[str, dict[str, Any], bool]
"""(case, object, both accept it)"""
Verdicts = dict[str, tuple[bool, bool]]
"""case -> (the cluster accepts it, placer accepts it)"""


def raw_dry_run(api: ApiClient, path: str, body: dict[str, Any]) -> bool:
    """POST `body` to `path` with `dryRun=All`, as JSON written as given: the typed client checks
    bodies against its own models first (a quantity must be a string there), which would keep
    JSON numbers and nulls from the server."""
    request = api.param_serialize(
        "POST",
        path,
        query_params=[("dryRun", "All")],
        header_params={"Content-Type": "application/json", "Accept": "application/json"},
        body=body,
        auth_settings=["BearerToken"],
    )
    answer = api.call_api(*request)
    answer.read()  # type: ignore[no-untyped-call]  # unannotated in the client
    status = int(answer.status)
    assert status < 300 or status in (400, 403, 422), answer.data
    return status < 300


def cluster_accepts_jobset(scenario: Scenario, body: dict[str, Any]) -> bool:
    path = f"/apis/{JOBSET_GROUP}/{JOBSET_VERSION}/namespaces/{scenario.namespace}/{JOBSETS}"
    return raw_dry_run(scenario.custom.api_client, path, body)


def placer_accepts_jobset(
    body: dict[str, Any], priorities: PriorityClasses = NO_PRIORITY_CLASSES
) -> bool:
    manifest = copy.deepcopy(body)
    manifest["metadata"]["namespace"] = "ns"
    try:
        parse_jobset(manifest, source="case.yaml", priorities=priorities)
    except InputError:
        return False
    return True


def compare(
    cases: Sequence[Case],
    stricter: Sequence[tuple[str, dict[str, Any]]],
    cluster_accepts: Callable[[dict[str, Any]], bool],
    placer_accepts: Callable[[dict[str, Any]], bool] = placer_accepts_jobset,
) -> tuple[Verdicts, Verdicts]:
    """(what the cluster and placer said of every case, what was written beside each)."""
    asked = [*cases, *((case, body, False) for case, body in stricter)]
    said = {case: (cluster_accepts(body), placer_accepts(body)) for case, body, _ in asked}
    written = {case: (accepts, accepts) for case, _, accepts in cases}
    written |= {case: (True, False) for case, _ in stricter}
    return said, written


def assert_agree(said: Verdicts, written: Verdicts, *, judge: str = "placer") -> None:
    """Every verdict as written; else an AssertionError listing each case that differs, one line
    a case (pytest truncates a comparison of dicts of dozens of cases where it matters); `judge`
    names who gave the second verdict."""

    def verdict(accepts: bool) -> str:
        return "accepts" if accepts else "refuses"

    differing = [
        f"{case}: the cluster {verdict(said[case][0])} (written: {verdict(written[case][0])}), "
        f"{judge} {verdict(said[case][1])} (written: {verdict(written[case][1])})"
        for case in written
        if said[case] != written[case]
    ]
    assert not differing, "\n".join(["verdicts differ from those written:", *differing])
