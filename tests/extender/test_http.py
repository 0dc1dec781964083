"""The extender over real HTTP on 127.0.0.1, with payloads in the upstream wire format.

The server runs in `--plan` mode on the sample plan (builders.py) with the cluster's labels from a
snapshot file; bind, with no API server to reach, answers the error for kube-scheduler to retry.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from plugins.extender.server import ExtenderApp, ExtenderServer
from plugins.extender.service import Service, ServiceOptions, build
from plugins.extender.store import ExtenderStore
from tests.cluster.processes import free_port
from tests.controller.apiserver import kubeconfig
from tests.extender.builders import (
    NODES,
    jobset_pod,
    node_object,
    plain_pod,
    post,
    request,
    write_inputs,
)

ALL = list(NODES)
TRAIN_REASON = "outside domain b1/s1 of train-w-0"


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return write_inputs(tmp_path_factory.mktemp("extender"))


@pytest.fixture(scope="module")
def url(inputs: tuple[Path, Path]) -> Iterator[str]:
    plan, cluster = inputs
    service = build(ServiceOptions(host="127.0.0.1", port=0, plan=plan, cluster=(cluster,)))
    service.start()
    try:
        yield service.server.url
    finally:
        service.close()


def names_args(pod: dict[str, object], names: list[str]) -> dict[str, object]:
    return {"Pod": pod, "Nodes": None, "NodeNames": names}


def test_planned_pod_passes_only_on_its_domain(url: str) -> None:
    status, answer = post(url, "filter", names_args(jobset_pod("train", "w", 0, 0), ALL))
    assert status == 200
    assert answer["NodeNames"] == ["n1", "n2"]
    assert answer["FailedAndUnresolvableNodes"] == {n: TRAIN_REASON for n in ALL[2:]}
    assert answer["FailedNodes"] == {}
    assert answer["Error"] == ""
    assert answer["Nodes"] is None


def test_foreign_pod_fails_on_reserved_nodes_and_passes_on_free_ones(url: str) -> None:
    status, answer = post(url, "filter", names_args(plain_pod(), ["n1", "n3", "n6", "n10"]))
    assert status == 200
    assert answer["NodeNames"] == ["n3", "n10"]
    assert answer["FailedAndUnresolvableNodes"] == {
        "n1": "reserved for ml/train",
        "n6": "reserved for ml/other",
    }


def test_unplanned_pod_on_free_nodes_passes_unchanged(url: str) -> None:
    free = ["n4", "n3", "n8", "n9"]
    status, answer = post(url, "filter", names_args(plain_pod(), free))
    assert status == 200
    assert answer["NodeNames"] == free
    assert answer["FailedAndUnresolvableNodes"] == {}


def test_unknown_jobset_pod_is_treated_as_foreign(url: str) -> None:
    pod = jobset_pod("ghost", "w", 0, 0)
    status, answer = post(url, "filter", names_args(pod, ["n2", "n7"]))
    assert status == 200
    assert answer["NodeNames"] == ["n7"]
    assert answer["FailedAndUnresolvableNodes"] == {"n2": "reserved for ml/train"}


def test_full_nodelist_answers_with_the_accepted_node_objects(url: str) -> None:
    items = [node_object(n) for n in ALL]
    args = {"Pod": jobset_pod("other", "w", 0, 1), "Nodes": {"metadata": {}, "items": items}}
    status, answer = post(url, "filter", args)
    assert status == 200
    assert answer["NodeNames"] is None
    assert answer["Nodes"]["items"] == [items[4], items[5]]
    assert set(answer["FailedAndUnresolvableNodes"]) == set(ALL) - {"n5", "n6"}


def test_prioritize_returns_host_priorities(url: str) -> None:
    status, answer = post(url, "prioritize", names_args(jobset_pod("other", "w", 0, 0), ALL[4:8]))
    assert status == 200
    assert answer == [
        {"Host": "n5", "Score": 10},
        {"Host": "n6", "Score": 5},
        {"Host": "n7", "Score": 0},
        {"Host": "n8", "Score": 0},
    ]


@pytest.mark.parametrize("verb", ["filter", "prioritize"])
def test_malformed_json_is_a_400_with_the_error(url: str, verb: str) -> None:
    status, answer = post(url, verb, b'{"Pod": {"metadata": ')
    assert status == 400
    assert (
        answer["Error"] == "ExtenderArgs: Pod: malformed JSON: Expecting value at line 1 column 22"
    )
    status, _ = post(url, "filter", names_args(plain_pod(), ["n3"]))
    assert status == 200  # still serving


def test_wrong_shape_is_a_400_naming_the_field(url: str) -> None:
    status, answer = post(url, "filter", {"Pod": plain_pod(), "NodeNames": "n1"})
    assert status == 400
    assert answer["Error"] == "ExtenderArgs: NodeNames: NodeNames must be an array of strings"


def test_bind_is_off_without_a_binder(url: str) -> None:
    status, answer = post(url, "bind", {"PodName": "p", "PodNamespace": "ml", "Node": "n1"})
    assert status == 404
    assert "--bind" in answer["Error"]


def test_routes_and_health(url: str) -> None:
    status, raw = request(url, "GET", "/healthz")
    assert status == 200 and json.loads(raw)["synced"] is True
    assert request(url, "GET", "/readyz")[0] == 200
    assert request(url, "GET", "/filter")[0] == 405
    assert request(url, "POST", "/preempt", b"{}")[0] == 404
    # any urlPrefix path works: the verb is the last segment
    status, raw = request(
        url, "POST", "/placer/v1/filter", json.dumps(names_args(plain_pod(), ["n3"])).encode()
    )
    assert status == 200 and json.loads(raw)["NodeNames"] == ["n3"]


def test_keep_alive_connection_serves_many_requests(url: str) -> None:
    host, port = url.removeprefix("http://").split(":")
    body = json.dumps(names_args(plain_pod(), ["n1", "n3"])).encode()
    head = (
        f"POST /filter HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    with socket.create_connection((host, int(port)), timeout=10) as s:
        reader = s.makefile("rb")
        for _ in range(3):
            s.sendall(head + body)
            assert reader.readline().startswith(b"HTTP/1.1 200")
            length = 0
            while (line := reader.readline()) != b"\r\n":
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            assert json.loads(reader.read(length))["NodeNames"] == ["n3"]


def test_missing_content_length_is_refused(url: str) -> None:
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(b"POST /filter HTTP/1.1\r\nHost: x\r\n\r\n")
        assert s.makefile("rb").readline().startswith(b"HTTP/1.1 411")


def test_unsynced_state_answers_503() -> None:
    server = ExtenderServer(ExtenderApp(ExtenderStore(synced=False)), "127.0.0.1", 0).start()
    try:
        status, answer = post(server.url, "filter", names_args(plain_pod(), ["n1"]))
        assert status == 503
        assert "not synced" in answer["Error"]
        assert request(server.url, "GET", "/readyz")[0] == 503
        assert request(server.url, "GET", "/healthz")[0] == 200
    finally:
        server.shutdown()


@pytest.fixture
def binding(inputs: tuple[Path, Path], tmp_path: Path) -> Iterator[Service]:
    """The extender with `--bind`, its API server a closed port on 127.0.0.1: what it answers
    when the API refuses a Binding is tested against the real API server
    (tests/cluster/test_extender.py); here, what it answers without reaching one."""
    plan, cluster = inputs
    options = ServiceOptions(
        host="127.0.0.1",
        port=0,
        plan=plan,
        cluster=(cluster,),
        bind=True,
        kubeconfig=str(kubeconfig(tmp_path, f"http://127.0.0.1:{free_port()}")),
    )
    service = build(options).start()
    try:
        yield service
    finally:
        service.close()


def test_bind_without_the_api_server_answers_the_error_for_a_retry(binding: Service) -> None:
    args = {"PodName": "p", "PodNamespace": "ml", "PodUID": "u", "Node": "n3"}
    status, answer = post(binding.server.url, "bind", args)
    assert status == 200
    assert answer["Error"].startswith("binding ml/p to n3: cannot connect to 127.0.0.1:"), answer


def test_bad_binding_payload_is_a_400(binding: Service) -> None:
    status, answer = post(binding.server.url, "bind", b"{not json")
    assert status == 400
    assert answer["Error"].startswith("ExtenderBindingArgs: malformed JSON")
