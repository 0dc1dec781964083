"""Benchmark of the scheduler extender over loopback HTTP, as kube-scheduler would call it.

Measures (issue 6 targets in brackets):

1. filter with 5,000 node names (nodeCacheCapable: true): p50/p99 latency [p99 <= 5 ms];
2. filter with a full NodeList of 1,000 realistic Node objects (~9 KB each, as a
   nodeCacheCapable: false scheduler sends them): p50/p99 latency [p99 <= 100 ms];
3. sustained filter requests per second from several keep-alive connections [1,000/s on 2 cores];
4. abuse at the default limits (`benchmarks.extender_abuse`, issue 10): resident memory after
   hostile requests [under 1 GiB] and `/healthz` latency under 500 slow clients [within 100 ms].

The extender runs as `placer extender --plan ... --cluster ...` in its own process, exactly as a
user starts it; the clients are plain sockets with pre-built requests so that they cost the shared
cores as little as possible. Everything is loopback and every loop is bounded by a request count
and a wall-clock cap. Run from the repository root:

    python -m benchmarks.extender_bench --out benchmarks/RESULTS-extender.md

This module runs the series and writes the report; the cluster, pods and plan it serves are
`benchmarks.extender_world`, the server process and the clients that load it
`benchmarks.extender_load`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.extender_abuse import memory_series, rss_mib, slow_client_probe
from benchmarks.extender_load import cpu_seconds, latencies, start_server, throughput
from benchmarks.extender_world import NODES_PER_SUBBLOCK, jobset_pod, plain_pod, realistic_node
from benchmarks.reporting.measure import cpu_model

__all__ = ["main"]


def percentile(values: Sequence[float], q: float) -> float:
    """The value at rank round(q * (n - 1)) of the sorted values (q in 0-1): a value that was
    measured, not interpolated. Deliberately not `benchmarks.reporting.stats.percentile`, which
    interpolates between the two nearest ranks (p in 0-100): the p99 of RESULTS-extender.md was
    taken this way, and the other would move it."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def machine() -> dict[str, str]:
    """The machine facts the report header prints. Not `benchmarks.reporting.measure.
    machine_info`, which has no usable-core count (affinity) or load average, names the system
    by `platform.platform()` rather than `system release`, and runs git; the CPU model is the
    shared `cpu_model()`."""
    return {
        "nproc": str(os.cpu_count()),
        "affinity": str(len(os.sched_getaffinity(0))) if hasattr(os, "sched_getaffinity") else "?",
        "cpu": cpu_model() or "unknown",
        "python": platform.python_version(),
        "load": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "system": f"{platform.system()} {platform.release()}",
    }


def row(name: str, values: list[float], cpu_s: float, target: str) -> str:
    ms = [v * 1000 for v in values]
    return (
        f"| {name} | {len(ms)} | {statistics.median(ms):.2f} | {percentile(ms, 0.99):.2f} | "
        f"{max(ms):.2f} | {cpu_s * 1000 / len(ms):.2f} | {target} |"
    )


