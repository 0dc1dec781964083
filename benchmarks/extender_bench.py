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
"""

from __future__ import annotations

import argparse
import json
import logging
import multiprocessing as mp
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.extender_abuse import memory_series, rss_mib, slow_client_probe
from benchmarks.reporting.measure import cpu_model
from placer.model.plan import (
    DomainRef,
    JobPlacement,
    JobSetOutcome,
    Plan,
    PodPlacement,
    SolverReport,
)

__all__ = ["main"]

log = logging.getLogger(__name__)

BLOCK = "cloud.google.com/gce-topology-block"
SUBBLOCK = "cloud.google.com/gce-topology-subblock"
NODES_PER_SUBBLOCK = 16
SUBBLOCKS_PER_BLOCK = 16
ROOT = Path(__file__).resolve().parents[1]


# --- inputs ------------------------------------------------------------------------------------


def node_name(i: int) -> str:
    return f"gke-tpu-v5p-pool-{i // NODES_PER_SUBBLOCK:03d}-{i:05d}"


def node_labels(i: int) -> dict[str, str]:
    name = node_name(i)
    sub = i // NODES_PER_SUBBLOCK
    return {
        "beta.kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/instance-type": "ct5p-hightpu-4t",
        "beta.kubernetes.io/os": "linux",
        BLOCK: f"b{sub // SUBBLOCKS_PER_BLOCK}",
        SUBBLOCK: f"sb{sub % SUBBLOCKS_PER_BLOCK}",
        "cloud.google.com/gce-topology-host": f"h{i // 4}",
        "cloud.google.com/gke-boot-disk": "pd-balanced",
        "cloud.google.com/gke-container-runtime": "containerd",
        "cloud.google.com/gke-nodepool": f"tpu-pool-{sub}",
        "cloud.google.com/gke-os-distribution": "cos",
        "cloud.google.com/gke-tpu-accelerator": "tpu-v5p-slice",
        "cloud.google.com/gke-tpu-topology": "4x4x4",
        "cloud.google.com/machine-family": "ct5p",
        "cloud.google.com/private-node": "false",
        "failure-domain.beta.kubernetes.io/region": "us-east5",
        "failure-domain.beta.kubernetes.io/zone": "us-east5-a",
        "iam.gke.io/gke-metadata-server-enabled": "true",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": "ct5p-hightpu-4t",
        "topology.kubernetes.io/region": "us-east5",
        "topology.kubernetes.io/zone": "us-east5-a",
    }


def realistic_node(i: int) -> dict[str, Any]:
    """A GKE TPU node as the API serves it (field order as Go's encoder writes it): labels,
    annotations with embedded JSON, a taint, conditions, addresses, node info and 20 images."""
    name = node_name(i)
    labels = node_labels(i)
    conditions = [
        "FrequentUnregisterNetDevice", "KernelDeadlock", "ReadonlyFilesystem",
        "CorruptDockerOverlay2", "FrequentKubeletRestart", "MemoryPressure", "DiskPressure",
        "PIDPressure", "Ready",
    ]  # fmt: skip
    return {
        "metadata": {
            "name": name,
            "uid": f"5f0c{i:08d}-aaaa-bbbb-cccc-0123456789ab",
            "resourceVersion": str(1_000_000 + i),
            "creationTimestamp": "2026-05-01T10:00:00Z",
            "labels": labels,
            "annotations": {
                "container.googleapis.com/instance_id": str(9_000_000_000_000 + i),
                "csi.volume.kubernetes.io/nodeid": json.dumps(
                    {"pd.csi.storage.gke.io": f"projects/p/zones/us-east5-a/instances/{name}"}
                ),
                "node.alpha.kubernetes.io/ttl": "0",
                "node.gke.io/last-applied-node-labels": ",".join(
                    f"{k}={v}" for k, v in list(labels.items())[:12]
                ),
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
        },
        "spec": {
            "podCIDR": f"10.{i // 256}.{i % 256}.0/24",
            "podCIDRs": [f"10.{i // 256}.{i % 256}.0/24"],
            "providerID": f"gce://p/us-east5-a/{name}",
            "taints": [{"key": "google.com/tpu", "value": "present", "effect": "NoSchedule"}],
        },
        "status": {
            "capacity": {"cpu": "208", "google.com/tpu": "4", "memory": "462202520Ki",
                         "ephemeral-storage": "98831908Ki", "pods": "110"},
            "allocatable": {"cpu": "207640m", "google.com/tpu": "4", "memory": "451487384Ki",
                            "ephemeral-storage": "47060071478", "pods": "110"},
            "conditions": [
                {
                    "type": t,
                    "status": "True" if t == "Ready" else "False",
                    "lastHeartbeatTime": "2026-06-01T10:00:00Z",
                    "lastTransitionTime": "2026-05-01T10:00:00Z",
                    "reason": f"{t}Reason",
                    "message": f"kubelet reports {t} as expected",
                }
                for t in conditions
            ],
            "addresses": [
                {"type": "InternalIP", "address": f"10.128.{i // 256}.{i % 256}"},
                {"type": "Hostname", "address": name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "machineID": f"{i:032x}", "systemUUID": f"{i:036d}", "bootID": f"{i:036d}",
                "kernelVersion": "6.1.100+", "osImage": "Container-Optimized OS from Google",
                "containerRuntimeVersion": "containerd://1.7.22",
                "kubeletVersion": "v1.33.2-gke.1000", "kubeProxyVersion": "v1.33.2-gke.1000",
                "operatingSystem": "linux", "architecture": "amd64",
            },
            "images": [
                {
                    "names": [
                        f"us-docker.pkg.dev/proj/repo/image-{k}@sha256:{k * 7919:064x}",
                        f"us-docker.pkg.dev/proj/repo/image-{k}:v1.{k}",
                    ],
                    "sizeBytes": 100_000_000 + k,
                }
                for k in range(20)
            ],
        },
    }  # fmt: skip


def jobset_pod(jobset: str, completion_index: int) -> dict[str, Any]:
    """A TPU training pod as JobSet creates it (labels, annotations, env, affinity...)."""
    job = f"{jobset}-workers-0"
    labels = {
        "batch.kubernetes.io/controller-uid": "c0ffee00-0000-4000-8000-000000000001",
        "batch.kubernetes.io/job-completion-index": str(completion_index),
        "batch.kubernetes.io/job-name": job,
        "controller-uid": "c0ffee00-0000-4000-8000-000000000001",
        "job-name": job,
        "jobset.sigs.k8s.io/global-replicas": "1",
        "jobset.sigs.k8s.io/group-name": "default",
        "jobset.sigs.k8s.io/job-global-index": "0",
        "jobset.sigs.k8s.io/job-index": "0",
        "jobset.sigs.k8s.io/job-key": "3f1e0c2d4b5a69788796a5b4c3d2e1f0a9b8c7d6",
        "jobset.sigs.k8s.io/jobset-name": jobset,
        "jobset.sigs.k8s.io/jobset-uid": "c0ffee00-0000-4000-8000-000000000002",
        "jobset.sigs.k8s.io/replicatedjob-name": "workers",
        "jobset.sigs.k8s.io/replicatedjob-replicas": "1",
        "jobset.sigs.k8s.io/restart-attempt": "0",
    }
    env = [{"name": f"ENV_{k}", "value": f"value-{k}" * 3} for k in range(20)]
    return {
        "metadata": {
            "name": f"{job}-{completion_index}-x7k2p",
            "generateName": f"{job}-{completion_index}-",
            "namespace": "bench",
            "uid": f"pod-uid-{completion_index:08d}",
            "labels": labels,
            "annotations": dict(labels),
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": job,
                                 "uid": "c0ffee00", "controller": True}],
        },
        "spec": {
            "subdomain": jobset,
            "hostname": f"{job}-{completion_index}",
            "restartPolicy": "Never",
            "nodeSelector": {"cloud.google.com/gke-tpu-accelerator": "tpu-v5p-slice",
                             "cloud.google.com/gke-tpu-topology": "4x4x4"},
            "tolerations": [
                {"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"},
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                 "effect": "NoExecute", "tolerationSeconds": 300},
            ],
            "containers": [
                {
                    "name": "trainer",
                    "image": "us-docker.pkg.dev/proj/repo/trainer:v1.2.3",
                    "command": ["python", "-m", "train", "--config", "/etc/train/config.yaml"],
                    "env": env,
                    "ports": [{"containerPort": 8471}, {"containerPort": 8080}],
                    "resources": {"requests": {"cpu": "200", "memory": "400Gi",
                                               "google.com/tpu": "4"},
                                  "limits": {"google.com/tpu": "4"}},
                    "volumeMounts": [{"name": "config", "mountPath": "/etc/train"}],
                }
            ],
            "volumes": [{"name": "config", "configMap": {"name": "train-config"}}],
            "schedulerName": "default-scheduler",
            "priority": 0,
        },
        "status": {"phase": "Pending", "qosClass": "Burstable"},
    }  # fmt: skip


def plain_pod() -> dict[str, Any]:
    """A pod the plan does not know, also asking for TPUs (so the scheduler would ask)."""
    pod = jobset_pod("unplanned", 0)
    pod["metadata"] = {"name": "notebook-7f9c", "namespace": "research", "uid": "nb-uid"}
    return pod


def bench_plan(nodes: int, reserved_share: float) -> tuple[Plan, list[str]]:
    """One placed JobSet per reserved subblock, its 16 pods pinned one per node."""
    subblocks = nodes // NODES_PER_SUBBLOCK
    outcomes = []
    for sub in range(int(subblocks * reserved_share)):
        block, sb = f"b{sub // SUBBLOCKS_PER_BLOCK}", f"sb{sub % SUBBLOCKS_PER_BLOCK}"
        name = f"js-{sub:04d}"
        domain = DomainRef(key=SUBBLOCK, value=sb, path=[(BLOCK, block), (SUBBLOCK, sb)])
        pods = [
            PodPlacement(index=k, node=node_name(sub * NODES_PER_SUBBLOCK + k))
            for k in range(NODES_PER_SUBBLOCK)
        ]
        job = JobPlacement(
            name=f"{name}-workers-0", replicated_job="workers", index=0, domain=domain, pods=pods
        )
        outcomes.append(
            JobSetOutcome(
                namespace="bench", name=name, status="placed", accelerators=64, jobs=[job]
            )
        )
    plan = Plan(solver=SolverReport(name="bench", status="HEURISTIC"), jobsets=outcomes)
    return plan, [node_name(i) for i in range(nodes)]


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


# --- report ------------------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux /proc), to report cost per request regardless
    of what else the machine runs."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def machine() -> dict[str, str]:
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
