"""Cases from Kueue's `TestFindTopologyAssignments` (kubernetes-sigs/kueue,
pkg/cache/scheduler/tas_cache_test.go), restated as placer inputs.

Each case keeps Kueue's name, its nodes (block, rack, hostname labels; allocatable cpu, memory,
pods), its topology levels, the PodSet's topology request, one pod's requests and the pod count,
and Kueue's expected assignment (count per domain of Kueue's lowest level: hostname values, or
the tuple of level values when the hostname is not a level) or its verdict that nothing fits.
Only the facts are restated; nothing of Kueue's code is copied.

A Kueue PodSet of N pods becomes one replicated job: one child Job of N pods, or, with slices of
size s, N/s child Jobs of s pods each (Kueue's JobSet default: a slice is one child Job).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import TypedDict, Unpack

from placer.model.cluster import Node
from placer.model.scheduling import Taint

__all__ = [
    "BLOCK",
    "CASES",
    "GPU",
    "GROUP_CASES",
    "HOST",
    "RACK",
    "KueueCase",
    "KueueGroupCase",
    "hosts",
    "rack_hosts",
]

BLOCK = "cloud.com/topology-block"
RACK = "cloud.com/topology-rack"
HOST = "kubernetes.io/hostname"
THREE = (BLOCK, RACK, HOST)
TWO = (BLOCK, RACK)
ONE = (HOST,)
GI = 1024**3


class NodeState(TypedDict, total=False):
    """A case node's state besides its room: NotReady, cordoned, tainted."""

    ready: bool
    unschedulable: bool
    taints: tuple[Taint, ...]


class Topology(TypedDict, total=False):
    """A case's topology request, as `KueueCase` names its fields."""

    required: str
    preferred: str
    unconstrained: bool
    slice_level: str
    slice_size: int


def node(
    name: str,
    labels: dict[str, str],
    cpu: str,
    pods: int = 10,
    memory: int | None = None,
    **extra: Unpack[NodeState],
) -> Node:
    room = {"cpu": Decimal(cpu), "pods": Decimal(pods)}
    if memory is not None:
        room["memory"] = Decimal(memory)
    return Node(name=name, labels=labels, allocatable=room, free=room, **extra)


def tree(name: str, block: str, rack: str, host: str, cpu: str, pods: int = 10) -> Node:
    return node(name, {BLOCK: block, RACK: rack, HOST: host}, cpu, pods, memory=GI)


# b1: r1 {x3}, r2 {x5, x1, x6}; b2: r1 {x2}, r2 {x4 (cpu 2, 4Gi, 40 pods)}
DEFAULT_NODES = (
    tree("b1-r1-x3", "b1", "r1", "x3", "1"),
    tree("b1-r2-x5", "b1", "r2", "x5", "1"),
    tree("b1-r2-x1", "b1", "r2", "x1", "1"),
    tree("b1-r2-x6", "b1", "r2", "x6", "1"),
    tree("b2-r2-x2", "b2", "r1", "x2", "1"),
    node("b2-r2-x4", {BLOCK: "b2", RACK: "r2", HOST: "x4"}, "2", 40, memory=4 * GI),
)
# b1: r1 {x3 (cpu 4), x5, x1}; b2: r1 {x6 (cpu 2), x2}
SCATTERED_NODES = (
    tree("b1-r1-x3", "b1", "r1", "x3", "4"),
    tree("b1-r1-x5", "b1", "r1", "x5", "1"),
    tree("b1-r1-x1", "b1", "r1", "x1", "1"),
    tree("b2-r1-x6", "b2", "r1", "x6", "2"),
    tree("b2-r1-x2", "b2", "r1", "x2", "1"),
)
# two blocks of two racks of two one-cpu hosts
BINARY_TREES_NODES = tuple(
    tree(f"{b}-{r}-{x}", b, r, x, "1")
    for b, r, x in [
        ("b1", "r1", "x3"),
        ("b1", "r1", "x5"),
        ("b1", "r2", "x1"),
        ("b1", "r2", "x6"),
        ("b2", "r1", "x2"),
        ("b2", "r1", "x4"),
        ("b2", "r2", "x7"),
        ("b2", "r2", "x8"),
    ]
)


