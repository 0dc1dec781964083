"""The extender under abuse, over real HTTP on 127.0.0.1: every refusal is JSON in the extender's
own shape (`Error` set), oversize and malformed bodies never reach the decisions, and SIGTERM
drains the request in flight before the process exits 0."""

from __future__ import annotations

import gzip
import http.client
import json
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from plugins.extender.service import ServiceOptions, build
from tests.extender.builders import plain_pod, post, request, serving_url, write_inputs

ROOT = Path(__file__).resolve().parents[2]
ERROR_KEYS = {"Nodes", "NodeNames", "FailedNodes", "FailedAndUnresolvableNodes", "Error"}


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    plan, cluster = write_inputs(tmp_path_factory.mktemp("abuse"))
    options = ServiceOptions(
        host="127.0.0.1", port=0, plan=plan, cluster=(cluster,), max_body_bytes=4096
    )
    service = build(options).start()
    try:
        yield service.server.url
    finally:
        service.close()


def error_of(raw: bytes) -> str:
    answer = json.loads(raw)
    assert set(answer) == ERROR_KEYS
    return str(answer["Error"])


@pytest.mark.parametrize(
    ("method", "path", "message"),
    [
        pytest.param("GET", "/filter", "filter takes POST, not GET", id="get-filter"),
        pytest.param("PUT", "/prioritize", "prioritize takes POST, not PUT", id="put-prioritize"),
        pytest.param("POST", "/healthz", "healthz takes GET, not POST", id="post-healthz"),
        pytest.param("DELETE", "/readyz", "readyz takes GET, not DELETE", id="delete-readyz"),
    ],
)
def test_wrong_methods_are_405_json(url: str, method: str, path: str, message: str) -> None:
    status, raw = request(url, method, path, b"{}" if method != "GET" else None)
    assert status == 405
    assert error_of(raw) == message


def test_nesting_past_the_parser_guard_is_a_400_at_default_limits(tmp_path: Path) -> None:
    plan, cluster = write_inputs(tmp_path)
    service = build(ServiceOptions(host="127.0.0.1", port=0, plan=plan, cluster=(cluster,)))
    service.start()
    try:
        body = ('{"NodeNames":["n3"],"Pod":' + "[" * 100_000 + "]" * 100_000 + "}").encode()
        status, answer = post(service.server.url, "prioritize", body)
        assert status == 400
        assert answer["Error"] == "ExtenderArgs: Pod: nested deeper than 100 levels"
        status, answer = post(service.server.url, "filter", {"Pod": plain_pod(), "NodeNames": []})
        assert status == 200  # still serving
    finally:
        service.close()


def test_a_request_that_is_not_http_is_a_400_in_the_extender_shape(url: str) -> None:
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(b"HELLO THERE\r\n\r\n")
        answer = sock.makefile("rb").read()
    assert answer.split(b" ", 2)[1] == b"400"
    assert error_of(answer.split(b"\r\n\r\n", 1)[1]).startswith("Invalid method encountered")


def test_an_oversize_body_is_a_413_in_the_extender_shape(url: str) -> None:
    names = [f"node-{i:05d}" for i in range(1000)]
    status, answer = post(url, "filter", {"Pod": plain_pod(), "NodeNames": names})
    assert status == 413
    assert answer["Error"].startswith("body of ") and "over the limit of 4096" in answer["Error"]
    assert set(answer) == ERROR_KEYS
    status, answer = post(url, "filter", {"Pod": plain_pod(), "NodeNames": ["n3"]})
    assert (status, answer["NodeNames"]) == (200, ["n3"])


def test_sigterm_drains_the_request_in_flight_and_exits_0(tmp_path: Path) -> None:
    plan, cluster = write_inputs(tmp_path)
    command = [sys.executable, "-m", "placer.cli", "extender", "--host", "127.0.0.1"]
    command += ["--port", "0", "--plan", str(plan), "--cluster", str(cluster)]
    proc = subprocess.Popen(command, cwd=ROOT, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        host, port = serving_url(proc.stderr).removeprefix("http://").split(":")
        body = json.dumps({"Pod": plain_pod(), "NodeNames": ["n2", "n3"]}).encode()
        head = f"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n"
        with socket.create_connection((host, int(port)), timeout=20) as sock:
            sock.sendall(head.encode() + body[:10])  # admitted, body unfinished
            time.sleep(0.3)
            proc.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + 10
            while True:  # stops accepting new connections first (bounded)
                try:
                    socket.create_connection((host, int(port)), timeout=1).close()
                except OSError:
                    break
                assert time.monotonic() < deadline
                time.sleep(0.05)
            sock.sendall(body[10:])
            answer = sock.makefile("rb").read()
        assert answer.startswith(b"HTTP/1.1 200")
        assert json.loads(answer.split(b"\r\n\r\n", 1)[1])["NodeNames"] == ["n3"]
        assert proc.wait(timeout=20) == 0
        assert "stopped after draining" in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)


def test_a_deeply_nested_plan_file_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from placer.cli import main

    plan = tmp_path / "plan.json"
    plan.write_text('{"jobsets": ' + "[" * 100_000 + "]" * 100_000 + "}")
    assert main(["extender", "--port", "0", "--plan", str(plan)]) == 2
    assert capsys.readouterr().err == f"placer: error: {plan}: nested deeper than 100 levels\n"


def test_a_probe_never_reads_a_body(url: str) -> None:
    """Probes are not admitted (so they answer under any load); a body sent to one must not be
    read, or it would use memory no limit counts. The server answers before the body arrives."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(b"POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 4000\r\n\r\n{")
        status_line = sock.makefile("rb").readline()
    assert status_line.split(b" ")[1] == b"405"


def _raw_post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection(url.removeprefix("http://"), timeout=10)
    try:
        conn.request("POST", "/filter", body=body, headers=headers)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("body", "headers", "message"),
    [
        pytest.param(
            gzip.compress(b"")[:10] + b"\xff" * 64,  # a gzip header, then no deflate stream
            {"Content-Encoding": "gzip"},
            "body cannot be decoded (Content-Encoding 'gzip')",
            id="corrupt-gzip",
        ),
        pytest.param(
            b"\x78\x9cgarbage",
            {"Content-Encoding": "deflate"},
            "body cannot be decoded (Content-Encoding 'deflate')",
            id="corrupt-deflate",
        ),
    ],
)
def test_bad_bodies_are_a_400_in_the_extender_shape_never_a_500(
    url: str, body: bytes, headers: dict[str, str], message: str
) -> None:
    status, raw = _raw_post(url, body, {"Content-Type": "application/json", **headers})
    assert status == 400
    assert error_of(raw).startswith(message)
    status, answer = post(url, "filter", {"Pod": plain_pod(), "NodeNames": ["n3"]})
    assert (status, answer["NodeNames"]) == (200, ["n3"])


def test_a_5000_digit_number_is_a_400_at_default_limits(tmp_path: Path) -> None:
    plan, cluster = write_inputs(tmp_path)
    service = build(ServiceOptions(host="127.0.0.1", port=0, plan=plan, cluster=(cluster,)))
    service.start()
    try:
        body = b'{"NodeNames": ["n3"], "Pod": {"spec": {"priority": ' + b"9" * 5000 + b"}}}"
        status, raw = _raw_post(service.server.url, body, {"Content-Type": "application/json"})
        assert (status, error_of(raw)) == (
            400,
            "ExtenderArgs: Pod: malformed JSON: a number of 5000 characters; at most 100",
        )
    finally:
        service.close()
