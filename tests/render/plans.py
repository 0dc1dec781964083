"""Hand-built plans for the renderer tests: the shapes solvers return, without running one."""

from __future__ import annotations

from placer.model.plan import (
    DomainRef,
    JobPlacement,
    JobSetOutcome,
    Plan,
    PodPlacement,
    SolverReport,
)
from tests.strategies import BLOCK, NODEPOOL

__all__ = ["job", "sample_plan"]


def job(
    jobset: str,
    index: int,
    pool: str | None,
    *,
    block: str = "b0",
    hosts: int = 2,
    rjob: str = "workers",
) -> JobPlacement:
    """Child Job `<jobset>-<rjob>-<index>` on `pool` (or on cpu nodes when `pool` is None)."""
    if pool is None:
        domain = None
        pods = [PodPlacement(index=i, node=f"cpu-{i % 2}") for i in range(hosts)]
    else:
        domain = DomainRef(key=NODEPOOL, value=pool, path=[(BLOCK, block), (NODEPOOL, pool)])
        pods = [PodPlacement(index=i, node=f"{pool}-host-{i}") for i in range(hosts)]
    return JobPlacement(
        name=f"{jobset}-{rjob}-{index}", replicated_job=rjob, index=index, domain=domain, pods=pods
    )


def sample_plan() -> Plan:
    """team-a/multislice placed on 5 pools, team-b/big unschedulable, team-c/cpu without domains."""
    return Plan(
        solver=SolverReport(
            name="cpsat",
            status="FEASIBLE",
            objective=40,
            bound=48,
            gap=0.1667,
            wall_seconds=1.5,
            phases={"build": 0.25, "solve": 1.0},
        ),
        jobsets=[
            JobSetOutcome(
                namespace="team-a",
                name="multislice",
                status="placed",
                priority=10,
                accelerators=40,
                jobs=[job("multislice", i, f"pool{i}") for i in range(5)],
            ),
            JobSetOutcome(
                namespace="team-b",
                name="big",
                status="unschedulable",
                priority=0,
                reason="needs 8 domains of cloud.google.com/gke-nodepool; 5 available",
            ),
            JobSetOutcome(
                namespace="team-c",
                name="cpu",
                status="placed",
                jobs=[job("cpu", 0, None, rjob="driver")],
                accelerators=2,
            ),
        ],
    )