def hosts(*spec: tuple[str, str, str, str]) -> tuple[Node, ...]:
    """(block, rack, host, cpu) per node, 10 pods each, no memory."""
    return tuple(node(f"{b}-{r}-{x}", {BLOCK: b, RACK: r, HOST: x}, cpu) for b, r, x, cpu in spec)


def rack_hosts(block: str, rack: str, size: int) -> list[tuple[str, str, str, str]]:
    """`hosts`' spec of one rack of `size` hosts, each with room for one pod (cpu 1)."""
    return [(block, rack, f"{rack}x{i}", "1") for i in range(size)]


@dataclass(frozen=True)
class KueueCase:
    name: str
    nodes: tuple[Node, ...]
    levels: tuple[str, ...]
    count: int
    want: dict[object, int] | None
    """Kueue's assignment per lowest-level domain; None: Kueue admits nothing."""
    required: str | None = None
    preferred: str | None = None
    unconstrained: bool = False
    slice_level: str | None = None
    slice_size: int | None = None
    cpu_m: int = 1000
    memory: int | None = None
    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: tuple[dict[str, str], ...] = ()
    note: str = ""


ZONE_A = node("b1-r1-x3", {"zone": "zone-a", HOST: "x3"}, "1", memory=GI)
GPU_TAINT = Taint(key="example.com/gpu", value="present", effect="NoSchedule")

