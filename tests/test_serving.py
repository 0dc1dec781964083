"""placer.serving over real HTTP on 127.0.0.1: the guards every placer server shares.

A tiny application stands in for the extender and the webhook; raw sockets let a test misbehave
exactly (declare a huge body, stop mid-body, hold connections open). Every wait is bounded.
"""

from __future__ import annotations

import gzip
import json
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from placer.serving import (
    HttpServer,
    ServingLimits,
    json_error_body,
    make_application,
    run_blocking,
    server_ssl_context,
)

RELEASE = threading.Event()


def _hold() -> str:
    RELEASE.wait(10)
    return "released"


async def echo(request: web.Request) -> web.Response:
    body = await request.read()
    return web.json_response({"bytes": len(body)})


async def hold(request: web.Request) -> web.Response:
    return web.json_response({"result": await run_blocking(request, _hold)})


async def boom(request: web.Request) -> web.Response:
    raise ValueError("no luck")


async def healthz(request: web.Request) -> web.Response:
    return web.json_response({"ok": True})


def serve(**limits: Any) -> HttpServer:
    settings = ServingLimits(**limits)
    routes = [
        web.post("/echo", echo),
        web.post("/hold", hold),
        web.post("/boom", boom),
        web.get("/healthz", healthz),
    ]
    app = make_application(routes, limits=settings)
    return HttpServer(app, "127.0.0.1", 0, limits=settings).start()


@pytest.fixture
def server() -> Iterator[HttpServer]:
    RELEASE.clear()
    srv = serve(max_body_bytes=1000, max_in_flight=2, max_in_flight_bytes=2000, max_connections=8)
    try:
        yield srv
    finally:
        RELEASE.set()
        srv.stop()


def connect(srv: HttpServer) -> socket.socket:
    return socket.create_connection(("127.0.0.1", srv.port), timeout=10)


def read_answer(sock: socket.socket) -> tuple[int, dict[str, str], Any]:
    reader = sock.makefile("rb")
    status = int(reader.readline().split()[1])
    headers: dict[str, str] = {}
    while (line := reader.readline()) not in (b"\r\n", b""):
        key, _, value = line.decode().partition(":")
        headers[key.strip().lower()] = value.strip()
    body = reader.read(int(headers.get("content-length", "0")))
    return status, headers, json.loads(body) if body else None


def post_head(path: str, length: int | None, extra: str = "") -> bytes:
    size = f"Content-Length: {length}\r\n" if length is not None else ""
    return f"POST {path} HTTP/1.1\r\nHost: t\r\n{size}{extra}\r\n".encode()


def exchange(srv: HttpServer, raw: bytes) -> tuple[int, dict[str, str], Any]:
    with connect(srv) as sock:
        sock.sendall(raw)
        return read_answer(sock)


def test_a_body_within_the_limit_is_served(server: HttpServer) -> None:
    status, _, answer = exchange(server, post_head("/echo", 1000) + b"x" * 1000)
    assert (status, answer) == (200, {"bytes": 1000})


def test_a_declared_oversize_body_is_refused_before_it_is_sent(server: HttpServer) -> None:
    status, headers, answer = exchange(server, post_head("/echo", 10**9))
    assert status == 413
    assert headers["content-type"].startswith("application/json")
    assert answer == {
        "error": "body of 1000000000 bytes is over the limit of 1000",
        "status": 413,
    }


def test_a_chunked_body_is_cut_off_at_the_limit(server: HttpServer) -> None:
    chunk = b"200\r\n" + b"y" * 0x200 + b"\r\n"
    head = post_head("/echo", None, "Transfer-Encoding: chunked\r\n")
    status, _, answer = exchange(server, head + chunk * 3 + b"0\r\n\r\n")
    assert status == 413
    assert answer["status"] == 413


