"""The extender under test and the load on it, for `benchmarks.extender_bench`.

`start_server` writes the world of `benchmarks.extender_world` as a plan and a cluster file and
starts `placer extender` on them in its own process, as a user would. The clients are lean on
purpose (raw keep-alive sockets sending one pre-built request, the throughput clients in
separate processes), so that they cost the cores they share with the server as little as
possible; `cpu_seconds` reads the server's own CPU time, so a request's cost can be reported
whatever else the machine runs. Kept apart from the report so how the figures are taken can be
read without the tables they go into.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.extender_world import bench_plan, node_labels, node_name

__all__ = ["Client", "cpu_seconds", "latencies", "start_server", "throughput"]

ROOT = Path(__file__).resolve().parents[1]


# --- the server under test ---------------------------------------------------------------------


def start_server(
    workdir: Path, nodes: int, reserved_share: float
) -> tuple[subprocess.Popen[str], str, list[str]]:
    plan, names = bench_plan(nodes, reserved_share)
    plan_path = workdir / "plan.json"
    plan_path.write_text(json.dumps(plan.model_dump(mode="json")), encoding="utf-8")
    cluster_path = workdir / "cluster.json"
    items = [{"apiVersion": "v1", "kind": "Node",
              "metadata": {"name": node_name(i), "labels": node_labels(i)},
              "status": {"allocatable": {"cpu": "200", "google.com/tpu": "4", "pods": "110"}}}
             for i in range(nodes)]  # fmt: skip
    cluster_path.write_text(json.dumps({"kind": "List", "items": items}), encoding="utf-8")
    command = [
        sys.executable,
        "-m",
        "placer.cli",
        "extender",
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        "--plan",
        str(plan_path),
        "--cluster",
        str(cluster_path),
    ]
    proc = subprocess.Popen(command, cwd=ROOT, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    line = proc.stderr.readline()
    if not line.startswith("placer extender: serving "):
        proc.kill()
        raise RuntimeError(f"extender did not start: {line}")
    return proc, line.split()[3], names


# --- a lean keep-alive client ------------------------------------------------------------------


class Client:
    """One keep-alive connection sending one pre-built request and reading the answer."""

    def __init__(self, url: str, body: bytes) -> None:
        host, port = url.removeprefix("http://").split(":")
        self.sock = socket.create_connection((host, int(port)), timeout=30)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.reader = self.sock.makefile("rb", buffering=1 << 20)
        self.request = (
            f"POST /filter HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode() + body

    def call(self) -> bytes:
        self.sock.sendall(self.request)
        status = self.reader.readline()
        length = 0
        while (line := self.reader.readline()) not in (b"\r\n", b""):
            if line[:15].lower() == b"content-length:":
                length = int(line[15:])
        body: bytes = self.reader.read(length)  # an untyped IOBase to typeshed
        if not status.startswith(b"HTTP/1.1 200"):
            raise RuntimeError(f"{status!r}: {body[:200]!r}")
        return body

    def close(self) -> None:
        self.reader.close()
        self.sock.close()


def latencies(url: str, body: bytes, *, count: int, warmup: int, cap_s: float) -> list[float]:
    client = Client(url, body)
    try:
        for _ in range(warmup):
            client.call()
        out: list[float] = []
        deadline = time.monotonic() + cap_s
        while len(out) < count and time.monotonic() < deadline:
            started = time.perf_counter()
            client.call()
            out.append(time.perf_counter() - started)
        return out
    finally:
        client.close()


def _load_worker(url: str, body: bytes, count: int, cap_s: float, queue: Any) -> None:
    client = Client(url, body)
    done = 0
    deadline = time.monotonic() + cap_s
    started = time.perf_counter()
    while done < count and time.monotonic() < deadline:
        client.call()
        done += 1
    queue.put((done, time.perf_counter() - started))
    client.close()


def throughput(
    url: str, body: bytes, *, connections: int, per_connection: int, cap_s: float
) -> tuple[int, float]:
    """(requests answered, wall seconds) with `connections` clients in separate processes."""
    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    workers = [ctx.Process(target=_load_worker, args=(url, body, per_connection, cap_s, queue))
               for _ in range(connections)]  # fmt: skip
    started = time.perf_counter()
    for w in workers:
        w.start()
    results = [queue.get(timeout=cap_s + 60) for _ in workers]
    wall = time.perf_counter() - started
    for w in workers:
        w.join(timeout=10)
    return sum(done for done, _ in results), wall


# --- what the server spends --------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux /proc), to report cost per request regardless
    of what else the machine runs."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