CASES: tuple[KueueCase, ...] = (
    KueueCase(
        "minimize the number of used racks before optimizing the number of nodes; BestFit",
        hosts(("b1", "r1", "x3", "2"), ("b1", "r2", "x5", "2"))
        + hosts(*[("b1", "r3", x, "1") for x in ("x1", "x6", "x2", "x4")]),
        THREE,
        4,
        {"x1": 1, "x2": 1, "x4": 1, "x6": 1},
        required=BLOCK,
    ),
    KueueCase(
        "choose the node that can accommodate all Pods",
        hosts(("b1", "r1", "x3", "2"), ("b1", "r1", "x5", "1"), ("b1", "r1", "x1", "1")),
        THREE,
        2,
        {"x3": 2},
        required=BLOCK,
    ),
    KueueCase(
        "unconstrained; 6 pods fit into hosts scattered across the whole datacenter even they "
        "could fit into single rack; BestFit",
        SCATTERED_NODES,
        THREE,
        6,
        {"x1": 1, "x3": 1, "x5": 1, "x2": 1, "x6": 2},
        unconstrained=True,
    ),
    KueueCase(
        "unconstrained; a single pod fits into each host; BestFit",
        DEFAULT_NODES,
        THREE,
        1,
        {"x3": 1},
        unconstrained=True,
    ),
    KueueCase(
        "block required; 4 pods fit into one host each; BestFit",
        BINARY_TREES_NODES,
        THREE,
        4,
        {"x3": 1, "x5": 1, "x1": 1, "x6": 1},
        required=BLOCK,
    ),
    KueueCase(
        "host required; single Pod fits in the host; BestFit",
        DEFAULT_NODES,
        THREE,
        1,
        {"x3": 1},
        required=HOST,
    ),
    KueueCase(
        "rack required; single Pod fits in a rack; BestFit",
        DEFAULT_NODES,
        TWO,
        1,
        {("b1", "r1"): 1},
        required=RACK,
    ),
    KueueCase(
        "rack required; multiple Pods fit in a rack; BestFit",
        DEFAULT_NODES,
        TWO,
        3,
        {("b1", "r2"): 3},
        required=RACK,
    ),
    KueueCase(
        "block preferred; Pods fit in 2 blocks; BestFit",
        (
            node("b1", {BLOCK: "b1"}, "2", 20),
            node("b2", {BLOCK: "b2"}, "1", 10),
            node("b3", {BLOCK: "b3"}, "4", 40),
        ),
        (BLOCK,),
        5,
        {("b2",): 1, ("b3",): 4},
        preferred=BLOCK,
    ),
    KueueCase(
        "rack required; multiple Pods fit in some racks; BestFit",
        DEFAULT_NODES,
        TWO,
        2,
        {("b2", "r2"): 2},
        required=RACK,
    ),
    KueueCase(
        "rack required; too many pods to fit in any rack; BestFit",
        DEFAULT_NODES,
        TWO,
        4,
        None,
        required=RACK,
    ),
    KueueCase(
        "block required; single Pod fits in a block and a single rack; BestFit",
        DEFAULT_NODES,
        TWO,
        1,
        {("b2", "r1"): 1},
        required=BLOCK,
    ),
    KueueCase(
        "block required; single Pod fits in a block spread across two racks; BestFit",
        DEFAULT_NODES,
        TWO,
        4,
        {("b1", "r1"): 1, ("b1", "r2"): 3},
        required=BLOCK,
    ),
    KueueCase(
        "block required; single Pod which cannot be split; BestFit",
        DEFAULT_NODES,
        TWO,
        1,
        None,
        required=BLOCK,
        cpu_m=4000,
    ),
    KueueCase(
        "block required; too many Pods to fit requested; BestFit",
        DEFAULT_NODES,
        TWO,
        5,
        None,
        required=BLOCK,
    ),
    KueueCase(
        "rack required; single Pod requiring memory; BestFit",
        DEFAULT_NODES,
        TWO,
        4,
        {("b1", "r1"): 4},
        required=RACK,
        cpu_m=0,
        memory=1024,
    ),
    KueueCase(
        "rack preferred; but only block can accommodate the workload; BestFit",
        DEFAULT_NODES,
        TWO,
        4,
        {("b1", "r1"): 1, ("b1", "r2"): 3},
        preferred=RACK,
    ),
    KueueCase(
        "rack preferred; but only multiple blocks can accommodate the workload; BestFit",
        DEFAULT_NODES,
        TWO,
        6,
        {("b1", "r1"): 1, ("b1", "r2"): 3, ("b2", "r2"): 2},
        preferred=RACK,
    ),
    KueueCase(
        "block preferred; but only multiple blocks can accommodate the workload; BestFit",
        DEFAULT_NODES,
        TWO,
        6,
        {("b1", "r1"): 1, ("b1", "r2"): 3, ("b2", "r2"): 2},
        preferred=BLOCK,
    ),
    KueueCase(
        "block preferred; but the workload cannot be accommodate in entire topology; BestFit",
        DEFAULT_NODES,
        TWO,
        10,
        None,
        preferred=BLOCK,
    ),
    KueueCase(
        "only nodes with matching labels are considered; no matching node; BestFit",
        (ZONE_A,),
        ONE,
        1,
        None,
        required=HOST,
        node_selector={"zone": "zone-b"},
        note="Kueue's flavor nodeLabels become the pod's nodeSelector (placer has no flavors)",
    ),
    KueueCase(
        "only nodes with matching labels are considered; matching node is found; BestFit",
        (ZONE_A,),
        ONE,
        1,
        {"x3": 1},
        required=HOST,
        node_selector={"zone": "zone-a"},
        note="Kueue's flavor nodeLabels become the pod's nodeSelector (placer has no flavors)",
    ),
    KueueCase(
        "no assignment as node is not ready; BestFit",
        (node("b1-r1-x3", {"zone": "zone-a", HOST: "x3"}, "1", memory=GI, ready=False),),
        ONE,
        1,
        None,
        required=HOST,
    ),
    KueueCase(
        "no assignment as node is unschedulable; BestFit",
        (node("b1-r1-x3", {"zone": "zone-a", HOST: "x3"}, "1", memory=GI, unschedulable=True),),
        ONE,
        1,
        None,
        required=HOST,
    ),
    KueueCase(
        "skip node which has untolerated taint; BestFit",
        (node("x3", {"zone": "zone-a", HOST: "x3"}, "1", memory=GI, taints=(GPU_TAINT,)),),
        ONE,
        1,
        None,
        required=HOST,
    ),
    KueueCase(
        "allow to schedule on node with tolerated taint; BestFit",
        (node("b1-r1-x3", {"zone": "zone-a", HOST: "x3"}, "1", memory=GI, taints=(GPU_TAINT,)),),
        ONE,
        1,
        {"x3": 1},
        required=HOST,
        tolerations=({"key": "example.com/gpu", "operator": "Equal", "value": "present"},),
    ),
    KueueCase(
        "block required for podset; host required for slices; BestFit",
        hosts(("b1", "r1", "x3", "3"), ("b1", "r1", "x5", "3"), ("b1", "r1", "x1", "3")),
        THREE,
        6,
        {"x1": 2, "x3": 2, "x5": 2},
        required=BLOCK,
        slice_level=HOST,
        slice_size=2,
    ),
    KueueCase(
        "block required for podset; host required for slices; prioritize more free slice "
        "capacity first and then tight fit; BestFit",
        hosts(
            ("b1", "r1", "x3", "6"),
            ("b1", "r1", "x5", "5"),
            ("b1", "r1", "x1", "4"),
            ("b1", "r1", "x6", "2"),
        ),
        THREE,
        12,
        {"x1": 4, "x3": 6, "x6": 2},
        required=BLOCK,
        slice_level=HOST,
        slice_size=2,
    ),
    KueueCase(
        "block required for podset; host required for slices; select domains with tight fit; "
        "BestFit",
        hosts(("b1", "r1", "x3", "3"), ("b1", "r1", "x5", "2"), ("b1", "r1", "x1", "2")),
        THREE,
        4,
        {"x1": 2, "x5": 2},
        required=BLOCK,
        slice_level=HOST,
        slice_size=2,
    ),
    KueueCase(
        "block required for podset; rack required for slices; BestFit",
        hosts(
            *[("b1", "r1", x, "1") for x in ("x3", "x5")],
            *[("b1", "r2", x, "1") for x in ("x1", "x6", "x2")],
            *[("b2", "r1", x, "1") for x in ("x4", "x7")],
        ),
        THREE,
        4,
        {"x3": 1, "x5": 1, "x1": 1, "x2": 1},
        required=BLOCK,
        slice_level=RACK,
        slice_size=2,
    ),
    KueueCase(
        "block preferred for podset; rack required for slices; BestFit",
        DEFAULT_NODES,
        THREE,
        4,
        {"x1": 1, "x5": 1, "x4": 2},
        preferred=BLOCK,
        slice_level=RACK,
        slice_size=2,
    ),
    KueueCase(
        "block required for podset; host required for slices; optimize last domain; BestFit",
        hosts(("b1", "r1", "x3", "4"), ("b1", "r1", "x5", "3"), ("b1", "r1", "x1", "2")),
        THREE,
        6,
        {"x1": 2, "x3": 4},
        required=BLOCK,
        slice_level=HOST,
        slice_size=2,
    ),
    KueueCase(
        "block preferred for podset; host required for slices; 2 blocks with unbalanced "
        "subdomains; BestFit",
        hosts(
            ("b1", "r1", "x3", "3"),
            ("b1", "r1", "x5", "3"),
            ("b1", "r1", "x1", "3"),
            ("b2", "r1", "x6", "6"),
        ),
        THREE,
        12,
        {"x1": 3, "x3": 3, "x6": 6},
        preferred=BLOCK,
        slice_level=HOST,
        slice_size=3,
    ),
    KueueCase(
        "block required for podset; rack required for slices; podset fits in a block, but "
        "slices do not fit in racks",
        hosts(("b1", "r1", "x3", "2"), ("b1", "r2", "x5", "2"), ("b1", "r3", "x1", "2")),
        THREE,
        6,
        None,
        required=BLOCK,
        slice_level=RACK,
        slice_size=3,
    ),
    KueueCase(
        "block required for podset; rack required for slices; only 1 out of 2 slices fit the "
        "topology",
        hosts(
            ("b1", "r1", "x3", "3"),
            ("b1", "r2", "x5", "1"),
            ("b1", "r3", "x1", "1"),
            ("b1", "r4", "x6", "1"),
        ),
        THREE,
        6,
        None,
        required=BLOCK,
        slice_level=RACK,
        slice_size=3,
    ),
    KueueCase(
        "block required for podset; rack required for slices; podset fits in both blocks, but "
        "slices fit in only one block",
        hosts(
            ("b1", "r1", "x3", "2"),
            ("b1", "r2", "x5", "2"),
            ("b1", "r3", "x1", "2"),
            ("b2", "r4", "x6", "3"),
            ("b2", "r5", "x2", "3"),
        ),
        THREE,
        6,
        {"x6": 3, "x2": 3},
        required=BLOCK,
        slice_level=RACK,
        slice_size=3,
    ),
    KueueCase(
        "no topology for podset; host required for slices; BestFit",
        hosts(("b1", "r1", "x3", "3"), ("b1", "r1", "x5", "3"), ("b1", "r1", "x1", "3")),
        THREE,
        6,
        {"x1": 2, "x3": 2, "x5": 2},
        slice_level=HOST,
        slice_size=2,
    ),
    KueueCase(
        "no topology for podset; host required for slices; multiple blocks; BestFit",
        SCATTERED_NODES,
        THREE,
        6,
        {"x3": 4, "x6": 2},
        slice_level=HOST,
        slice_size=2,
    ),
    KueueCase(
        "no topology for podset; rack required for slices; multiple blocks; BestFit",
        DEFAULT_NODES,
        THREE,
        4,
        {"x1": 1, "x5": 1, "x4": 2},
        slice_level=RACK,
        slice_size=2,
    ),
)


