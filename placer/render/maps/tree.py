"""Which block and which domain each host of the placement map belongs to.

Fleets are not uniform: one snapshot can hold TPU node pools (no blocks), H100 sub-blocks inside
blocks and NVL72 racks, and a kubectl snapshot does not state its levels at all. So the tree is
read from the labels, per host:

  domain  the smallest domain (fewest hosts) among the JobSets' exclusive keys the host carries
          (ties: the key given first); without any, the smallest of the topology levels; else
          one "no topology labels" domain
  block   the topology labels whose domains strictly contain the host's domain, coarse to fine
          (block keys: the stated levels, else the GCE block and sub-block labels); a host with
          none is grouped by machine kind and slice shape instead (`tpu-v6e-slice 4x4`)

Called by `fleet_map.build_fleet_map`; pure and deterministic (natural sort: pool-10 after pool-9).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence

from placer.model.cluster import ClusterSnapshot, Node
from placer.model.topology import HOSTNAME

__all__ = [
    "BLOCK_HINTS",
    "NO_TOPOLOGY",
    "BlockPath",
    "DomainId",
    "block_title",
    "natural",
    "place_hosts",
]

BlockPath = tuple[tuple[str, str], ...]
DomainId = tuple[str, str]
"""(label key, value) of a domain; ("", NO_TOPOLOGY) for hosts with none."""

NO_TOPOLOGY = "no topology labels"
BLOCK_HINTS = ("cloud.google.com/gce-topology-block", "cloud.google.com/gce-topology-subblock")
"""Block labels used when the snapshot states no levels (kubectl output does not)."""
KIND_LABELS = (
    "cloud.google.com/gke-tpu-accelerator",
    "cloud.google.com/gke-accelerator",
    "nvidia.com/gpu.product",
    "node.kubernetes.io/instance-type",
)
"""Node labels naming the machine kind, most telling first (for grouping hosts without blocks)."""
TPU_TOPOLOGY_LABEL = "cloud.google.com/gke-tpu-topology"


def natural(text: str) -> tuple[tuple[int, int | str], ...]:
    """Sort key reading digit runs as numbers, so pool-10 follows pool-9."""
    return tuple(
        (0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", text) if part
    )


def _short(key: str) -> str:
    return key.rsplit("/", 1)[-1]


def block_title(path: BlockPath) -> str:
    if not path:
        return "all hosts"
    return " / ".join(v if not k else f"{_short(k)} {v}" for k, v in path)


def _kind(node: Node) -> str:
    kind = next((node.labels[k] for k in KIND_LABELS if k in node.labels), "")
    shape = node.labels.get(TPU_TOPOLOGY_LABEL, "")
    return f"{kind} {shape}".strip()


def _unique(keys: Iterable[str]) -> list[str]:
    out: list[str] = []
    for k in keys:
        if k and k != HOSTNAME and k not in out:
            out.append(k)
    return out


def place_hosts(
    snapshot: ClusterSnapshot, levels: Sequence[str], exclusive_keys: Sequence[str]
) -> dict[tuple[BlockPath, DomainId], list[Node]]:
    """(block path, domain) -> its hosts, in natural order of block, domain and host name."""
    level_keys = _unique(levels)
    domain_keys = _unique(exclusive_keys)
    block_keys = level_keys or [k for k in BLOCK_HINTS if k not in domain_keys]
    size: Counter[tuple[str, str]] = Counter(
        (k, n.labels[k])
        for n in snapshot.nodes
        for k in {*domain_keys, *level_keys, *block_keys}
        if k in n.labels
    )

    def domain_of(node: Node) -> DomainId:
        for candidates in (domain_keys, level_keys):
            present = [(k, node.labels[k]) for k in candidates if k in node.labels]
            if present:
                return min(present, key=lambda kv: size[kv])
        return ("", NO_TOPOLOGY)

    members: dict[DomainId, list[Node]] = defaultdict(list)
    for node in sorted(snapshot.nodes, key=lambda n: natural(n.name)):
        members[domain_of(node)].append(node)

    placed: dict[tuple[BlockPath, DomainId], list[Node]] = {}
    for domain, nodes in members.items():
        placed[(_block_of(domain, nodes, block_keys, size), domain)] = nodes
    return dict(
        sorted(
            placed.items(),
            key=lambda item: (
                _group_rank(item[0][0]),
                [natural(f"{k}\0{v}") for k, v in item[0][0]],
                natural(f"{item[0][1][0]}\0{item[0][1][1]}"),
            ),
        )
    )


def _group_rank(path: BlockPath) -> int:
    """Topology blocks first, then groups by machine kind, then hosts in no block."""
    if not path:
        return 2
    return 1 if path[0][0] == "" else 0


def _block_of(
    domain: DomainId,
    nodes: Sequence[Node],
    block_keys: Sequence[str],
    size: Counter[tuple[str, str]],
) -> BlockPath:
    """The block labels all of the domain's hosts share, whose domains are strictly larger."""
    own = size[domain] if domain[0] else len(nodes)
    path: list[tuple[str, str]] = []
    for key in block_keys:
        values = {n.labels.get(key) for n in nodes}
        value = values.pop() if len(values) == 1 else None
        if value is not None and key != domain[0] and size[(key, value)] > own:
            path.append((key, value))
    path.sort(key=lambda kv: -size[kv])
    if not path and domain[0] and (kind := _kind(nodes[0])):
        return (("", kind),)
    return tuple(path)
