"""The shared-pod timeline counts nodes by kind: hosts of running JobSets that end alike are one
kind however many JobSets hold them, and a queued JobSet's own hold still does not keep it out.

Why: with the owner in the kind, 2,250 running JobSets ending together on 10,000 hosts were
2,250 kinds, each counted again for every waiting JobSet without an exclusive key (a 90%-held
fleet's controller cycle took 8.2-9.9 s, 5.7 s without: benchmarks/RESULTS-controller.md,
round 51)."""

from __future__ import annotations

from placer.model.options import SolveOptions, TimePolicy
from placer.solver.time.release import ReleaseTimeline
from placer.solver.time.shared.timeline import NodeTimeline
from placer.solver.time.units import Units
from tests.solver.time.test_shared_starts import _running
from tests.solver.time.test_timeaware import NOW, H
from tests.strategies import cluster, jobset, rjob, running_pool

ALL = SolveOptions(workers=1, time=TimePolicy(now=NOW, reservations="all"))


def _timeline(ends_h: dict[str, float]) -> tuple[NodeTimeline, Units]:
    pools = [running_pool(f"pool-{i}", 2, key) for i, key in enumerate(ends_h)]
    snap = _running(cluster(*pools), ends_h)
    queue = [jobset("shared", rjob(exclusive=None))]
    units = Units(snap, queue, ALL, ReleaseTimeline.of_policy(snap, ALL.time, NOW))
    return NodeTimeline(units, {}, (), ()), units


def _kinds(timeline: NodeTimeline, units: Units) -> set[int]:
    return {timeline._kind(n, {})[0] for n in units.ctx.nodes}


def test_hosts_of_running_jobsets_ending_alike_are_one_kind() -> None:
    alike, units = _timeline({"ns/run-a": 2, "ns/run-b": 2, "ns/run-c": 2})
    assert len(_kinds(alike, units)) == 1
    apart, units = _timeline({"ns/run-a": 1, "ns/run-b": 2, "ns/run-c": 3})
    assert len(_kinds(apart, units)) == 3
    # whom a JobSet waits for is still named per host
    assert apart.waited_for(["pool-2-host-0"], 3 * H) == ("ns/run-c",)


def test_a_queued_jobsets_own_hold_does_not_keep_it_out() -> None:
    """A node held for the queued JobSet's own pods is room for it, and not for another."""
    timeline, units = _timeline({"ns/run-a": 2})
    timeline.hold("team-a/shared", ["pool-0-host-0"], 0.0, 5 * H)
    kind = timeline._kind("pool-0-host-0", {})
    pod = units.ctx.jobsets[0].replicated_jobs[0].pod
    assert timeline._room(kind, pod, 3 * H, 4 * H, "team-a/shared") > 0
    assert timeline._room(kind, pod, 3 * H, 4 * H, "team-a/other") == 0


def test_its_own_hold_does_not_keep_it_out_once_the_run_there_ends() -> None:
    """Where the sweep recounts a kind (the run on it ends at 2 h), a node held for the
    JobSet's own pods until 5 h is room for it: the room kept for JobSets with no use on a
    kind is not its own."""
    timeline, units = _timeline({"ns/run-a": 2})
    shared = units.ctx.jobsets[0]
    assert shared.key == "team-a/shared"
    timeline.hold(shared.key, ["pool-0-host-0"], 0.0, 5 * H)
    placed = timeline.place(shared, units.ctx, H)
    assert placed is not None
    assert placed[0] == 2 * H