# -- podset groups (a leader of one pod and its workers, `kueue.x-k8s.io/podset-group-name`) --

GPU = "example.com/gpu"


def res_node(name: str, labels: dict[str, str], used_cpu: str = "0", **allocatable: str) -> Node:
    """A node with the given allocatable (`cpu`, `memory`, `gpu`, `pods`); `used_cpu` is taken by
    a running pod that is not the workload's (Kueue's non-TAS usage)."""
    keys = {"gpu": GPU}
    room = {keys.get(k, k): Decimal(v) for k, v in allocatable.items()}
    free = dict(room)
    free["cpu"] = room.get("cpu", Decimal(0)) - Decimal(used_cpu)
    return Node(name=name, labels=labels, allocatable=room, free=free)


@dataclass(frozen=True)
class KueueGroupCase:
    """A Kueue case with two PodSets of one group, as in Kueue's table: the one named `leader`
    (one pod) listed first, then `workers`; requests per pod as `{resource: quantity}`. Which one
    leads is Kueue's rule (the second, unless it has more pods), which placer follows."""

    name: str
    nodes: tuple[Node, ...]
    levels: tuple[str, ...]
    leader: dict[str, str]
    workers: dict[str, str]
    count: int
    """Workers' pods."""
    want_leader: object | None
    """Kueue's lowest-level domain for the `leader` PodSet; None: Kueue admits nothing."""
    want_workers: dict[object, int] | None
    required: str | None = None
    preferred: str | None = None
    note: str = ""


