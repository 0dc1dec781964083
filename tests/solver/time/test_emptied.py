"""The emptied cluster the time-aware pass plans the future on, in one copy per node: held to the
composition it replaced (`whatif.without_jobsets` of every running JobSet, then the hosts back)."""

from __future__ import annotations

from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st

from placer.model.cluster import ClusterSnapshot, JobSetUsage, Node
from placer.model.scheduling import CONDITION_TAINTS, Taint
from placer.model.whatif import running_jobsets, without_jobsets
from placer.solver.time.units import emptied

PORT = (8471, "TCP")


def _composed(snapshot: ClusterSnapshot) -> ClusterSnapshot:
    """The former `emptied`: every running JobSet removed, then NotReady, cordoned and
    unrecorded nodes back, their condition taints gone."""
    empty, _, _ = without_jobsets(snapshot, running_jobsets(snapshot))
    unknown = {n.name for n in snapshot.nodes if any(k not in n.jobset_usage for k in n.jobsets)}
    nodes = tuple(
        n.model_copy(
            update={
                "free": dict(n.allocatable) if n.name in unknown else n.free,
                "ready": True,
                "unschedulable": False,
                "taints": tuple(t for t in n.taints if t.key not in CONDITION_TAINTS),
            }
        )
        if n.name in unknown or not n.usable or any(t.key in CONDITION_TAINTS for t in n.taints)
        else n
        for n in empty.nodes
    )
    return empty.model_copy(update={"nodes": nodes, "reservations": ()})


@st.composite
def nodes(draw: st.DrawFn, index: int) -> Node:
    allocatable = {"cpu": Decimal(32), "google.com/tpu": Decimal(4), "pods": Decimal(110)}
    jobsets = draw(st.sets(st.sampled_from(["a/x", "a/y", "b/z"]), max_size=2))
    usage = {
        j: JobSetUsage(
            requests={"google.com/tpu": Decimal(draw(st.integers(0, 4))), "pods": Decimal(1)},
            host_ports=draw(st.sampled_from([(), (PORT,)])),
        )
        for j in sorted(jobsets)
        if draw(st.booleans())  # some usages not recorded
    }
    taints = draw(
        st.lists(
            st.sampled_from(
                [
                    Taint(key="node.kubernetes.io/unreachable", effect="NoSchedule"),
                    Taint(key="node.kubernetes.io/unschedulable", effect="NoSchedule"),
                    Taint(key="google.com/tpu", value="present", effect="NoSchedule"),
                ]
            ),
            max_size=2,
            unique=True,
        )
    )
    return Node(
        name=f"n{index}",
        allocatable=allocatable,
        free={k: v - Decimal(draw(st.integers(0, 2))) for k, v in allocatable.items()},
        ready=draw(st.booleans()),
        unschedulable=draw(st.booleans()),
        taints=tuple(taints),
        used_host_ports=draw(st.sampled_from([(), (PORT,)])),
        jobsets=tuple(sorted(jobsets)),
        jobset_usage=usage,
    )


@given(st.integers(1, 6).flatmap(lambda k: st.tuples(*(nodes(i) for i in range(k)))))
def test_emptied_in_one_copy_is_the_composition_it_replaced(drawn: tuple[Node, ...]) -> None:
    snapshot = ClusterSnapshot(nodes=drawn)
    assert emptied(snapshot, untainted=True) == _composed(snapshot)
