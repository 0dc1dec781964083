"""The shared-pod timeline packs a JobSet's pods first-fit over only the nodes of kinds with
room (`NodeTimeline._fill_by_kind`), found where `_count` keeps each kind's nodes: it must take
the same nodes, in the same order, as first fit over every eligible node (`_fill`), after any
JobSets packed before it changed the kinds of some nodes, with pods of the same JobSet already
on a node, host ports, and off the domains of a JobSet with child Jobs of both kinds.

Why: at 10,000 nodes, where running JobSets end apart, first fit read most nodes at every place
(benchmarks/RESULTS-controller.md, round 53)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from placer.model.cluster import ClusterSnapshot
from placer.model.workload import JobSetRequest
from placer.solver.time.shared.timeline import NodeTimeline
from tests.solver.time.test_mixed_starts import _worlds as _mixed_worlds
from tests.solver.time.test_node_kinds import _timeline
from tests.solver.time.test_shared_starts import _running, _solve
from tests.solver.time.test_timeaware import NOW, H
from tests.strategies import cluster, jobset, pool, rjob, running_pool


@contextmanager
def _both_fills() -> Iterator[list[int]]:
    """Every `_fill_by_kind` answered also by `_fill` over the same nodes but those left out,
    and the two compared; yields the number of JobSets packed so."""
    packed = [0]
    by_kind = NodeTimeline._fill_by_kind

    def compared(self: NodeTimeline, *asked: Any) -> list[tuple[str, int]] | None:
        window, pod, nodes, off, need, taken, _ = asked
        found = by_kind(self, *asked)
        every = self._fill(window, pod, [n for n in nodes if n not in off], need, taken)
        assert found == every
        packed[0] += found is not None
        return found

    with mock.patch.object(NodeTimeline, "_fill_by_kind", compared):
        yield packed


@st.composite
def _queues(draw: st.DrawFn) -> tuple[ClusterSnapshot, list[JobSetRequest]]:
    """Pools held by running JobSets ending at drawn hours, or free, and two or three JobSets
    of one or two replicated jobs without an exclusive key (pods of both share nodes), some
    with a host port; ahead of them or not, a JobSet with child Jobs of both kinds whose
    coordinator may go on any pool (packed off its own domains, which are held whole)."""
    pools: list[object] = []
    ends: dict[str, float] = {}
    for i in range(draw(st.integers(1, 4))):
        hosts = draw(st.integers(1, 3))
        if draw(st.booleans()):
            ends[f"ns/run-{i}"] = float(draw(st.integers(1, 5)))
            pools.append(running_pool(f"pool-{i}", hosts, f"ns/run-{i}"))
        else:
            pools.append(pool(f"pool-{i}", hosts))
    queue = []
    if draw(st.booleans()):  # ahead: workers on a whole pool each, a coordinator anywhere
        mixed = jobset(
            "m",
            rjob("workers", replicas=draw(st.integers(1, 2)), pods_per_job=1, tpu=1),
            rjob("coord", pods_per_job=draw(st.integers(1, 3)), exclusive=None, tpu=2),
            order=-1,
        )
        update = {
            "expected_duration_s": draw(st.integers(1, 3)) * H,
            "duration_source": "annotation",
            "creation_timestamp": NOW - timedelta(minutes=20),
        }
        queue.append(mixed.model_copy(update=update))
    for k in range(draw(st.integers(2, 3))):
        members = [
            rjob(
                f"r{r}",
                replicas=draw(st.integers(1, 2)),
                pods_per_job=draw(st.integers(1, 3)),
                exclusive=None,
                tpu=draw(st.sampled_from([1, 2, 4])),
                host_ports=draw(st.sampled_from([(), ((8471, "TCP"),)])),
            )
            for r in range(draw(st.integers(1, 2)))
        ]
        update = {
            "expected_duration_s": draw(st.integers(1, 4)) * H,
            "duration_source": "annotation",
            "creation_timestamp": NOW - timedelta(minutes=10 - k),
        }
        queue.append(jobset(f"w{k}", *members, order=k).model_copy(update=update))
    return _running(cluster(*pools), ends), queue  # type: ignore[arg-type]


@settings(max_examples=80, deadline=None)
@given(_queues())
def test_pods_go_where_first_fit_over_every_node_puts_them(
    world: tuple[ClusterSnapshot, list[JobSetRequest]],
) -> None:
    snap, queue = world
    with _both_fills():
        _solve(snap, queue)


@settings(max_examples=60, deadline=None)
@given(_mixed_worlds())
def test_a_coordinator_goes_where_first_fit_off_its_domains_puts_it(
    world: tuple[ClusterSnapshot, JobSetRequest],
) -> None:
    snap, waiting = world
    with _both_fills():
        _solve(snap, [waiting])


def test_both_are_asked_in_a_queue_that_waits() -> None:
    """Not vacuous: a queue behind running JobSets packs its JobSets by kind."""
    snap = _running(
        cluster(running_pool("pool-0", 2, "ns/run-a"), running_pool("pool-1", 2, "ns/run-b")),
        {"ns/run-a": 1, "ns/run-b": 3},
    )
    queue = [
        jobset(
            f"w{k}", rjob(replicas=2, pods_per_job=1, exclusive=None, tpu=4), order=k
        ).model_copy(update={"expected_duration_s": 2 * H, "duration_source": "annotation"})
        for k in range(3)
    ]
    with _both_fills() as packed:
        _solve(snap, queue)
    assert packed[0] >= 3


def test_nodes_that_change_kind_out_of_order_are_packed_in_list_order() -> None:
    """Hosts held in reverse order become one kind in that order; where `_count` keeps that
    kind's nodes they are still in list order, so first fit takes the first host first."""
    timeline, units = _timeline({"ns/run-a": 1, "ns/run-b": 2})
    shared = units.ctx.jobsets[0]
    with _both_fills() as packed:
        assert timeline.place(shared, units.ctx, H) is not None  # counted, kinds kept
        hosts = sorted(units.ctx.nodes)
        timeline.hold("team-a/other", reversed(hosts), 0.0, 10 * H)
        placed = timeline.place(shared, units.ctx, H)
    assert placed is not None and placed[0] == 10 * H
    assert packed[0] == 2