def _blocks(*spec: tuple[str, dict[str, str]]) -> tuple[Node, ...]:
    return tuple(res_node(b, {BLOCK: b}, **{"pods": "10", **room}) for b, room in spec)


def _hosts3(*spec: tuple[str, str, str, dict[str, str]]) -> tuple[Node, ...]:
    return tuple(
        res_node(f"{b}-{r}-{x}", {BLOCK: b, RACK: r, HOST: x}, **{"pods": "10", **room})
        for b, r, x, room in spec
    )


# small-used (2.8 cpu, 2.5 taken by a running pod), small-free (2.8) in rack "small"; large-free (6)
_SMALL_LARGE = (
    res_node(
        "small-used", {BLOCK: "b1", RACK: "small", HOST: "small-used"}, "2.5", cpu="2.8", pods="10"
    ),
    res_node("small-free", {BLOCK: "b1", RACK: "small", HOST: "small-free"}, cpu="2.8", pods="10"),
    res_node("large-free", {BLOCK: "b1", RACK: "large", HOST: "large-free"}, cpu="6", pods="10"),
)
_R1_HOSTS = tuple(
    res_node(h, {RACK: "r1", HOST: h}, cpu=cpu, pods="10")
    for h, cpu in (("h1", "2"), ("h2", "4"), ("h3", "3"))
)
_SLICES_DROPPED = (
    "Kueue's case also asks for slices of size 1 (podset-slice-required-topology) on both "
    "PodSets; its webhook refuses slices beside a group name, and slices of one pod constrain "
    "nothing, so they are left out here"
)

