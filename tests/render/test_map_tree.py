"""Which block and domain each host of the placement map belongs to, on a mixed fleet."""

from __future__ import annotations

from placer.model.cluster import ClusterSnapshot, Node
from placer.render.maps.tree import BLOCK_HINTS, NO_TOPOLOGY, block_title, natural, place_hosts
from tests.strategies import NODEPOOL, pool

BLOCK, SUBBLOCK = BLOCK_HINTS
CLIQUE = "nvidia.com/gpu.clique"


def _relabel(nodes: list[Node], **labels: str) -> list[Node]:
    keys = {"block": BLOCK, "subblock": SUBBLOCK, "clique": CLIQUE, "pool": NODEPOOL}
    extra = {keys[k]: v for k, v in labels.items()}
    return [n.model_copy(update={"labels": {**n.labels, **extra}}) for n in nodes]


def _mixed() -> ClusterSnapshot:
    """TPU pools (no blocks), H100 sub-blocks in a block, NVL racks whose sub-block is the rack."""
    nodes = [
        *pool("v5e-1", 2, topology="2x4"),
        *pool("v5e-0", 2, topology="2x4"),
        *_relabel(pool("h100-a", 2), block="b1", subblock="b1-s0", pool="h100"),
        *_relabel(pool("h100-b", 2), block="b1", subblock="b1-s1", pool="h100"),
        *_relabel(pool("gb-0", 3), block="b0", subblock="b0-s0", clique="c.0", pool="gb"),
        *_relabel(pool("gb-1", 3), block="b0", subblock="b0-s1", clique="c.1", pool="gb"),
    ]
    return ClusterSnapshot(nodes=tuple(nodes))


def _tree(snapshot: ClusterSnapshot, levels: tuple[str, ...], keys: list[str]) -> list[object]:
    placed = place_hosts(snapshot, levels, keys)
    return [
        (block_title(block), domain[1], len(nodes)) for (block, domain), nodes in placed.items()
    ]


def test_a_mixed_fleet_without_stated_levels_reads_its_tree_from_the_labels() -> None:
    tree = _tree(_mixed(), (), [NODEPOOL, CLIQUE, SUBBLOCK])
    assert tree == [
        ("gce-topology-block b0", "c.0", 3),  # clique and sub-block tie: the key given first
        ("gce-topology-block b0", "c.1", 3),
        ("gce-topology-block b1", "b1-s0", 2),
        ("gce-topology-block b1", "b1-s1", 2),
        ("2x4", "v5e-0", 2),
        ("2x4", "v5e-1", 2),
    ]


def test_stated_levels_are_the_only_block_keys() -> None:
    tree = _tree(_mixed(), (SUBBLOCK, CLIQUE), [CLIQUE])
    # a sub-block holding the same hosts as its clique is no block; hosts with no clique take
    # their finest level (the sub-block); hosts with neither share one domain
    assert tree == [
        ("2x4", "b1-s0", 2),
        ("2x4", "b1-s1", 2),
        ("2x4", "c.0", 3),
        ("2x4", "c.1", 3),
        ("all hosts", NO_TOPOLOGY, 4),
    ]


def test_hosts_with_no_topology_share_one_domain() -> None:
    bare = [
        n.model_copy(update={"labels": {"kubernetes.io/hostname": n.name}}) for n in pool("x", 3)
    ]
    placed = place_hosts(ClusterSnapshot(nodes=tuple(bare)), (), [NODEPOOL])
    assert [(block, domain) for block, domain in placed] == [((), ("", NO_TOPOLOGY))]


def test_natural_order_reads_numbers() -> None:
    names = ["pool-10", "pool-9", "pool-1", "pool-a"]
    assert sorted(names, key=natural) == ["pool-1", "pool-9", "pool-10", "pool-a"]
