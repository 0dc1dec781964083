"""The node-pool catalogue `placer capacity --cheapest` buys from: pool types, prices, limits.

    kind: NodePoolCatalog
    levels: [cloud.google.com/gke-nodepool, kubernetes.io/hostname]   # optional
    priorityClasses: {high: 1000}                                      # optional
    poolTypes:
    - name: v5e-2x4            # the type's name in the report
      pricePerHour: 9.60       # price of one pool (all its hosts) per hour
      maxCount: 16             # how many pools of this type may be bought
      pool:                    # one pool, in the compact cluster description's `pools:` form
        name: v5e-2x4-{i}      #   must contain {i}: every pool bought gets its own name
        hosts: 2
        labels: {...}
        allocatable: {...}
        taints: [...]

`pool` is exactly a `pools:` entry of `kind: ClusterDescription` (see
`placer.model.snapshots.compact`) without `count` and `start`, which placer sets; so the chosen
pools expand into nodes with the same code, and the plan on them is made on an ordinary snapshot.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, StrictInt, StrictStr, ValidationError

from placer.model.cluster import Node
from placer.model.errors import InputError
from placer.model.read.limits import (
    MAX_CATALOG_NODES,
    MAX_POOL_HOSTS,
    MAX_PRICE_PER_HOUR,
    Int32,
    check_nesting_depth,
)
from placer.model.read.manifests import ClosedSchema, object_key, read_documents, validation_error
from placer.model.read.names import check_levels
from placer.model.snapshots.compact import expand_pools

__all__ = ["CATALOG_KIND", "Catalog", "PoolType", "load_catalog"]

CATALOG_KIND = "NodePoolCatalog"


class PoolType(ClosedSchema):
    name: StrictStr = Field(min_length=1)
    pricePerHour: float = Field(ge=0, le=MAX_PRICE_PER_HOUR, allow_inf_nan=False)
    maxCount: StrictInt = Field(ge=0, le=MAX_CATALOG_NODES)
    pool: dict[str, Any]

    @property
    def hosts(self) -> int:
        hosts = self.pool.get("hosts", 1)
        return hosts if isinstance(hosts, int) else 1


class Catalog(ClosedSchema):
    apiVersion: StrictStr = ""
    kind: Literal["NodePoolCatalog"]
    metadata: dict[str, Any] = Field(default_factory=dict)
    levels: list[StrictStr] = Field(default_factory=list)
    priorityClasses: dict[str, Int32] = Field(default_factory=dict)
    poolTypes: list[PoolType] = Field(min_length=1)
    source: str = Field(default="", exclude=True)
    """The file it came from (set by `load_catalog`), for error messages."""

    def expand(self, index: int, count: int, start: int = 0) -> list[Node]:
        """Nodes of `count` pools of pool type `index`, numbered from `start`."""
        spec = {**self.poolTypes[index].pool, "count": count, "start": start}
        return expand_pools([spec], source=self.source)


def _validate(catalog: Catalog) -> Catalog:
    check_levels(catalog.levels, source=catalog.source, field="levels")
    seen: set[str] = set()
    offered = 0
    for k, t in enumerate(catalog.poolTypes):
        field = f"poolTypes[{k}]"
        if t.name in seen:
            raise InputError(
                f"pool type {t.name!r} listed twice",
                source=catalog.source,
                field=f"{field}.name",
                code="duplicate",
            )
        seen.add(t.name)
        for fixed in ("count", "start"):
            if fixed in t.pool:
                raise InputError(
                    f"{fixed} is chosen by placer; leave it out",
                    source=catalog.source,
                    field=f"{field}.pool.{fixed}",
                    code="catalog",
                )
        name = t.pool.get("name")
        if not isinstance(name, str) or "{i" not in name:
            raise InputError(
                "must be a template with {i}, so that every pool bought gets its own name",
                source=catalog.source,
                field=f"{field}.pool.name",
                code="catalog",
            )
        hosts = t.pool.get("hosts", 1)
        if isinstance(hosts, int) and not isinstance(hosts, bool) and hosts > MAX_POOL_HOSTS:
            raise InputError(
                f"{hosts} hosts in one pool; at most {MAX_POOL_HOSTS}",
                source=catalog.source,
                field=f"{field}.pool.hosts",
                code="too-many-nodes",
            )
        offered += t.maxCount * t.hosts
        if offered > MAX_CATALOG_NODES:
            raise InputError(
                f"the catalog offers {offered} nodes so far (maxCount x hosts); "
                f"at most {MAX_CATALOG_NODES}",
                source=catalog.source,
                field=f"{field}.maxCount",
                code="too-many-nodes",
            )
        # expands two pools now, so template and quantity errors surface before solving
        catalog.expand(k, 2)
    return catalog


def load_catalog(paths: Sequence[str | Path]) -> Catalog:
    """The one NodePoolCatalog in the given files."""
    found: list[Catalog] = []
    for source, doc in read_documents(paths):
        if doc.get("kind") != CATALOG_KIND:
            raise InputError(
                f"expected kind {CATALOG_KIND}, got {doc.get('kind') or 'no kind'}",
                source=source,
                obj=object_key(doc),
                field="kind",
                code="catalog",
            )
        check_nesting_depth(doc, source, obj_name=CATALOG_KIND)
        try:
            catalog = Catalog.model_validate(doc).model_copy(update={"source": source})
        except ValidationError as e:
            raise validation_error(e, source=source, obj=CATALOG_KIND) from e
        found.append(_validate(catalog))
    if len(found) != 1:
        raise InputError(
            f"expected one {CATALOG_KIND}, found {len(found)}",
            source=", ".join(str(p) for p in paths),
            field="--catalog",
            code="catalog",
        )
    return found[0]