@pytest.mark.parametrize(
    ("encoding", "body"),
    [
        pytest.param("gzip", gzip.compress(b'{"a": 1}')[:12] + b"not gzip at all", id="gzip"),
        pytest.param("deflate", b"\x78\x9c" + b"not deflate", id="deflate"),
    ],
)
def test_a_body_that_does_not_decompress_is_a_json_400(
    server: HttpServer, caplog: pytest.LogCaptureFixture, encoding: str, body: bytes
) -> None:
    head = post_head("/echo", len(body), f"Content-Encoding: {encoding}\r\n")
    with caplog.at_level("ERROR"):
        status, headers, answer = exchange(server, head + body)
    assert status == 400 and headers["content-type"].startswith("application/json")
    assert answer["error"].startswith(f"body cannot be decoded (Content-Encoding '{encoding}')")
    assert not [r for r in caplog.records if r.levelname == "ERROR"], "a client's mistake"
    assert exchange(server, post_head("/echo", 2) + b"ok")[0] == 200


def test_a_post_without_length_is_411(server: HttpServer) -> None:
    status, _, answer = exchange(server, post_head("/echo", None))
    assert (status, answer["error"]) == (411, "Content-Length required")


def test_wrong_method_and_unknown_path_answer_json(server: HttpServer) -> None:
    status, headers, answer = exchange(server, b"GET /echo HTTP/1.1\r\nHost: t\r\n\r\n")
    assert status == 405
    assert headers["allow"] == "POST"
    assert answer == {"error": "method GET not allowed; use POST", "status": 405}
    status, _, answer = exchange(server, post_head("/nowhere", 2) + b"{}")
    assert (status, answer["status"]) == (404, 404)


def test_a_failing_handler_is_a_json_500_and_the_server_goes_on(server: HttpServer) -> None:
    status, _, answer = exchange(server, post_head("/boom", 0))
    assert (status, answer["error"]) == (500, "internal error: ValueError: no luck")
    assert exchange(server, post_head("/echo", 2) + b"ok")[0] == 200


