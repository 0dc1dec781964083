"""`Topology.find`: a domain named under other levels (another queue, round or plan) is found."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from placer.model.cluster import ClusterSnapshot
from placer.model.topology import HOSTNAME, Topology, default_levels, paths_agree
from tests.strategies import BLOCK, NODEPOOL, TPU_TOPOLOGY, cluster, clusters, node, pool

BLOCK_THEN_POOL = (BLOCK, NODEPOOL, HOSTNAME)
POOL_THEN_BLOCK = (NODEPOOL, BLOCK, HOSTNAME)


def _one_pool_blocks() -> Topology:
    """Blocks B0 and B1 of one pool each (p0, p1): as many blocks as pools, so which level is
    coarser is a tie and the queue's order decides it."""
    return Topology(cluster(pool("p0", 2, block="B0"), pool("p1", 2, block="B1")), BLOCK_THEN_POOL)


@pytest.mark.parametrize(
    ("key", "path", "expected"),
    [
        (NODEPOOL, ((NODEPOOL, "p1"),), (BLOCK, "B1", NODEPOOL, "p1")),
        (NODEPOOL, ((BLOCK, "B1"), (NODEPOOL, "p1")), (BLOCK, "B1", NODEPOOL, "p1")),
        (BLOCK, ((NODEPOOL, "p0"), (BLOCK, "B0")), (BLOCK, "B0")),
        (BLOCK, ((BLOCK, "B0"),), (BLOCK, "B0")),
    ],
)
def test_a_domain_named_under_either_level_order_is_found(
    key: str, path: tuple[tuple[str, str], ...], expected: tuple[str, ...]
) -> None:
    found = _one_pool_blocks().find(key, path)
    assert found is not None
    assert tuple(x for pair in found.path for x in pair) == expected


@pytest.mark.parametrize(
    ("key", "path"),
    [
        (NODEPOOL, ((BLOCK, "B0"), (NODEPOOL, "p1"))),  # p1 is not in B0
        (NODEPOOL, ((NODEPOOL, "p9"),)),  # no such pool
        (NODEPOOL, ((BLOCK, "B0"),)),  # the path names no pool
    ],
)
def test_a_path_no_domain_agrees_with_finds_none(
    key: str, path: tuple[tuple[str, str], ...]
) -> None:
    assert _one_pool_blocks().find(key, path) is None


def test_a_pool_name_used_in_two_blocks_is_found_only_with_its_block() -> None:
    """Pool `p` in B0 and in B1: two domains; a path naming only the pool could be either."""
    hosts = [node(f"{b}-host", labels={NODEPOOL: "p", BLOCK: b}) for b in ("B0", "B1")]
    topo = Topology(cluster(hosts), BLOCK_THEN_POOL)
    assert len(topo.domains(NODEPOOL)) == 2
    assert topo.find(NODEPOOL, ((NODEPOOL, "p"),)) is None
    found = topo.find(NODEPOOL, ((BLOCK, "B1"), (NODEPOOL, "p")))
    assert found is not None and found.id == "B1/p"


def test_under_pool_first_levels_a_block_named_alone_is_found() -> None:
    """The other tie order: the block's own path is `p0/B0`; a ledger wrote `B0`."""
    topo = Topology(_one_pool_blocks().snapshot, POOL_THEN_BLOCK)
    found = topo.find(BLOCK, ((BLOCK, "B0"),))
    assert found is not None and found.id == "p0/B0"


@settings(max_examples=60, deadline=None)
@given(snap=clusters(), keys=st.permutations([BLOCK, NODEPOOL, TPU_TOPOLOGY]))
def test_levels_do_not_depend_on_the_order_keys_come_in(
    snap: ClusterSnapshot, keys: list[str]
) -> None:
    """The queue's order gives the keys; the same keys name the same domains in any order."""
    snap = snap.model_copy(update={"levels": ()})
    assert default_levels(snap, keys) == default_levels(snap, sorted(keys))


@settings(max_examples=60, deadline=None)
@given(snap=clusters(), key=st.sampled_from([BLOCK, NODEPOOL]))
def test_a_domain_found_under_the_other_level_order_shares_its_nodes(
    snap: ClusterSnapshot, key: str
) -> None:
    """Each domain finds itself; written under the other order of block and pool, it finds a
    domain with nodes in common, or none (several could be meant, or none agrees)."""
    mine = Topology(snap, BLOCK_THEN_POOL)
    other = Topology(snap, POOL_THEN_BLOCK)
    for d in mine.domains(key):
        assert mine.find(key, d.path) == d
        found = other.find(key, d.path)
        assert found is None or set(found.nodes) & set(d.nodes)


def test_paths_agree_only_where_both_name_a_level() -> None:
    pool = (("block", "B0"), ("pool", "p0"))
    assert paths_agree(pool, (("pool", "p0"),))  # the other names no block: nothing to disagree
    assert paths_agree((("pool", "p0"),), pool)
    assert not paths_agree(pool, (("block", "B1"), ("pool", "p0")))
    assert not paths_agree((("pool", "p1"),), pool)
