"""The extender under abuse (issue 10 targets): memory after hostile requests, probes under many
slow clients. Called by `benchmarks.extender_bench` against the server it started (default limits).

1. Memory: one request of each hostile kind (a 200 MB body declared, a 200 MB chunked body, a
   gzip bomb, and bodies just under the limit built to make the decoder allocate the most), then
   the server's resident set (VmRSS) and its peak (VmHWM) from /proc. Target: under 1 GiB.
2. Slow clients: 500 connections that never finish (half stop inside the request head, half
   inside a declared body), then `/healthz` on fresh connections as the kubelet probes it, and a
   filter call. Target: every probe answered within 100 ms.

Raw sockets throughout, so the client costs little and can misbehave exactly.
"""

from __future__ import annotations

import gzip
import json
import socket
import statistics
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = ["MemoryRow", "ProbeResult", "memory_series", "slow_client_probe"]

MIB = 1024 * 1024


def _proc_status(pid: int) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        out[key] = value.strip()
    return out


def rss_mib(pid: int) -> tuple[float, float]:
    """(current resident set, peak resident set) of a process in MiB."""
    status = _proc_status(pid)
    return int(status["VmRSS"].split()[0]) / 1024, int(status["VmHWM"].split()[0]) / 1024


def threads(pid: int) -> int:
    return int(_proc_status(pid)["Threads"])


def _address(url: str) -> tuple[str, int]:
    host, port = url.removeprefix("http://").split(":")
    return host, int(port)


def _read_status(sock: socket.socket) -> str:
    """The status line of the answer (the rest is drained until the server closes or 2 s pass)."""
    sock.settimeout(30)
    data = b""
    while b"\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return data.split(b"\r\n", 1)[0].decode(errors="replace")


