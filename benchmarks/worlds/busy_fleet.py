"""The scaling fleet as the reason and start benchmarks load it: `--nodes` hosts in TPU pools,
`--held` of the pools running, and the first `--shared` JobSets of the `--pending` queue taken
out of exclusive placement (their pods keep their shape), so their pods are judged node by node;
the next `--mixed` keep their exclusive workers and gain a coordinator without an exclusive key
(one pod of the workers' shape), so their workers are reserved domains and their coordinator is
judged node by node beside them.

One place for the arguments and the queue, shared by `benchmarks.reasons_bench` and
`benchmarks.shared_starts_bench`, so both measure the same world for the same flags.
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime

from benchmarks.scaling import HOSTS_PER_POOL
from benchmarks.worlds.scenarios import build_tpu_pool_fleet
from placer.model.cluster import ClusterSnapshot
from placer.model.workload import JobSetRequest

__all__ = ["NOW", "add_fleet_arguments", "busy_fleet"]

NOW = datetime(2026, 12, 1, 6, 0, tzinfo=UTC)
"""The benchmarks' clock: the scenario's running JobSets are timed against it."""


def add_fleet_arguments(
    parser: argparse.ArgumentParser, *, pending: int, shared: int, held: float
) -> None:
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--pending", type=int, default=pending)
    parser.add_argument("--shared", type=int, default=shared, help="JobSets without exclusive key")
    parser.add_argument("--held", type=float, default=held, help="share of pools running")
    parser.add_argument(
        "--mixed", type=int, default=0, help="JobSets given a coordinator without exclusive key"
    )
    parser.add_argument("--seed", type=int, default=1)


def busy_fleet(args: argparse.Namespace) -> tuple[ClusterSnapshot, list[JobSetRequest]]:
    """The snapshot and the queue the arguments of `add_fleet_arguments` name."""
    pools = max(3, round(args.nodes / HOSTS_PER_POOL))
    sc = build_tpu_pool_fleet(args.seed, pools, args.pending, held=args.held)
    mixed = args.shared + args.mixed
    queue = [
        _shared(js) if i < args.shared else _mixed(js) if i < mixed else js
        for i, js in enumerate(sc.requests)
    ]
    return sc.snapshot, queue


def _shared(js: JobSetRequest) -> JobSetRequest:
    rjobs = tuple(r.model_copy(update={"exclusive_key": None}) for r in js.replicated_jobs)
    return js.model_copy(update={"replicated_jobs": rjobs})


def _mixed(js: JobSetRequest) -> JobSetRequest:
    first = js.replicated_jobs[0]
    coordinator = first.model_copy(
        update={"name": "coordinator", "replicas": 1, "pods_per_job": 1, "exclusive_key": None}
    )
    return js.model_copy(update={"replicated_jobs": (*js.replicated_jobs, coordinator)})
