"""Kueue `Topology` objects -> topology levels, an alternative to `--levels`.

A Kueue Topology (`kueue.x-k8s.io/v1beta1` or `v1beta2`) lists its levels coarse to fine in
`spec.levels[].nodeLabel`. The snapshot loader reads one from a `--cluster` file; the live loader
and the controller read the cluster's through `cluster_topology`, so both see the same levels.
A Topology without levels is an input error naming the file, the object and the field; so is a
level without a node label, and whatever else Kueue's schema refuses (more than 16 levels, a level
twice, `kubernetes.io/hostname` above the lowest level; tests/cluster/test_snapshot_rules.py).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from placer.model.errors import InputError
from placer.model.messages import echo
from placer.model.read.names import qualified_name_problem
from placer.model.topology import HOSTNAME

__all__ = [
    "KUEUE_GROUP",
    "TOPOLOGY_VERSIONS",
    "cluster_topology",
    "is_kueue_topology",
    "topology_levels",
]

log = logging.getLogger(__name__)

MAX_LEVELS = 16
"""Kueue's schema: a Topology has at most 16 levels."""

KUEUE_GROUP = "kueue.x-k8s.io"
TOPOLOGY_VERSIONS = ("v1beta2", "v1beta1")
"""API versions of Topology placer reads, newest first (the live loader asks in this order)."""


def is_kueue_topology(obj: Mapping[str, Any]) -> bool:
    """A Kueue Topology object (by kind and API group; any version placer reads)."""
    api = obj.get("apiVersion")
    return (
        obj.get("kind") == "Topology"
        and isinstance(api, str)
        and api in {f"{KUEUE_GROUP}/{v}" for v in TOPOLOGY_VERSIONS}
    )


def topology_levels(obj: Mapping[str, Any], *, source: str = "") -> tuple[str, ...]:
    """The node label keys of a Topology's levels, coarse to fine."""
    meta = obj.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    key = f"Topology/{echo(name, quote=False)}" if isinstance(name, str) and name else "Topology"
    spec = obj.get("spec")
    levels = spec.get("levels") if isinstance(spec, Mapping) else None
    if not isinstance(levels, list) or not levels or len(levels) > MAX_LEVELS:
        raise InputError(
            f"a Kueue Topology needs 1 to {MAX_LEVELS} levels"
            + (f", got {len(levels)}" if isinstance(levels, list) and levels else ""),
            source=source,
            obj=key,
            field="spec.levels",
            code="kueue",
        )
    keys: list[str] = []
    for i, level in enumerate(levels):
        label = level.get("nodeLabel") if isinstance(level, Mapping) else None
        if not isinstance(label, str) or not label:
            raise InputError(
                "each level needs a nodeLabel (a node label key)",
                source=source,
                obj=key,
                field=f"spec.levels[{i}].nodeLabel",
                code="kueue",
            )
        problem = qualified_name_problem(label)
        if problem:
            raise InputError(
                f"node label key {echo(label)} {problem}",
                source=source,
                obj=key,
                field=f"spec.levels[{i}].nodeLabel",
                code="kueue",
            )
        if label in keys:
            raise InputError(
                f"level {echo(label)} listed twice",
                source=source,
                obj=key,
                field=f"spec.levels[{i}].nodeLabel",
                code="kueue",
            )
        keys.append(label)
    if HOSTNAME in keys[:-1]:
        raise InputError(
            f"{HOSTNAME} may only be the lowest level",
            source=source,
            obj=key,
            field=f"spec.levels[{keys.index(HOSTNAME)}].nodeLabel",
            code="kueue",
        )
    return tuple(keys)


def cluster_topology(
    topologies: Iterable[Mapping[str, Any]], *, source: str = ""
) -> tuple[str, tuple[str, ...]]:
    """(`Topology/<name>`, levels) of a cluster's Kueue Topologies, when it has exactly one or
    several that agree (the first name); ("", ()) when it has none.

    Topologies that disagree cannot be told apart without the ResourceFlavor a queue uses, so then
    too ("", ()), with a warning (give --levels). A Topology without levels is an input error.
    """
    by_name = {
        f"Topology/{(t.get('metadata') or {}).get('name')}": topology_levels(t, source=source)
        for t in topologies
    }
    distinct = set(by_name.values())
    if len(distinct) == 1:
        return min(by_name), distinct.pop()
    if distinct:
        log.warning(
            "%s: Kueue Topologies %s differ; using none of them (give --levels)",
            source,
            ", ".join(sorted(n.removeprefix("Topology/") for n in by_name)),
        )
    return "", ()
