"""Benchmark of `placer webhook` over loopback HTTPS, as the API server calls it.

Measures what sizing the Deployment and `timeoutSeconds` in deploy/webhook needs:

1. latency of one admission review (a realistic ~4 KB training pod) over one keep-alive TLS
   connection: p50/p99/max, and the server's CPU per review;
2. sustained reviews per second from several keep-alive connections (separate client processes);
3. the server's resident memory after the runs.

The webhook runs as `placer webhook` in its own process, exactly as the image starts it, with a
certificate made by the `openssl` CLI. Every loop is bounded by a request count. Run from the
repository root:

    python -m benchmarks.webhook_bench --out benchmarks/RESULTS-webhook.md
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing as mp
import os
import platform
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

__all__ = ["main"]

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def _pod(index: int) -> dict[str, Any]:
    """A pod as the Job controller creates it for a JobSet worker: labels, env, volumes."""
    env = [{"name": f"TRAINER_SETTING_{i}", "value": f"value-{i}-" + "x" * 40} for i in range(30)]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "generateName": f"train-workers-{index}-0-",
            "namespace": "team-a",
            "labels": {
                "jobset.sigs.k8s.io/jobset-name": "train",
                "jobset.sigs.k8s.io/replicatedjob-name": "workers",
                "jobset.sigs.k8s.io/job-index": str(index),
                "jobset.sigs.k8s.io/restart-attempt": "0",
                "batch.kubernetes.io/job-name": f"train-workers-{index}",
                "batch.kubernetes.io/job-completion-index": "0",
            },
            "annotations": {"alpha.jobset.sigs.k8s.io/exclusive-topology": "block"},
        },
        "spec": {
            "restartPolicy": "OnFailure",
            "hostNetwork": True,
            "containers": [
                {
                    "name": "trainer",
                    "image": "us-docker.pkg.dev/example/trainer:2026.11",
                    "command": ["python", "-m", "trainer", "--config", "/etc/trainer/run.yaml"],
                    "env": env,
                    "resources": {
                        "requests": {"google.com/tpu": "4", "cpu": "200", "memory": "400Gi"},
                        "limits": {"google.com/tpu": "4"},
                    },
                    "volumeMounts": [{"name": "config", "mountPath": "/etc/trainer"}],
                }
            ],
            "volumes": [{"name": "config", "configMap": {"name": "train-config"}}],
            "tolerations": [{"key": "google.com/tpu", "operator": "Exists"}],
        },
    }


def _review(index: int) -> bytes:
    return json.dumps(
        {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": f"bench-{index}",
                "kind": {"group": "", "version": "v1", "kind": "Pod"},
                "resource": {"group": "", "version": "v1", "resource": "pods"},
                "namespace": "team-a",
                "operation": "CREATE",
                "object": _pod(index),
            },
        }
    ).encode()


def _certificate(directory: Path) -> tuple[Path, Path]:
    cert, key = directory / "tls.crt", directory / "tls.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
         "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=localhost",
         "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _client(port: int, cert: str, count: int) -> list[float]:
    """`count` reviews over one keep-alive connection; each one's latency in seconds."""
    context = ssl.create_default_context(cafile=cert)
    conn = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=30)
    bodies = [_review(i) for i in range(64)]
    headers = {"Content-Type": "application/json"}
    latencies = []
    for i in range(count):
        started = time.perf_counter()
        conn.request("POST", "/mutate-pods", body=bodies[i % len(bodies)], headers=headers)
        answer = conn.getresponse().read()
        latencies.append(time.perf_counter() - started)
        if i == 0:
            assert json.loads(answer)["response"]["patchType"] == "JSONPatch"
    conn.close()
    return latencies


def _throughput_worker(port: int, cert: str, count: int, out: Any) -> None:
    out.put(len(_client(port, cert, count)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000, help="latency series length")
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--per-connection", type=int, default=2000)
    parser.add_argument("--out", type=Path, help="write the Markdown report here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        cert, key = _certificate(Path(tmp))
        server = subprocess.Popen(
            [sys.executable, "-m", "placer.cli", "webhook", "--host", "127.0.0.1", "--port", "0",
             "--metrics-port", "0", "--tls-cert-file", str(cert), "--tls-private-key-file",
             str(key)],
            stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            assert server.stderr is not None
            line = server.stderr.readline()
            port = int(line.split("127.0.0.1:")[1].split("/")[0])
            load_before = os.getloadavg()
            _client(port, str(cert), 200)  # warm up
            cpu = _cpu_s(server.pid)
            latencies = _client(port, str(cert), args.requests)
            cpu_ms = (_cpu_s(server.pid) - cpu) * 1000 / args.requests
            queue: Any = mp.Queue()
            workers = [
                mp.Process(
                    target=_throughput_worker, args=(port, str(cert), args.per_connection, queue)
                )
                for _ in range(args.connections)
            ]
            cpu = _cpu_s(server.pid)
            started = time.perf_counter()
            for w in workers:
                w.start()
            done = sum(queue.get(timeout=600) for _ in workers)
            wall_s = time.perf_counter() - started
            for w in workers:
                w.join()
            tp_cpu_ms = (_cpu_s(server.pid) - cpu) * 1000 / done
            rss_mb = _rss_mb(server.pid)
            load_after = os.getloadavg()
        finally:
            server.terminate()
            server.wait(timeout=30)
    ms = sorted(x * 1000 for x in latencies)
    p99 = ms[int(len(ms) * 0.99) - 1]
    size_kb = len(_review(0)) / 1024
    report = "\n".join(
        [
            "# Admission webhook benchmark",
            "",
            f"Loopback HTTPS (P-256 certificate) against `placer webhook` in its own process; each "
            f"review carries a {size_kb:.1f} KB JobSet worker pod and is answered with the gate "
            "patch. Latency is measured by the client over one keep-alive connection (request "
            "written to answer read).",
            "",
            "Command: `python -m benchmarks.webhook_bench --out benchmarks/RESULTS-webhook.md` "
            "(from the repository root)",
            "",
            f"Machine: AMD EPYC, nproc {os.cpu_count()}, Python {platform.python_version()}, "
            f"Linux {platform.release()}; load average {load_before[0]:.2f} at the start, "
            f"{load_after[0]:.2f} at the end. The machine is shared with other sessions' test "
            "suites and benchmarks, and the clients run on the same two cores: wall-clock figures "
            "carry that noise; server CPU per review is the stable measure.",
            "",
            "| series | reviews | p50 ms | p99 ms | max ms | server CPU ms/review |",
            "|---|---|---|---|---|---|",
            f"| one connection | {len(ms)} | {statistics.median(ms):.2f} | {p99:.2f} | "
            f"{ms[-1]:.2f} | {cpu_ms:.2f} |",
            "",
            "| throughput | reviews | wall | rate | server CPU ms/review |",
            "|---|---|---|---|---|",
            f"| {args.connections} keep-alive connections | {done} | {wall_s:.2f} s | "
            f"**{done / wall_s:,.0f} reviews/s** | {tp_cpu_ms:.2f} |",
            "",
            f"Server resident memory after the runs: {rss_mb:.0f} MB (the Deployment requests "
            "128Mi and limits 256Mi).",
            "",
        ]
    )
    print(report)
    if args.out:
        args.out.write_text(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