def test_in_flight_limit_answers_503_at_once_and_probes_still_answer(server: HttpServer) -> None:
    held = [connect(server) for _ in range(2)]
    try:
        for sock in held:
            sock.sendall(post_head("/hold", 2) + b"{}")
        deadline = time.monotonic() + 5
        while True:  # until both are admitted (bounded)
            started = time.perf_counter()
            status, headers, answer = exchange(server, post_head("/echo", 2) + b"{}")
            if status == 503 or time.monotonic() > deadline:
                break
        assert status == 503
        assert headers["retry-after"] == "1"
        assert answer["error"].startswith("busy: 2 requests in flight")
        assert time.perf_counter() - started < 2
        status, _, answer = exchange(server, b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
        assert (status, answer) == (200, {"ok": True})
        RELEASE.set()
        for sock in held:
            assert read_answer(sock)[:1] == (200,)
        assert exchange(server, post_head("/echo", 2) + b"{}")[0] == 200
    finally:
        for sock in held:
            sock.close()


def test_in_flight_bytes_limit(server: HttpServer) -> None:
    # 2000 bytes in flight at most: one held 1000-byte body plus a 1000-byte one fit, a third
    # (a chunked body counts as the full 1000) does not
    with connect(server) as held:
        held.sendall(post_head("/hold", 1000) + b"x" * 999)  # admitted, body unfinished
        time.sleep(0.2)
        head = post_head("/echo", None, "Transfer-Encoding: chunked\r\n")
        status, _, _ = exchange(server, head + b"1\r\nx\r\n0\r\n\r\n")
        assert status == 200
        with connect(server) as second:
            second.sendall(post_head("/hold", 1000) + b"x")
            time.sleep(0.2)
            status, _, answer = exchange(server, post_head("/echo", 1) + b"x")
            assert status == 503, answer


def test_a_body_that_never_arrives_times_out_with_408() -> None:
    srv = serve(body_timeout_s=0.3)
    try:
        with connect(srv) as sock:
            sock.sendall(post_head("/echo", 10) + b"abc")
            status, _, answer = read_answer(sock)
        assert status == 408
        assert answer["error"] == "body not received within 0.3 s"
    finally:
        srv.stop()


def test_connections_past_the_cap_get_503() -> None:
    srv = serve(max_connections=3)
    held = [connect(srv) for _ in range(3)]
    try:
        deadline = time.monotonic() + 5
        while True:  # until the server has counted the held connections (bounded)
            status, _, answer = exchange(srv, b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
            if status == 503 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert (status, answer["error"]) == (503, "too many connections; retry")
        held.pop().close()
        deadline = time.monotonic() + 5
        while exchange(srv, b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")[0] != 200:
            assert time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        for sock in held:
            sock.close()
        srv.stop()


def test_stop_finishes_the_request_in_flight_and_refuses_new_ones() -> None:
    srv = serve()
    port = srv.port
    with connect(srv) as sock:
        sock.sendall(post_head("/echo", 6) + b"abc")  # in flight: half the body sent
        time.sleep(0.2)
        stopper = threading.Thread(target=srv.stop)
        stopper.start()
        deadline = time.monotonic() + 5
        while True:  # the listening socket closes first (bounded)
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
            except OSError:
                break
            assert time.monotonic() < deadline
            time.sleep(0.05)
        sock.sendall(b"def")
        status, _, answer = read_answer(sock)
        assert (status, answer) == (200, {"bytes": 6})
        stopper.join(timeout=10)
        assert not stopper.is_alive()


def test_limits_are_checked() -> None:
    with pytest.raises(ValueError, match="max_in_flight_bytes must be at least max_body_bytes"):
        ServingLimits(max_body_bytes=10, max_in_flight_bytes=5)
    with pytest.raises(ValueError, match="max_in_flight must be at least 1"):
        ServingLimits(max_in_flight=0)
    assert json.loads(json_error_body(418, "teapot")) == {"error": "teapot", "status": 418}


TLS = Path(__file__).resolve().parent / "data" / "tls"


def test_tls_serves_https_and_a_plain_client_gets_no_answer() -> None:
    settings = ServingLimits()
    app = make_application([web.get("/healthz", healthz)], limits=settings)
    context = server_ssl_context(TLS / "server.crt", TLS / "server.key")
    srv = HttpServer(app, "127.0.0.1", 0, limits=settings, ssl_context=context).start()
    try:
        assert srv.url.startswith("https://127.0.0.1:")
        client = ssl.create_default_context(cafile=str(TLS / "server.crt"))
        with (
            socket.create_connection(("127.0.0.1", srv.port), timeout=10) as raw,
            client.wrap_socket(raw, server_hostname="127.0.0.1") as sock,
        ):
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
            status, _, answer = read_answer(sock)
        assert (status, answer) == (200, {"ok": True})
        with connect(srv) as plain:  # HTTP to an HTTPS port: the handshake fails, no answer
            plain.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
            try:
                reply = plain.recv(100)
            except ConnectionResetError:
                reply = b""
            assert not reply.startswith(b"HTTP/1.1")
    finally:
        srv.stop()


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(b"HELLO THERE\r\n\r\n", id="not-http"),
        pytest.param(
            b"GET /healthz HTTP/1.1\r\nX: " + b"a" * 10_000 + b"\r\n\r\n", id="long-header"
        ),
        pytest.param(
            b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            id="bad-chunk",
        ),
    ],
)
def test_requests_that_are_not_http_get_a_json_400(server: HttpServer, raw: bytes) -> None:
    status, headers, answer = exchange(server, raw)
    assert 400 <= status < 500
    assert headers["content-type"].startswith("application/json")
    assert answer["status"] == status and answer["error"]
    assert "\n" not in answer["error"]
    assert exchange(server, post_head("/echo", 2) + b"ok")[0] == 200


def test_logs_name_the_address_bound_and_clients_the_one_to_dial() -> None:
    app = make_application([], limits=ServingLimits())
    srv = HttpServer(app, "0.0.0.0", 0)
    try:
        assert srv.listening == f"http://0.0.0.0:{srv.port}"
        assert srv.url == f"http://127.0.0.1:{srv.port}"
    finally:
        srv.stop()
