"""controller_bench's Kueue mode on a small fleet, so the benchmark code cannot rot: no timing
assertions, only that one cycle turned placer's checks Ready with placements the checker accepts."""

from __future__ import annotations

from benchmarks.controller_bench import Fleet, build_cluster, measure


def test_kueue_mode_turns_checks_ready_in_the_first_cycle() -> None:
    fleet = Fleet(nodes=200, pending=12, kueue=True)
    cluster = build_cluster(fleet)
    assert all(js["spec"]["suspend"] for js in cluster.objects("jobsets"))
    assert not cluster.objects("pods") or all(
        p["metadata"]["namespace"] == "batch" for p in cluster.objects("pods")
    )
    result = measure(fleet, "best-fit", 5.0)
    assert result["placed"] > 0
    assert result["checks"].get("Ready") == result["placed"]
    assert sum(result["checks"].values()) == fleet.pending
    assert result["failed_writes"] == 0


def test_the_cpsat_schedule_plans_a_cycle() -> None:
    """`--schedule cpsat` (issue 21's cycle target): the cycle places what fits now and
    reserves for the rest, as the greedy pass does."""
    fleet = Fleet(nodes=200, pending=12)
    result = measure(fleet, "best-fit", 5.0, schedule="cpsat")
    assert result["placed"] > 0
    assert result["placed"] + result["unschedulable"] == result["targets"]
    assert result["failed_writes"] == 0
