"""Watch mode: the extender follows the assignments the controller writes on JobSets and the Nodes'
labels, through the official client against the API-server stand-in."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from placer.model.assignment import ASSIGNMENT_ANNOTATION, Assignment
from plugins.extender.service import Service, ServiceOptions, build
from plugins.extender.sources import jobset_entries
from tests.extender.apiserver import JOBSETS_PATH, NODES_PATH, ApiStandIn
from tests.extender.builders import NODES, node_object, plain_pod, post, request, sample_plan


def jobset_object(name: str, *, record: str | None) -> dict[str, Any]:
    annotations = {} if record is None else {ASSIGNMENT_ANNOTATION: record}
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": name, "namespace": "ml", "annotations": annotations},
        "spec": {"replicatedJobs": []},
    }


def record(name: str, *, pinned: bool = False) -> str:
    outcome = sample_plan().outcome(f"ml/{name}")
    return Assignment.from_outcome(outcome, pinned=pinned).to_annotation()


def wait_for(check: Callable[[], bool], timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.05)
    raise AssertionError("condition not reached in time")


def refused(url: str) -> dict[str, str]:
    status, answer = post(url, "filter", {"Pod": plain_pod(), "NodeNames": list(NODES)})
    assert status == 200
    return dict(answer["FailedAndUnresolvableNodes"])


@pytest.fixture
def watched(tmp_path: Path) -> Iterator[tuple[Service, ApiStandIn]]:
    with ApiStandIn() as api:
        for n in NODES:
            api.create(NODES_PATH, {"apiVersion": "v1", "kind": "Node", **node_object(n)})
        api.create(
            f"{JOBSETS_PATH}/namespaces/ml/jobsets", jobset_object("train", record=record("train"))
        )
        options = ServiceOptions(
            host="127.0.0.1", port=0, kubeconfig=str(api.kubeconfig(tmp_path / "kubeconfig"))
        )
        service = build(options).start()
        try:
            wait_for(lambda: request(service.server.url, "GET", "/readyz")[0] == 200)
            yield service, api
        finally:
            service.close()


def test_watch_reserves_domains_from_assignments_and_labels(
    watched: tuple[Service, ApiStandIn],
) -> None:
    service, _ = watched
    # n2 is in train's domain through the watched node labels only
    assert refused(service.server.url) == {
        "n1": "reserved for ml/train",
        "n2": "reserved for ml/train",
    }


def test_watch_follows_new_changed_and_deleted_jobsets(
    watched: tuple[Service, ApiStandIn],
) -> None:
    service, api = watched
    url = service.server.url
    api.create(
        f"{JOBSETS_PATH}/namespaces/ml/jobsets", jobset_object("other", record=record("other"))
    )
    wait_for(lambda: set(refused(url)) == {"n1", "n2", "n5", "n6"})
    status, _ = api.call(
        "PATCH",
        f"{JOBSETS_PATH}/namespaces/ml/jobsets/train",
        {"status": {"terminalState": "Completed"}},
    )
    assert status == 200
    wait_for(lambda: set(refused(url)) == {"n5", "n6"})
    status, _ = api.call("DELETE", f"{JOBSETS_PATH}/namespaces/ml/jobsets/other")
    assert status == 200
    wait_for(lambda: refused(url) == {})


def test_watch_follows_node_labels(watched: tuple[Service, ApiStandIn]) -> None:
    service, api = watched
    url = service.server.url
    moved = {
        "metadata": {
            "labels": {
                "cloud.google.com/gce-topology-block": "b1",
                "cloud.google.com/gce-topology-subblock": "s1",
            }
        }
    }
    status, _ = api.call("PATCH", f"{NODES_PATH}/n10", moved)
    assert status == 200
    wait_for(lambda: set(refused(url)) == {"n1", "n2", "n10"})


@pytest.mark.parametrize(
    ("obj", "why"),
    [
        pytest.param(jobset_object("train", record=None), "no record", id="no-record"),
        pytest.param(jobset_object("train", record="{nope"), "unreadable", id="unreadable"),
        pytest.param(jobset_object("copy", record=record("train")), "copied", id="copied"),
        pytest.param(
            {
                **jobset_object("train", record=record("train")),
                "status": {"terminalState": "Failed"},
            },
            "finished",
            id="finished",
        ),
    ],
)
def test_untrusted_or_finished_records_hold_nothing(obj: dict[str, Any], why: str) -> None:
    key, rows = jobset_entries(obj)
    assert key == f"ml/{obj['metadata']['name']}"
    assert rows == [], why


def test_pinned_record_pins_pods() -> None:
    _, rows = jobset_entries(jobset_object("other", record=record("other", pinned=True)))
    assert [(r.job, r.pinned, r.planned) for r in rows] == [("other-w-0", True, {0: "n5", 1: "n6"})]