GROUP_CASES: tuple[KueueGroupCase, ...] = (
    KueueGroupCase(
        "find topology assignment for two podsets with the same group",
        _blocks(
            ("b1", {"cpu": "2", "gpu": "2", "memory": str(2 * GI)}),
            ("b2", {"cpu": "5", "gpu": "4"}),
            ("b3", {"cpu": "2", "gpu": "2"}),
        ),
        (BLOCK,),
        {"cpu": "1"},
        {"cpu": "1", GPU: "1"},
        4,
        ("b2",),
        {("b2",): 4},
        required=BLOCK,
    ),
    KueueGroupCase(
        "find topology assignment for grouped podsets preserves worker capacity when placing "
        "leader",
        _R1_HOSTS,
        (RACK, HOST),
        {"cpu": "1"},
        {"cpu": "2"},
        4,
        "h3",
        {"h1": 1, "h2": 2, "h3": 1},
        required=RACK,
    ),
    KueueGroupCase(
        "find topology assignment for preferred grouped podsets preserves capacity across domains",
        (
            res_node("h1", {HOST: "h1"}, cpu="8", pods="10"),
            res_node("h2", {HOST: "h2"}, cpu="3", pods="10"),
        ),
        (HOST,),
        {"cpu": "1"},
        {"cpu": "2"},
        5,
        "h2",
        {"h1": 4, "h2": 1},
        preferred=HOST,
    ),
    KueueGroupCase(
        "find topology assignment for grouped podsets preserves leader below the slice level",
        (
            res_node("leader-host", {RACK: "r1", HOST: "leader-host"}, cpu="1", pods="10"),
            res_node("worker-host", {RACK: "r1", HOST: "worker-host"}, gpu="1", pods="10"),
        ),
        (RACK, HOST),
        {"cpu": "1"},
        {GPU: "1"},
        1,
        "leader-host",
        {"worker-host": 1},
        required=RACK,
        note=_SLICES_DROPPED + "; with one pod each, Kueue (and placer) lead with the second "
        "PodSet, so the GPU PodSet is the leader and its one pod lands on worker-host",
    ),
    KueueGroupCase(
        "find topology assignment for two podsets with the same group with domains that can "
        "tightly fit leader and workers",
        _blocks(
            ("b1", {"cpu": "2", "gpu": "2"}),
            ("b2", {"cpu": "8", "gpu": "8"}),
            ("b3", {"cpu": "2", "gpu": "2"}),
        ),
        (BLOCK,),
        {"cpu": "1"},
        {"cpu": "1", GPU: "2"},
        4,
        ("b2",),
        {("b2",): 4},
        required=BLOCK,
    ),
    KueueGroupCase(
        "find topology assignment for grouped podsets skips domain where only workers fit "
        "without leader",
        _SMALL_LARGE,
        THREE,
        {"cpu": "2.5"},
        {"cpu": "2.5"},
        1,
        "large-free",
        {"large-free": 1},
        required=RACK,
    ),
    KueueGroupCase(
        "find topology assignment for grouped podsets skips domain where mixed-size workers only "
        "fit without leader",
        _SMALL_LARGE,
        THREE,
        {"cpu": "2.5"},
        {"cpu": "0.5"},
        2,
        "large-free",
        {"large-free": 2},
        required=RACK,
    ),
    KueueGroupCase(
        "find topology assignment for grouped podsets keeps tight domain when leader and workers "
        "fit together",
        _SMALL_LARGE,
        THREE,
        {"cpu": "1"},
        {"cpu": "1"},
        1,
        "small-free",
        {"small-free": 1},
        required=RACK,
    ),
    KueueGroupCase(
        "find topology assignment for two podsets with the same group - no fit",
        _blocks(("b1", {"cpu": "1", "gpu": "0"}), ("b2", {"cpu": "4", "gpu": "4"})),
        (BLOCK,),
        {"cpu": "1"},
        {"cpu": "1", GPU: "1"},
        4,
        None,
        None,
        required=BLOCK,
    ),
    KueueGroupCase(
        "find topology assignment for two podsets with the same group - optimizes domain for both "
        "leader and workers",
        _blocks(("b1", {"cpu": "11", "gpu": "8"}), ("b2", {"cpu": "4", "gpu": "4"})),
        (BLOCK,),
        {"cpu": "1"},
        {"cpu": "1", GPU: "1"},
        4,
        ("b1",),
        {("b1",): 4},
        required=BLOCK,
    ),
    KueueGroupCase(
        "find topology assignment for two podsets with the same group - leader does not fit "
        "anywhere",
        _blocks(("b1", {"cpu": "4", "gpu": "4"}), ("b2", {"cpu": "4", "gpu": "4"})),
        (BLOCK,),
        {"cpu": "10"},
        {"cpu": "1", GPU: "1"},
        4,
        None,
        None,
        required=BLOCK,
    ),
    KueueGroupCase(
        "find topology assignment for two podsets with the same group - multiple hosts",
        _hosts3(
            ("b1", "r1", "x3", {"cpu": "2", "gpu": "1"}),
            ("b1", "r1", "x5", {"cpu": "2", "gpu": "1"}),
            ("b1", "r1", "x1", {"cpu": "2", "gpu": "1"}),
            ("b2", "r4", "x6", {"cpu": "1", "gpu": "1"}),
            ("b2", "r5", "x2", {"cpu": "2", "gpu": "1"}),
            ("b2", "r6", "x4", {"cpu": "2", "gpu": "1"}),
        ),
        THREE,
        {"cpu": "2"},
        {"cpu": "1", GPU: "1"},
        2,
        "x1",
        {"x3": 1, "x5": 1},
        required=BLOCK,
    ),
    KueueGroupCase(
        "find topology assignment for two podsets with the same group requesting same resources "
        "and nodes in the same rack",
        _hosts3(
            *[
                (b, r, x, {"cpu": "1", "gpu": "1"})
                for b, r, x in (
                    ("b1", "r1", "x3"),
                    ("b1", "r1", "x5"),
                    ("b1", "r2", "x1"),
                    ("b1", "r2", "x6"),
                    ("b2", "r3", "x2"),
                    ("b2", "r3", "x4"),
                    ("b2", "r4", "x7"),
                    ("b2", "r4", "x8"),
                )
            ]
        ),
        THREE,
        {"cpu": "1", GPU: "1"},
        {"cpu": "1", GPU: "1"},
        2,
        "x3",
        {"x5": 1, "x1": 1},
        required=BLOCK,
    ),
    KueueGroupCase(
        "optimize the last domain for LWS using BestFit",
        (
            res_node(
                "dom1-node",
                {"cloud.com/topology-zone": "dom1", RACK: "rack1", HOST: "dom1-node"},
                cpu="10",
                memory=str(10 * GI),
                pods="10",
            ),
            res_node(
                "dom2-node",
                {"cloud.com/topology-zone": "dom2", RACK: "rack2", HOST: "dom2-node"},
                cpu="6",
                memory=str(10 * GI),
                pods="10",
            ),
        ),
        ("cloud.com/topology-zone", RACK, HOST),
        {"cpu": "1", "memory": str(GI)},
        {"cpu": "1", "memory": str(GI)},
        5,
        "dom2-node",
        {"dom2-node": 5},
        required="cloud.com/topology-zone",
        note=_SLICES_DROPPED,
    ),
)
"""Every case of Kueue's table with a PodSet group and no feature gate but these three, which a
JobSet cannot express because Kueue's webhook refuses a group name beside slice annotations or
beside unconstrained topology: "find topology assignment for sliced grouped podsets preserves
worker capacity when placing leader", "BestFit: podset group workers spread across hosts"
(slices of 2 pods) and "find topology assignment for unconstrained grouped podsets spreads leader
and worker across domains with TASProfileMixed". The cases behind feature gates (balanced
placement, elastic workloads, preferred node affinity) are not translated either."""
