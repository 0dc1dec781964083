"""controller_bench's Kueue mode on a small fleet, so the benchmark code cannot rot: no timing
assertions, only that one cycle turned placer's checks Ready with placements the checker accepts."""

from __future__ import annotations

from benchmarks.controller_bench import INSTANT_S, Fleet, build_cluster, measure
from placer.controller.act.memory_adapter import MemoryCluster
from placer.model.durations import parse_rfc3339
from placer.model.workload import JOBSET_NAME_LABEL


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


def test_jobsets_without_a_key_and_with_a_coordinator_are_planned_in_the_cycle() -> None:
    """`--shared` and `--mixed`: the JobSets are read as meant (no key; a coordinator without
    one beside keyed workers), and the cycle places some of each kind."""
    fleet = Fleet(nodes=200, pending=12, shared=3, mixed=3)
    cluster = build_cluster(fleet)
    jobsets = {js["metadata"]["name"]: js for js in cluster.objects("jobsets")}
    assert not jobsets["train-0000"]["metadata"]["annotations"]
    mixed = jobsets["train-0003"]
    assert not mixed["metadata"]["annotations"]
    workers, coordinator = mixed["spec"]["replicatedJobs"]
    assert workers["template"]["metadata"]["annotations"]
    assert "metadata" not in coordinator["template"]
    result = measure(fleet, "best-fit", 5.0, reservations="all", schedule="cpsat")
    assert result["failed_writes"] == 0
    placed = {k.split("/")[-1] for k in result["placed_keys"]}
    assert placed & {"train-0000", "train-0001", "train-0002"}
    assert placed & {"train-0003", "train-0004", "train-0005"}


def test_started_apart_dates_each_running_jobset_and_leaves_the_rest_of_the_fleet_alike() -> None:
    """`--started-apart H`: each running JobSet's pods share one start within the H hours before
    the planning instant; which pools run and the queue are those of the undated fleet."""
    undated = build_cluster(Fleet(nodes=400, pending=12, running_share=0.5))
    dated = build_cluster(Fleet(nodes=400, pending=12, running_share=0.5, started_apart_h=3))

    def starts(cluster: MemoryCluster) -> dict[str, set[object]]:
        found: dict[str, set[object]] = {}
        for pod in cluster.objects("pods"):
            if pod["metadata"]["namespace"] == "batch":
                owner = pod["metadata"]["labels"][JOBSET_NAME_LABEL]
                found.setdefault(owner, set()).add(pod["status"].get("startTime"))
        return found

    before, after = starts(undated), starts(dated)
    assert before.keys() == after.keys() and len(after) > 1
    assert all(s == {None} for s in before.values())
    assert all(len(s) == 1 for s in after.values())
    instants = [parse_rfc3339(str(s.pop())).timestamp() for s in after.values()]
    assert all(INSTANT_S - 3 * 3600 <= t <= INSTANT_S for t in instants)
    assert len(set(instants)) > 1
    assert [js["spec"] for js in undated.objects("jobsets")] == [
        js["spec"] for js in dated.objects("jobsets")
    ]