def abuse_tables(url: str, pid: int, slow_clients: int) -> list[str]:
    """Markdown tables of the abuse series, at the server's default limits (8 MiB bodies)."""
    base_rss, _ = rss_mib(pid)
    lines = [
        "## Under abuse (default limits: 8 MiB bodies, 32 requests / 32 MiB in flight)",
        "",
        f"Server resident set before: {base_rss:.0f} MiB. One request of each kind, in order; "
        "peak is the process's high-water mark (VmHWM) so far. Target: under 1 GiB.",
        "",
        "| request | answer | RSS after, MiB | peak so far, MiB |",
        "|---|---|---|---|",
    ]
    for r in memory_series(url, pid, 8 * 1024 * 1024):
        lines.append(f"| {r.request} | {r.answer} | {r.rss_mib:.0f} | {r.peak_mib:.0f} |")
    probe = slow_client_probe(url, pid, clients=slow_clients)
    verdict = "met" if probe.probe_failures == 0 and probe.max_ms <= 100 else "MISSED"
    lines += [
        "",
        "| slow clients held | server threads | /healthz probes | p50 ms | max ms | failed "
        "| a filter call meanwhile | target |",
        "|---|---|---|---|---|---|---|---|",
        f"| {probe.connected} of {probe.slow_clients} | {probe.server_threads} "
        f"| {len(probe.probes_ms)} | {probe.p50_ms:.2f} | {probe.max_ms:.2f} "
        f"| {probe.probe_failures} | {probe.filter_answer} | every probe within 100 ms: "
        f"{verdict} |",
    ]
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument(
        "--nodelist",
        type=int,
        default=900,
        help="Node objects per NodeList (900 of ~9 KB fit the default 8 MiB body limit)",
    )
    parser.add_argument("--reserved-share", type=float, default=0.6)
    parser.add_argument("--count", type=int, default=1000, help="requests per latency series")
    parser.add_argument("--nodelist-count", type=int, default=100)
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--load-requests", type=int, default=4000, help="per connection")
    parser.add_argument(
        "--load-names",
        type=int,
        nargs="+",
        default=[100, 500],
        help="node names per request in the throughput runs",
    )
    parser.add_argument("--cap-s", type=float, default=60.0, help="wall-clock cap per series")
    parser.add_argument("--slow-clients", type=int, default=500)
    parser.add_argument("--out", type=Path, help="write the markdown report here")
    args = parser.parse_args(argv)

    command = "python -m benchmarks.extender_bench " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )
    with tempfile.TemporaryDirectory() as tmp:
        proc, url, names = start_server(Path(tmp), args.nodes, args.reserved_share)
        try:
            planned = jobset_pod("js-0000", 3)
            foreign = plain_pod()

            def names_body(pod: dict[str, Any], nodes: list[str]) -> bytes:
                doc = {"Pod": pod, "Nodes": None, "NodeNames": nodes}
                return json.dumps(doc, separators=(",", ":")).encode()

            items = [realistic_node(i) for i in range(args.nodelist)]
            list_body = json.dumps(
                {"Pod": foreign, "Nodes": {"metadata": {}, "items": items}, "NodeNames": None},
                separators=(",", ":"),
            ).encode()
            series = [
                ("filter, 5,000 names, foreign pod", names_body(foreign, names), args.count,
                 "p99 <= 5 ms"),
                ("filter, 5,000 names, planned pod", names_body(planned, names), args.count,
                 "p99 <= 5 ms"),
                (f"filter, NodeList of {args.nodelist} Nodes "
                 f"({len(list_body) / 1e6:.1f} MB), foreign pod", list_body, args.nodelist_count,
                 "p99 <= 100 ms"),
            ]  # fmt: skip
            rows = []
            load_before = os.getloadavg()[0]
            for name, body, count, target in series:
                latencies(url, body, count=5, warmup=0, cap_s=args.cap_s)  # warm up
                cpu = cpu_seconds(proc.pid)
                values = latencies(url, body, count=count, warmup=0, cap_s=args.cap_s)
                rows.append(row(name, values, cpu_seconds(proc.pid) - cpu, target))
                print(rows[-1], flush=True)
            loads = []
            for size in args.load_names:
                load_body = names_body(foreign, names[:size])
                cpu = cpu_seconds(proc.pid)
                done, wall = throughput(
                    url,
                    load_body,
                    connections=args.connections,
                    per_connection=args.load_requests,
                    cap_s=args.cap_s,
                )
                cpu_ms = (cpu_seconds(proc.pid) - cpu) * 1000 / max(done, 1)
                loads.append(
                    f"| filter, {size} names, {args.connections} keep-alive connections "
                    f"| {done} | {wall:.2f} s | **{done / wall:,.0f} requests/s** | "
                    f"{cpu_ms:.2f} | 1,000/s |"
                )
                print(loads[-1], flush=True)
            abuse = abuse_tables(url, proc.pid, args.slow_clients)
            print("\n".join(abuse), flush=True)
        finally:
            proc.terminate()
            exit_code = proc.wait(timeout=60)

    info = machine()
    report = "\n".join([
        "# Scheduler extender benchmark",
        "",
        "Loopback HTTP against `placer extender --plan ... --cluster ...` in its own process "
        f"({args.nodes} nodes in subblocks of {NODES_PER_SUBBLOCK}, "
        f"{args.reserved_share:.0%} of them reserved by "
        f"{int(args.nodes // NODES_PER_SUBBLOCK * args.reserved_share)} placed JobSets). Latency "
        "is measured by the client over one keep-alive connection (request written to answer "
        "read), so it includes HTTP and JSON on both sides. The clients share the machine's "
        "cores with the server.",
        "",
        f"Command: `{command.strip()}` (from the repository root)",
        "",
        f"Machine: {info['cpu']}, nproc {info['nproc']} (usable {info['affinity']}), "
        f"Python {info['python']}, {info['system']}; load average (1, 5, 15 min) "
        f"{load_before:.2f} when the series started, {info['load']} at the end.",
        "",
        "Server CPU ms/request is the extender process's user+system time over the series "
        "divided by its requests: what each call costs, whatever else shares the machine.",
        "",
        "| series | requests | p50 ms | p99 ms | max ms | server CPU ms/request | target |",
        "|---|---|---|---|---|---|---|",
        *rows,
        "",
        "| throughput | requests | wall | rate | server CPU ms/request | target |",
        "|---|---|---|---|---|---|",
        *loads,
        "",
        *abuse,
        "",
        f"SIGTERM at the end: the extender drained and exited with code {exit_code}.",
        "",
    ])  # fmt: skip
    print(report)
    if args.out:
        args.out.write_text(report, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