def _send(url: str, head: str, body_chunks: Iterator[bytes]) -> str:
    """Send a head and body chunks; stop sending when the server answers or closes."""
    with socket.create_connection(_address(url), timeout=30) as sock:
        sock.sendall(head.encode())
        try:
            for chunk in body_chunks:
                sock.sendall(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server refused mid-body: its answer is already there
        try:
            return _read_status(sock)
        except (ConnectionResetError, TimeoutError) as e:
            return f"connection ended: {type(e).__name__}"


def _head(length: int | None, extra: str = "") -> str:
    size = f"Content-Length: {length}\r\n" if length is not None else ""
    chunked = "" if length is not None else "Transfer-Encoding: chunked\r\n"
    return (
        "POST /filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"{size}{chunked}{extra}\r\n"
    )


def _chunks(total: int, piece: int = MIB) -> Iterator[bytes]:
    filler = b"[" + b"0," * (piece // 2 - 1) + b"0]"
    sent = 0
    while sent < total:
        yield f"{len(filler):x}\r\n".encode() + filler + b"\r\n"
        sent += len(filler)
    yield b"0\r\n\r\n"


def _just_under(limit: int, prefix: str, unit: str, suffix: str) -> bytes:
    count = (limit - len(prefix) - len(suffix) - 64) // (len(unit) + 1)
    return (prefix + ",".join([unit] * count) + suffix).encode()


def _distinct_names(limit: int) -> bytes:
    """NodeNames of short distinct names: one str object and one refusal entry per 8 bytes."""
    pod = {"metadata": {"name": "p", "namespace": "default"}}
    parts: list[str] = []
    size = 64
    i = 0
    while size < limit - 64:
        name = f'"{i:x}"'
        parts.append(name)
        size += len(name) + 1
        i += 1
    return ('{"Pod":' + json.dumps(pod) + ',"NodeNames":[' + ",".join(parts) + "]}").encode()


@dataclass(frozen=True)
class MemoryRow:
    request: str
    answer: str
    rss_mib: float
    peak_mib: float


def memory_series(url: str, pid: int, max_body_bytes: int) -> list[MemoryRow]:
    """One hostile request of each kind, one after the other; RSS and peak after each."""
    limit = max_body_bytes
    pod_head = '{"NodeNames":["n"],"Pod":{"metadata":{"name":"p"},"spec":{"x":['
    cases: list[tuple[str, str, Iterator[bytes]]] = [
        ("200 MB body, Content-Length declared", _head(200_000_000), iter(())),
        ("200 MB chunked body", _head(None), _chunks(200_000_000)),
    ]
    bomb = gzip.compress(b'{"Pod":{"spec":"' + b"a" * (200 * MIB) + b'"}}', 1)
    cases.append(
        (
            f"gzip bomb ({len(bomb) / MIB:.1f} MiB inflating to 200 MiB)",
            _head(len(bomb), "Content-Encoding: gzip\r\n"),
            iter([bomb]),
        )
    )
    for name, body in (
        ("Pod of empty objects just under the limit", _just_under(limit, pod_head, "{}", "]}}")),
        ("Pod of empty arrays just under the limit", _just_under(limit, pod_head, "[]", "]}}")),
        ("NodeNames of distinct short names just under the limit", _distinct_names(limit)),
        (
            "NodeList of minimal Nodes just under the limit",
            _just_under(
                limit,
                '{"Pod":{"metadata":{"name":"p"}},"Nodes":{"items":[',
                '{"metadata":{"name":"n","labels":{"a":"b"}}}',
                "]}}",
            ),
        ),
        ("Pod nested 100,000 deep", ('{"Pod":' + "[" * 100_000 + "]" * 100_000 + "}").encode()),
    ):
        cases.append((f"{name} ({len(body) / MIB:.1f} MiB)", _head(len(body)), iter([body])))
    rows: list[MemoryRow] = []
    for name, head, chunks in cases:
        answer = _send(url, head, chunks)
        time.sleep(0.2)
        rss, peak = rss_mib(pid)
        rows.append(MemoryRow(name, answer.removeprefix("HTTP/1.1 "), rss, peak))
    return rows


@dataclass(frozen=True)
class ProbeResult:
    slow_clients: int
    connected: int
    server_threads: int
    probes_ms: list[float]
    probe_failures: int
    filter_answer: str

    @property
    def p50_ms(self) -> float:
        return statistics.median(self.probes_ms) if self.probes_ms else float("nan")

    @property
    def max_ms(self) -> float:
        return max(self.probes_ms) if self.probes_ms else float("nan")


def _probe(url: str) -> float:
    started = time.perf_counter()
    with socket.create_connection(_address(url), timeout=5) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        status = _read_status(sock)
    if not status.startswith("HTTP/1.1 200"):
        raise RuntimeError(status)
    return (time.perf_counter() - started) * 1000


def slow_client_probe(url: str, pid: int, *, clients: int = 500, probes: int = 200) -> ProbeResult:
    """Hold `clients` unfinished requests open, then probe; all sockets closed at the end."""
    held: list[socket.socket] = []
    try:
        for i in range(clients):
            try:
                sock = socket.create_connection(_address(url), timeout=5)
            except OSError:
                break
            if i % 2:
                sock.sendall(b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Le")
            else:
                sock.sendall(_head(1000).encode() + b'{"Pod":')
            held.append(sock)
        time.sleep(0.5)
        server_threads = threads(pid)
        values: list[float] = []
        failures = 0
        deadline = time.monotonic() + 60
        while len(values) + failures < probes and time.monotonic() < deadline:
            try:
                values.append(_probe(url))
            except (OSError, RuntimeError):
                failures += 1
            time.sleep(0.01)
        body = b'{"Pod":{"metadata":{"name":"p"}},"NodeNames":["n1"]}'
        filter_answer = _send(url, _head(len(body)), iter([body]))
        return ProbeResult(clients, len(held), server_threads, values, failures, filter_answer[9:])
    finally:
        for sock in held:
            sock.close()
